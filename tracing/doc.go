// Package tracing reads PyTorch profiler (Kineto) Chrome-JSON traces as a
// stream and turns them into the few things profile-model needs: GPU kernels
// (with exact integer-nanosecond times), runtime launches, graph replays,
// engine steps with their batch sizes, and profiler coverage. It only reads:
// package tracing/kineto writes traces.
//
// The pipeline: a scanner (scanner.go) yields the kept events of one trace (kernels,
// copies, launches, annotations, ProfilerStep#N) without ever holding the
// document in memory, skipping everything else on its category alone; Load
// and Read build a Trace from them (kernels sorted by start, graph launches
// with the kernels they replay), then segment steps (ParseStepLabel knows
// the ATOM, vLLM and SGLang labels), compute the decode batch size, and
// measure coverage. Trace.Summarize is what `profile-model inspect` prints.
// What cannot be right but can be read on (negative or far out-of-window
// times, a key given twice, numbers written as strings, data after the
// document) becomes a warning naming the event (Trace.Warnings); each
// kind once, with a count. Input that is not a trace fails with the byte
// offset (the errors of internal/jsonscan, which trim shares).
//
// Speed: gzip is inflated on a read-ahead goroutine (jsonscan.ReadAhead)
// while the scanner, a specialised byte scanner (faster than
// go-json-experiment's jsontext tokens on the same input), reads eight
// bytes at a time through the events it skips. Memory grows with the kernels kept, not the JSON size.
package tracing
