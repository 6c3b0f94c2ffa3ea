// Package bench is the benchmark client of profile-model: a streaming
// OpenAI-compatible client (completions and chat completions over SSE), the
// random workload, closed-loop and rate-driven load, and the per-request and
// aggregated metrics with the names and formulas of vLLM's
// benchmark_serving.py.
//
// It also owns the concurrency sweep: one level per concurrency, optionally
// wrapped in /start_profile and /stop_profile with the trace export waited
// for and excluded from the benchmark duration, and the outputs of a run
// (per-level result JSON, summary CSV, Go benchmark-format lines).
//
// # Conventions
//
// A frame carries tokens when its choice has text (content, reasoning_content
// or reasoning: a thinking model's reasoning is output too), or has empty
// text without a finish reason or role: a token whose text the
// detokenizer held back. The closing empty-text frame with a finish
// reason, a chat role frame and an older ATOM's empty opening delta carry
// none. A frame may carry several tokens (merged frames, speculative
// decoding): the usage total is shared among the frames, by the model's
// tokenizer count of each frame's text when there is one, else evenly.
// TTFT runs from sending the request to the first token of either kind;
// ITL is every gap between consecutive tokens (a frame of k tokens that
// came g after the one before gives k gaps of g/k), pooled over requests;
// E2EL runs from sending to the end of the stream;
// TPOT is (E2EL − TTFT)/(output_tokens − 1). Output and input token counts
// come from the usage frame; when a server sends none, the counted token
// events and the requested prompt length are used and the result says so.
// Lengths are drawn uniformly in [⌊L·r⌋, L] for range ratio r.
package bench
