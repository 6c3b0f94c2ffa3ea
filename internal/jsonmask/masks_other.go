//go:build !amd64 || purego

package jsonmask

func StructMasks(p *[64]byte) (quote, bslash, bracket uint64) {
	return StructMasksGo(p)
}
