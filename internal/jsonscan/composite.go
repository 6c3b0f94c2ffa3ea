package jsonscan

import (
	"bytes"
	"encoding/binary"
	"math/bits"

	"github.com/profile-model/profile-model/internal/jsonmask"
)

// CompositeEnd returns the index past the object or array that opens at
// b[i]. It checks that brackets nest, not the grammar between them: the
// values skipped this way are counted, copied or dropped, never read.
func CompositeEnd(b []byte, i int) int {
	if e := flatObjectEnd(b, i); e > 0 {
		return e
	}
	return nestedEnd(b, i+1, b[i])
}

// ObjectRest returns the index past the '}' that closes the object whose
// members continue at b[i] (outside any string).
func ObjectRest(b []byte, i int) int {
	return nestedEnd(b, i, '{')
}

// flatObjectEnd is the common case of CompositeEnd, an object of numbers and
// plain strings (the args of Python frames and most kernels): the first '}'
// ends it when nothing before it opens a value or escapes a quote, and the
// quotes before it pair up. 0 when that is not so.
func flatObjectEnd(b []byte, i int) int {
	if b[i] != '{' {
		return 0
	}
	k := bytes.IndexByte(b[i+1:min(len(b), i+1024)], '}')
	if k < 0 {
		return 0
	}
	body := b[i+1 : i+1+k]
	if bytes.IndexByte(body, '{') >= 0 || bytes.IndexByte(body, '[') >= 0 || bytes.IndexByte(body, ']') >= 0 || bytes.IndexByte(body, '\\') >= 0 || bytes.Count(body, []byte{'"'})&1 != 0 {
		return 0
	}
	return i + 2 + k
}

// bracket applies the bracket b[k] to st, the brackets open: the index
// past the value when it closes the outermost, Invalid on a mismatch, 0 to
// go on.
func bracket(st []byte, b []byte, k int) ([]byte, int) {
	c := b[k]
	if c == '{' || c == '[' {
		return append(st, c), 0
	}
	if st[len(st)-1]+2 != c { // '{'+2 == '}', '['+2 == ']'
		return st, Invalid
	}
	if st = st[:len(st)-1]; len(st) == 0 {
		return st, k + 1
	}
	return st, 0
}

// nestedEnd returns the index past the bracket that closes open (the
// bracket open before b[i]), reading outside any string from b[i]. Quotes
// and brackets are flagged 64 bytes at a time (eight near the end, or
// where a backslash is), the bytes inside strings found by the parity of
// the quotes before them; around a backslash, bytes are read one by one.
func nestedEnd(b []byte, i int, open byte) int {
	var small [16]byte
	st := append(small[:0], open)
	j := i
	var in uint64 // all ones while inside a string at j
	for {
		for ; j+64 <= len(b); j += 64 {
			q, bs, br := jsonmask.StructMasks((*[64]byte)(b[j : j+64]))
			if bs != 0 {
				break
			}
			inside := jsonmask.PrefixXor64(q) ^ in
			for out := br &^ inside; out != 0; out &= out - 1 {
				var r int
				if st, r = bracket(st, b, j+bits.TrailingZeros64(out)); r != 0 {
					return r
				}
			}
			in = uint64(int64(inside) >> 63)
		}
		// Up to 64 bytes eight at a time: the end of the buffer, or a
		// block with a backslash.
		var r int
		if st, j, in, r = words(st, b, j, in); r != 0 {
			return r
		}
		if j >= len(b) {
			return Incomplete
		}
	}
}

// words is nestedEnd, with st the brackets open, over the next 64 bytes from b[j] (fewer at the end of
// b), eight at a time, or one by one in a word with a backslash. It returns
// the brackets open, where it stopped, whether that is inside a string, and the result when
// the value closed or cannot be JSON (0 to go on).
func words(st, b []byte, j int, in uint64) ([]byte, int, uint64, int) {
	var r int
	for lim := min(j+64, len(b)); j < lim; {
		if j+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[j:])
			if jsonmask.EqMask(x, '\\') == 0 {
				y := x | 0x2020202020202020 // '[' ']' fold onto '{' '}'
				inside := prefixXor8(jsonmask.Gather(jsonmask.EqMask(x, '"'))) ^ uint8(in)
				for out := jsonmask.Gather(jsonmask.EqMask(y, '{')|jsonmask.EqMask(y, '}')) &^ inside; out != 0; out &= out - 1 {
					if st, r = bracket(st, b, j+bits.TrailingZeros8(out)); r != 0 {
						return st, j, in, r
					}
				}
				in = uint64(int64(int8(inside)) >> 7)
				j += 8
				continue
			}
		}
		// Byte by byte to the end of the word; inside a string no escape
		// is pending at a word start (the bytes before had no backslash,
		// or were read here).
		if in != 0 {
			e := longStringEnd(b, j-1)
			if e < 0 {
				return st, j, in, e
			}
			j, in = e, 0
			continue
		}
		for end := min(j+8, len(b)); j < end; {
			switch b[j] {
			case '"':
				e := longStringEnd(b, j)
				if e < 0 {
					return st, j, in, e
				}
				j = e
				continue
			case '{', '[', '}', ']':
				if st, r = bracket(st, b, j); r != 0 {
					return st, j, in, r
				}
			}
			j++
		}
	}
	return st, j, in, 0
}

// prefixXor8 sets bit k to the parity of bits 0..k: with quote bits, the
// bytes from an opening quote up to (not including) its closing quote.
func prefixXor8(q uint8) uint8 {
	q ^= q << 1
	q ^= q << 2
	q ^= q << 4
	return q
}
