// Package kernelmodel is a kernel-cost model of an engine step: given a
// decode or prefill step's batch size, tokens and context, it returns the
// GPU kernels the step runs, in order, with drawn durations and launch gaps.
// The built-in model (Default) is ATOM serving MiniMax-M2.5 on one MI355X,
// derived from measured per-layer tables; FromLayerCSV builds one from such
// tables. The simulated engine runs on it and the trace generator writes
// from it.
package kernelmodel
