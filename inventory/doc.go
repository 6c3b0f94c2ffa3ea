// Package inventory names and categorises GPU kernels and breaks engine steps
// into per-layer kernel tables. It reads what package tracing found and owns
// kernel naming (demangling, short names), the category rule table (embedded
// data, overridable), the per-layer tables (the compatible mode and the
// robust mode that finds the repeating layer itself) and their CSV
// formats: compatible layer table, kernel inventory, category totals.
//
// The compatible mode reproduces, number for number, the compat script:
// the Python trace-layer script of the hand-run workflow this tool
// replaces (start the server with the torch profiler, run a vLLM-style
// benchmark client with --profile, run the script on each trace). It is
// not in this repository; docs/analysis.md, "Compatible mode", describes
// its rules (anchor kernel, layer length, short names, CSV convention),
// and the reference corpus (internal/corpus) holds tables it wrote, which
// the tests compare against.
package inventory
