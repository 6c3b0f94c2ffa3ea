//go:build amd64 && !purego

package jsonmask

// StructMasks flags, bit k for byte k, the quotes, backslashes and
// brackets ({}[]) among 64 bytes, with SSE2 (part of every amd64).
//
//go:noescape
func StructMasks(p *[64]byte) (quote, bslash, bracket uint64)
