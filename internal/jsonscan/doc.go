// Package jsonscan is the byte-level JSON reading shared by the trace reader (tracing) and trim: a read-ahead reader, a lexer over buffered bytes, and the errors both report.
package jsonscan
