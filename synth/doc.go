// Package synth owns the project's kernel model of an ATOM MoE decode layer
// (MiniMax-M2.5 on MI355X, with batch-size and context-length scaling), the
// Recorder that writes executed engine steps as an ATOM-style Kineto trace,
// and the generator behind `profile-model synth` with its truth files.
//
// The pipeline: a Model turns a step (batch size, context, tokens) into the
// kernels it runs (KernelRun, durations in ns); a Recorder collects steps and
// writes them in ATOM's file layout with tracing.Writer; Generate drives both
// to produce a trace and the Truth of what it wrote.
package synth
