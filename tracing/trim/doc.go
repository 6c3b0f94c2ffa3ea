// Package trim cuts a huge Kineto (Chrome JSON) trace down to a few chosen
// steps, or a time window, and writes a small valid trace that Perfetto and
// chrome://tracing open and that the tracing package analyses exactly as it
// does the source's steps.
//
// It reads the trace once, streaming, with memory bounded whatever its size:
// a splitter of its own (split.go, event.go) hands out each event's raw bytes
// with the few fields the keep rules need, read by a fast path for the
// member order Kineto writes and a general JSON reader otherwise; the rules
// (trim.go) copy kept events byte for byte, hold the few that can only be
// decided at the end (in memory, then a temporary file), and write the
// top-level metadata as it was. Steps are numbered as tracing numbers them
// (steps.go).
package trim
