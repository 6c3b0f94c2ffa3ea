// Package report writes a profiling run's readme.md and its SVG charts from
// the run directory alone: the level results (conc{N}.json, summary.csv),
// each level's trace analysis (levels/conc{N}/analysis.json), run.json and
// a copy of the model's config.json. It never reads a trace nor talks to an
// engine, so a copied run directory gives the same report.
//
// The readme opens with key observations generated from the numbers, then:
// the model and setup; throughput per concurrency with latency and
// throughput charts; the step-time reconciliation (client TPOT against the
// trace's decode step, split into GPU-busy from the layer table, gaps
// between kernels and prefill interference); the kernel inventory by
// category and provider; the per-layer time of each kernel position across
// levels, with the kernels that change between levels; each category's
// slope against batch size; the category share per decode step with a
// stacked chart; and the warnings.
//
// Positions are followed across levels by kernel name, then by short name
// (another instance of the same kernel), then by category (a kernel in the
// same role, e.g. a fused MoE kernel replacing two). Each position gets a
// trend word from its average time against the decode batch size x (the
// trace's, not the client's concurrency), with a least-squares line fit:
//
//   - flat: the times spread less than 10% of their mean, or 0.5 µs;
//   - step change at conc N: the position's kernel changes at level N and
//     its time moves by more than the flat spread there; or, over three
//     levels or more, the fit has R² < 0.9 and one jump between adjacent
//     levels makes at least 80% of the total movement;
//   - not linear: R² < 0.9 otherwise;
//   - grows with context: a growing kernel that reads the KV cache (paged
//     attention, attention reduce, KV cache writes), whose work is batch ×
//     context length;
//   - linear in batch: any other growing position;
//   - falls with batch: a negative slope;
//   - only at conc N: the kernel runs at one level.
//
// Key observations: the category with the largest share of the decode
// step and how its share moves (more than 2 points is a move); throughput
// and latency from the lowest to the highest level; where a token's time
// goes at the highest level and what limits it (prefill interference when
// prefill steps take 25% or more of a token's time, host overhead when
// gaps take 30% or more of the decode step, else the GPU's work and its
// largest category); kernels that switch or fuse; launch-bound positions
// (flat and at most 10 µs at every level); the fastest-growing position;
// and whether the reconciliation closes within 3%.
package report
