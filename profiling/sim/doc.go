// Package sim is a simulated ATOM engine: an HTTP server that answers like
// ATOM's OpenAI server (completions and chat, streamed or not, health,
// /start_profile and /stop_profile) without a GPU. One goroutine schedules
// requests with continuous batching, prices each step with a kernel model
// and, while profiling, writes the steps it ran as an ATOM-style Kineto
// trace; Server, Config and CountTokens document the HTTP surface, the
// scheduling and faults, and how prompts are counted.
package sim
