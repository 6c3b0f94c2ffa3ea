// Package results defines every file a profiling run writes and reads back:
// the level result (conc{N}.json, with vLLM's benchmark_serving keys), the
// sweep summary (summary.csv), the benchmark file (bench.txt, Go benchmark
// format for benchstat) and the layout of a run directory, including the
// conc{bs}_ names of a trace's analysis files. Each file type has Write and
// Read; the report, diff and the test harness rebuild everything from these.
package results
