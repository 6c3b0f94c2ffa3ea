// Package inventory names and categorises GPU kernels and breaks engine steps
// into per-layer kernel tables. It reads what package tracing found and owns
// the CSV formats (compatible layer table, kernel inventory, categories), the
// category rule table (embedded data, overridable) and golden comparisons.
package inventory
