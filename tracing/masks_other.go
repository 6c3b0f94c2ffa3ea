//go:build !amd64 || purego

package tracing

func structMasks(p *[64]byte) (quote, bslash, bracket uint64) {
	return structMasksGo(p)
}
