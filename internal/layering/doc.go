// Package layering holds the test that keeps the project's packages in
// their layers, bottom to top: internal, tracing, inventory, profiling,
// cmd. A package may import its own layer and those below, never one
// above (docs/architecture.md draws the imports; scripts/imports.sh
// regenerates the drawing).
package layering
