//go:build !amd64 || purego

package trim

func structMasks(p *[64]byte) (quote, bslash, bracket uint64) { return structMasksGo(p) }
