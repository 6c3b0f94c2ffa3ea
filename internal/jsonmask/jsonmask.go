// Package jsonmask finds the structural bytes of JSON 64 bytes at a time:
// quotes, backslashes and brackets, as bit masks (bit k for byte k). The
// trace reader and the trace trimmer skip whole events with it.
package jsonmask

import "encoding/binary"

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// EqMask sets the high bit of each byte of x equal to c (exactly).
func EqMask(x uint64, c byte) uint64 {
	y := x ^ (lsb * uint64(c))
	t := ((y & 0x7f7f7f7f7f7f7f7f) + 0x7f7f7f7f7f7f7f7f) | y
	return ^t & msb
}

// Gather packs the high bits of the eight bytes into one byte (bit k: byte k).
func Gather(m uint64) uint8 { return uint8(((m >> 7) * 0x0102040810204080) >> 56) }

// StructMasksGo is StructMasks eight bytes at a time (SWAR): the portable
// version, and the definition the assembly is tested against.
func StructMasksGo(p *[64]byte) (quote, bslash, bracket uint64) {
	for w := 0; w < 8; w++ {
		x := binary.LittleEndian.Uint64(p[8*w:])
		y := x | 0x2020202020202020 // '[' ']' become '{' '}'
		quote |= uint64(Gather(EqMask(x, '"'))) << (8 * w)
		bslash |= uint64(Gather(EqMask(x, '\\'))) << (8 * w)
		bracket |= uint64(Gather(EqMask(y, '{')|EqMask(y, '}'))) << (8 * w)
	}
	return quote, bslash, bracket
}

// PrefixXor64 sets bit k to the parity of bits 0..k: with quote bits, the
// bytes from an opening quote up to (not including) its closing quote.
func PrefixXor64(q uint64) uint64 {
	q ^= q << 1
	q ^= q << 2
	q ^= q << 4
	q ^= q << 8
	q ^= q << 16
	q ^= q << 32
	return q
}
