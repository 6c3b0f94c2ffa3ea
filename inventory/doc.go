// Package inventory names and categorises GPU kernels and breaks engine steps
// into per-layer kernel tables. It reads what package tracing found and owns
// kernel naming (demangling, short names), the category rule table (embedded
// data, overridable), the per-layer tables (the hand-run trace-layer script's compatible mode
// and the robust mode that finds the repeating layer itself) and their CSV
// formats: compatible layer table, kernel inventory, category totals.
package inventory
