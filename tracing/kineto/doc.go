// Package kineto writes PyTorch profiler (Kineto) Chrome-JSON traces as a
// stream, laid out as Kineto writes them: the header with device
// properties, one event at a time with exact integer-nanosecond times
// printed as microseconds with three decimals, then the trailing keys. The
// simulated engine and the trace generator write through it; package
// tracing reads what it writes.
package kineto
