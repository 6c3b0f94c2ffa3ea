// Package tracing reads PyTorch profiler (Kineto) Chrome-JSON traces as a
// stream and turns them into the few things profile-model needs: GPU kernels
// (with exact integer-nanosecond times), runtime launches, graph replays,
// engine steps with their batch sizes, and profiler coverage. It also writes
// Kineto traces (Writer), for the simulated engine and for test fixtures.
//
// The pipeline: Scanner yields the kept events of one trace without ever
// holding the document in memory; Load builds a Trace from them (kernels
// sorted by start, graph launches, annotations), then segments steps and
// measures coverage.
package tracing
