// Package jsonscan is the byte-level reading shared by the trace reader (tracing) and trim: cancellable opening, a read-ahead reader, a lexer over buffered bytes, and the errors both report.
package jsonscan
