// Package telemetry samples the GPUs an engine uses — power, graphics and
// memory clocks, temperature, utilisation, used memory and the limits that
// hold the clocks — from the vendors' own tools while a level runs:
// `amd-smi metric --json` (and `rocm-smi --json` where amd-smi is absent)
// on AMD, `nvidia-smi --query-gpu=… --format=csv -lms N` on NVIDIA, and the
// simulated engine's /debug/telemetry, which answers in amd-smi's format.
//
// The parsers read each tool's documented output (testdata/README.md says
// from which sources and versions the fixtures were written); a missing
// tool, a GPU missing from the output and unreadable lines are warnings,
// never failures: a level's figures stand without its telemetry.
//
// The sampler is a child process per phase of a level (the warm-up and
// the measured requests, kept apart), stopped with the phase; nvidia-smi
// streams its readings itself (-lms), amd-smi and rocm-smi are run once per
// period (amd-smi's --watch writes its JSON only when it ends). What it
// measured is a results.Telemetry, the level file's gpu_telemetry.
package telemetry
