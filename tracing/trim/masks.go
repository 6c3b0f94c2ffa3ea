package trim

import "encoding/binary"

// structMasksGo flags, bit k for byte k of 64, the quotes, backslashes and
// brackets ({}[]): the portable version, and what the assembly is tested
// against.
func structMasksGo(p *[64]byte) (quote, bslash, bracket uint64) {
	for w := 0; w < 8; w++ {
		x := binary.LittleEndian.Uint64(p[8*w:])
		y := x | 0x2020202020202020 // '[' ']' fold onto '{' '}'
		quote |= uint64(gather(eqBytes(x, '"'))) << (8 * w)
		bslash |= uint64(gather(eqBytes(x, '\\'))) << (8 * w)
		bracket |= uint64(gather(eqBytes(y, '{')|eqBytes(y, '}'))) << (8 * w)
	}
	return quote, bslash, bracket
}

// prefixXor64 sets bit k to the parity of bits 0..k: with quote bits, the
// bytes from an opening quote up to (not including) its closing quote.
func prefixXor64(q uint64) uint64 {
	q ^= q << 1
	q ^= q << 2
	q ^= q << 4
	q ^= q << 8
	q ^= q << 16
	q ^= q << 32
	return q
}
