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
// A token is a streamed event carrying a choice with non-empty text: the
// extra empty-text finish_reason frame that ATOM sends is not a token (vLLM's
// client counts it as an inter-token gap). TTFT runs from sending the
// request to the first token; ITL is every gap between consecutive tokens,
// pooled over requests; E2EL runs from sending to the end of the stream;
// TPOT is (E2EL − TTFT)/(output_tokens − 1). Output and input token counts
// come from the usage frame; when a server sends none, the counted token
// events and the requested prompt length are used and the result says so.
// Lengths are drawn uniformly in [⌊L·r⌋, L] for range ratio r.
package bench
