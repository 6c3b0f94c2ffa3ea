// Package diag holds the warnings that travel with every result of the
// project: a stable machine-readable code and a message for people. Callers
// match warnings by code, never by the message text, which may be reworded.
package diag

// Code names a kind of warning. Codes are stable: scripts and the report
// match on them.
type Code string

// The warning codes. Each is documented in docs/analysis.md.
const (
	// Coverage: GPU kernels cover only part of the profiled window (the
	// profiler buffer dropped events).
	Coverage Code = "coverage"
	// Truncated: the trace was cut (a killed export); what was read before
	// the cut was analysed.
	Truncated Code = "truncated"
	// Trailer: the JSON document is complete but the file is damaged after
	// it (a missing gzip checksum, bytes after the document).
	Trailer Code = "trailer"
	// ImpossibleValue: a time in the trace cannot be right (a negative
	// duration or timestamp, a timestamp far outside the profile window, a
	// kernel longer than the trace); the message names the event.
	ImpossibleValue Code = "impossible_value"
	// DuplicateKey: an event gives a key twice; the message says which
	// value was used.
	DuplicateKey Code = "duplicate_key"
	// QuotedNumber: a number the reader uses is written as a string; it
	// was read as a number.
	QuotedNumber Code = "quoted_number"
	// TrailingData: data follows the JSON document (or a second gzip
	// member does); it was ignored.
	TrailingData Code = "trailing_data"
	// NoKernels: the trace holds no GPU kernels.
	NoKernels Code = "no_kernels"
	// BSMismatch: the decode batch size in the trace differs from the
	// requested client concurrency.
	BSMismatch Code = "bs_mismatch"
	// NoSteps: no steps of the wanted kind were found.
	NoSteps Code = "no_steps"
	// NoLayers: no repeating layer was found in the steps.
	NoLayers Code = "no_layers"
	// IrregularLayers: the layer count differs between steps, some steps
	// have no repeating layer, or layers differ from each other.
	IrregularLayers Code = "irregular_layers"
	// CompatAnchor: the compatible-mode table could not be made (its
	// anchor kernel is not in the trace); the other tables were.
	CompatAnchor Code = "compat_anchor"
	// CompatAmbiguous: the compatible-mode anchor matches more than one
	// kernel per layer, or consecutive kernels (one-kernel layers).
	CompatAmbiguous Code = "compat_ambiguous"
	// LayerCount: the layer count found differs from the model config.
	LayerCount Code = "layer_count"
	// LayerKinds: the kernels group the layers into kinds other than the
	// model config's layer kinds.
	LayerKinds Code = "layer_kinds"
	// LayerCoverage: the layer table covers under half of its steps' GPU
	// time: what repeats is not the model's layers.
	LayerCoverage Code = "layer_coverage"
	// NotLLM: the trace's layers are not a language model's (no attention,
	// or convolutions and group norms in them, as in a diffusion model).
	NotLLM Code = "not_llm"
	// Usage: the server gave no usage figures for some requests; lengths
	// were counted or assumed instead.
	Usage Code = "usage"
	// Trace: the level's trace files could not be found or read.
	Trace Code = "trace"
	// Failures: some requests of a level failed.
	Failures Code = "failures"
	// CaptureTrace: the trace was recorded while graphs were captured: the
	// launches were recorded, not run; no step or layer table applies.
	CaptureTrace Code = "capture_trace"
	// GPUOnly: the trace has kernels but no CPU side: no steps can be told.
	GPUOnly Code = "gpu_only"
	// CaptureMismatch: the capture trace beside an execution trace does
	// not hold the kernels of its layers in the same order: some positions
	// were left without a module path and shapes.
	CaptureMismatch Code = "capture_mismatch"
	// CaptureUnchecked: the capture trace's launches name no kernels (CUDA
	// runtime events do not), so positions were named by their order in
	// each layer's module scope, not checked kernel by kernel.
	CaptureUnchecked Code = "capture_unchecked"
	// ServerMetrics: the server's /metrics could not be read around a
	// level; its result has no server metrics (or none before or after).
	ServerMetrics Code = "server_metrics"
	// Deadline: a level's deadline passed; its running requests were
	// cancelled.
	Deadline Code = "deadline"
	// UsageImplausible: the server's usage figures contradict what was
	// streamed; the streamed count was used instead.
	UsageImplausible Code = "usage_implausible"
	// ClientLag: the benchmark client sent requests late (it could not
	// keep up), so the server saw less load than asked for.
	ClientLag Code = "client_lag"
	// Telemetry: the GPUs' power, clocks and memory could not be sampled
	// over a level, or only in part (a tool missing, a GPU missing from its
	// output, unreadable lines).
	Telemetry Code = "telemetry"
	// ClientBound: the benchmark client read its streams slower than the
	// server wrote them: its latencies measure the client.
	ClientBound Code = "client_bound"
)

// Warning is one thing a user should know about a result.
type Warning struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// New returns a warning.
func New(code Code, msg string) Warning { return Warning{Code: code, Message: msg} }

// String is the message, prefixed by nothing: what a person reads.
func (w Warning) String() string { return w.Message }

// Has reports whether ws holds a warning with the code.
func Has(ws []Warning, code Code) bool {
	for _, w := range ws {
		if w.Code == code {
			return true
		}
	}
	return false
}

// Messages returns the messages of ws, in order.
func Messages(ws []Warning) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Message
	}
	return out
}
