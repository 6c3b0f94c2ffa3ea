// Package kernelmodel is a kernel-cost model of an engine step: given a
// decode or prefill step's batch size, tokens and context, it returns the
// GPU kernels the step runs, in order, with drawn durations and launch gaps.
// Default models ATOM serving MiniMax-M2.5 on one MI355X, fitted to measured
// per-layer tables (the embedded data/ file), and FromLayerCSV builds a
// model from such tables. The simulated engine runs on it and the trace
// generator writes from it.
package kernelmodel
