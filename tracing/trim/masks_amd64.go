//go:build amd64 && !purego

package trim

// structMasks is structMasksGo with SSE2 (part of every amd64): sixteen
// bytes a compare.
//
//go:noescape
func structMasks(p *[64]byte) (quote, bslash, bracket uint64)
