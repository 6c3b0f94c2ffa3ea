// Package sim is the simulated engine: an HTTP server that behaves like
// ATOM's OpenAI server (endpoints, SSE frames, error shapes, /start_profile
// and /stop_profile) without a GPU. One engine goroutine schedules requests
// with continuous batching; each step lasts the sum of its kernels' durations
// from a kernel model, and the steps that run while profiling are written as
// an ATOM-style Kineto trace.
//
// # HTTP surface
//
// GET /health ({"status":"ok"}; 503 until ready), GET /v1/models,
// POST /v1/completions and /v1/chat/completions (streamed or not), POST
// /start_profile and /stop_profile. Errors are 400 {"error":{"message",
// "type","code"}} for a request naming another model, a non-string prompt or
// bad fields. A streamed completion sends one data: frame per engine step
// that produced a token (the last one carries finish_reason "length" or
// "stop"), then ATOM's extra frame with empty text and finish_reason "stop",
// then a usage frame without choices, then data: [DONE]; a chat stream starts
// with an empty-delta frame. Frames use Python's json.dumps spacing, as
// ATOM's do. /stop_profile waits for the export and lists the trace
// directories in "traces" (AsyncStop: it answers at once, as older releases
// do). The profiler runs on the engine goroutine, as ATOM's utility commands
// do: while a trace is exported no step runs.
//
// # Scheduling
//
// Like ATOM (a nano-vllm descendant), a step is either a prefill or a decode.
// When requests are waiting and fewer than MaxNumSeqs are running, the next
// step prefills waiting requests in arrival order, as many as fit in
// MaxNumBatchedTokens prompt tokens (at least one) and in MaxNumSeqs; a
// prefill step also samples each prefilled request's first output token.
// Otherwise every running request decodes one token. A step's GPU time (the
// sum of its kernels) is recorded at full scale in the trace and slept for
// time/TimeScale in wall time; tokens are streamed when their step completes.
//
// # Stand-in tokenizer
//
// Prompts are counted without a real tokenizer, deterministically: a token is
// a run of up to 8 bytes of a whitespace-separated word, so a word of 1–8
// bytes is one token and a 20-byte word is three (ceil(len/8)). Whitespace is
// ASCII space, tab, CR and LF. An empty prompt counts as one token. A chat
// request counts each message as "ROLE CONTENT" (the role is one more word).
// A client hits a prompt length of N tokens by sending N short words, or
// calibrates from usage.prompt_tokens. With Config.Tokenizer (serve-sim
// --tokenizer tokenizer.json) prompts are counted by that tokenizer instead,
// special tokens included, and a chat request is rendered with a ChatML
// template ("<|im_start|>ROLE\nCONTENT<|im_end|>\n" per message, then
// "<|im_start|>assistant\n") before it is counted. Output tokens are short words from a
// fixed vocabulary, each with a leading space, so each delta re-counts as one
// token. Without ignore_eos a request ends at a simulated end-of-sequence
// after L tokens, L = 16 + FNV-1a(prompt) mod 241; with it, after exactly
// max_tokens (default 256, like ATOM).
//
// # Faults
//
// CrashAfterRequests N: exactly N requests complete; once their replies
// have left, the process exits with status 3 (ExitCrash), cutting every other
// open stream (a request that finishes meanwhile never gets its last frames).
// In-process, Config.Exit is called instead and Serve returns ErrCrashed. StreamErrorRate P: a streamed request fails with
// probability P (decided per request from Seed): after half of its tokens it
// gets an in-stream {"error":{...}} frame with HTTP 200, then data: [DONE].
// ReadyDelay / NeverReady: /health answers 503 until ready (every other
// endpoint too). NoTraceOnStop: /stop_profile succeeds but writes no trace.
// GPUEventWindow S: GPU events older than S (trace time) before the stop are
// dropped, as a full profiler buffer does. ExportDelay D: the export holds
// the uncompressed .json for D (wall time) before it is gzipped.
package sim
