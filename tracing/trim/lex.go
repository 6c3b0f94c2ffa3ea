package trim

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"

	"github.com/profile-model/profile-model/internal/jsonmask"
)

// Byte-level JSON helpers over a slice that may end before the value does:
// each returns the index past what it read, or incomplete when b ends first,
// or invalid when the bytes cannot be JSON.

const (
	incomplete = -1
	invalid    = -2
)

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && isSpace(b[i]) {
		i++
	}
	return i
}

// stringEnd returns the index past the closing quote of the string whose
// opening quote is at b[i]. Short strings (keys, categories) are searched
// eight bytes at a time; past 64 bytes, or at a backslash, longStringEnd
// takes over.
func stringEnd(b []byte, i int) int {
	j := i + 1
	for lim := min(len(b)-8, j+16); j <= lim; j += 8 {
		x := binary.LittleEndian.Uint64(b[j:])
		q := x ^ (lsb * '"')
		e := x ^ (lsb * '\\')
		if m := ((q-lsb)&^q | (e-lsb)&^e) & msb; m != 0 {
			// The lowest flag is exact (a borrow only flags bytes above it).
			k := j + bits.TrailingZeros64(m)/8
			if b[k] == '"' {
				return k + 1
			}
			break
		}
	}
	return longStringEnd(b, i)
}

// longStringEnd is stringEnd with bytes.IndexByte (vectorised) finding
// each quote; one after an odd run of backslashes is escaped.
func longStringEnd(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return incomplete
		}
		j += k
		n := 0
		for j-n-1 > i && b[j-n-1] == '\\' {
			n++
		}
		if n&1 == 0 {
			return j + 1
		}
		j++
	}
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// prefixXor8 sets bit k to the parity of bits 0..k: with quote bits, the
// bytes from an opening quote up to (not including) its closing quote.
func prefixXor8(q uint8) uint8 {
	q ^= q << 1
	q ^= q << 2
	q ^= q << 4
	return q
}

// compositeEnd returns the index past the object or array that opens at
// b[i]. It checks that brackets nest (the grammar between them is not
// checked: skipped values are copied or dropped, never interpreted).
func compositeEnd(b []byte, i int) int {
	if e := flatObjectEnd(b, i); e > 0 {
		return e
	}
	return nestedEnd(b, i+1, []byte{b[i]})
}

// flatObjectEnd is the common case of compositeEnd, an object of numbers and
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

// nestedEnd returns the index past the bracket that closes the innermost
// of open (the brackets open at b[i], outermost first), reading outside any
// string from b[i]. Quotes and brackets are flagged 64 bytes at a time
// (eight near the end), the bytes inside strings found by the parity of the
// quotes before them; where a backslash is, bytes are read one by one.
func nestedEnd(b []byte, i int, open []byte) int {
	var stack [16]byte
	st := append(stack[:0], open...)
	// bracket applies the bracket b[k]: the index past the value when it
	// closes the outermost, invalid on a mismatch, 0 to go on.
	bracket := func(k int) int {
		c := b[k]
		if c == '{' || c == '[' {
			st = append(st, c)
			return 0
		}
		if st[len(st)-1]+2 != c { // '{'+2 == '}', '['+2 == ']'
			return invalid
		}
		if st = st[:len(st)-1]; len(st) == 0 {
			return k + 1
		}
		return 0
	}
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
				if r := bracket(j + bits.TrailingZeros64(out)); r != 0 {
					return r
				}
			}
			in = uint64(int64(inside) >> 63)
		}
		// Up to 64 bytes eight at a time: the end of the buffer, or a
		// block with a backslash.
		for lim := min(j+64, len(b)); j < lim; {
			if j+8 <= len(b) {
				x := binary.LittleEndian.Uint64(b[j:])
				if jsonmask.EqMask(x, '\\') == 0 {
					y := x | 0x2020202020202020 // '[' ']' fold onto '{' '}'
					inside := prefixXor8(jsonmask.Gather(jsonmask.EqMask(x, '"'))) ^ uint8(in)
					for out := jsonmask.Gather(jsonmask.EqMask(y, '{')|jsonmask.EqMask(y, '}')) &^ inside; out != 0; out &= out - 1 {
						if r := bracket(j + bits.TrailingZeros8(out)); r != 0 {
							return r
						}
					}
					in = uint64(int64(int8(inside)) >> 7)
					j += 8
					continue
				}
			}
			// Byte by byte to the end of the word; inside a string no
			// escape is pending at a word start (the bytes before had no
			// backslash, or were read here).
			if in != 0 {
				e := longStringEnd(b, j-1)
				if e < 0 {
					return e
				}
				j, in = e, 0
				continue
			}
			for end := min(j+8, len(b)); j < end; {
				switch b[j] {
				case '"':
					e := longStringEnd(b, j)
					if e < 0 {
						return e
					}
					j = e
					continue
				case '{', '[', '}', ']':
					if r := bracket(j); r != 0 {
						return r
					}
				}
				j++
			}
		}
		if j >= len(b) {
			return incomplete
		}
	}
}

// scalarEnd returns the index past a number or literal starting at b[i].
func scalarEnd(b []byte, i int) int {
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\n', '\r', '\t', ':':
			if j == i {
				return invalid
			}
			return j
		case '"', '{', '[':
			return invalid
		}
		j++
	}
	return incomplete
}

// valueEnd returns the index past the JSON value starting at b[i].
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return incomplete
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		return compositeEnd(b, i)
	case '}', ']', ',', ':':
		return invalid
	}
	return scalarEnd(b, i)
}

// parseMicros converts Kineto's microsecond text (an integer, three
// decimals, or more) to integer nanoseconds, exactly: 19-digit timestamps
// do not fit a float64. Digits past the third decimal are rounded half up;
// an exponent falls back to float arithmetic.
func parseMicros(s []byte) (int64, bool) {
	i, neg := 0, false
	if len(s) > 0 && s[0] == '-' {
		neg, i = true, 1
	}
	var us int64
	d := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		if us > (math.MaxInt64/1000-9)/10 {
			return 0, false
		}
		us = us*10 + int64(s[i]-'0')
		i++
	}
	if i == d {
		return 0, false
	}
	var frac int64
	if i < len(s) && s[i] == '.' {
		i++
		d = i
		n := 0
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			switch {
			case n < 3:
				frac = frac*10 + int64(s[i]-'0')
			case n == 3 && s[i] >= '5':
				frac++
			}
			n++
		}
		if i == d {
			return 0, false
		}
		for ; n < 3; n++ {
			frac *= 10
		}
	}
	if i < len(s) {
		f, err := strconv.ParseFloat(string(s), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || math.Abs(f) > math.MaxInt64/1000 {
			return 0, false
		}
		return int64(math.Round(f * 1000)), true
	}
	ns := us*1000 + frac
	if neg {
		ns = -ns
	}
	return ns, true
}

// microsAt reads the number at b[i] as microseconds and returns it in
// nanoseconds with the index past it (incomplete or invalid when it is cut
// or is not JSON); ok is false for a value that is not a number of
// microseconds (a string, say).
func microsAt(b []byte, i int) (ns int64, end int, ok bool) {
	// The usual case, up to 16 integer digits (eight at a time) and up to
	// three decimals.
	j := i
	var us int64
	for n := 0; n < 2 && j+8 <= len(b); n++ {
		x := binary.LittleEndian.Uint64(b[j:])
		if !eightDigits(x) {
			break
		}
		us = us*1e8 + int64(digits8(x))
		j += 8
	}
	for ; j < len(b) && j-i < 16 && b[j] >= '0' && b[j] <= '9'; j++ {
		us = us*10 + int64(b[j]-'0')
	}
	if j == i {
		return general(b, i)
	}
	var frac int64
	if j < len(b) && b[j] == '.' {
		d := j + 1
		for j = d; j < len(b) && j-d < 3 && b[j] >= '0' && b[j] <= '9'; j++ {
			frac = frac*10 + int64(b[j]-'0')
		}
		if j == d {
			return general(b, i)
		}
		for k := j - d; k < 3; k++ {
			frac *= 10
		}
	}
	if j >= len(b) {
		return 0, incomplete, false
	}
	switch b[j] {
	case ',', '}', ']', ' ', '\n', '\r', '\t':
		return us*1000 + frac, j, true
	}
	// A sign, an exponent, more digits: the general path.
	return general(b, i)
}

func general(b []byte, i int) (int64, int, bool) {
	end := valueEnd(b, i)
	if end < 0 {
		return 0, end, false
	}
	ns, ok := parseMicros(b[i:end])
	return ns, end, ok
}

// eightDigits says whether the eight bytes of x are all ASCII digits.
func eightDigits(x uint64) bool {
	return (x&0xF0F0F0F0F0F0F0F0)|(((x+0x0606060606060606)&0xF0F0F0F0F0F0F0F0)>>4) == 0x3333333333333333
}

// digits8 converts eight ASCII digits (the first in the low byte) to their
// value, with three multiplications.
func digits8(x uint64) uint64 {
	x -= 0x3030303030303030
	x = x*10 + x>>8
	return ((x&0x000000FF000000FF)*(100+1000000<<32) + (x>>16&0x000000FF000000FF)*(1+10000<<32)) >> 32
}

// parseInt reads an integer id (a fractional part, which old traces write
// for some ids, is dropped).
func parseInt(s []byte) (int64, bool) {
	i, neg := 0, false
	if len(s) > 0 && s[0] == '-' {
		neg, i = true, 1
	}
	var v int64
	d := i
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		hi, lo := bits.Mul64(uint64(v), 10)
		if hi != 0 || lo > math.MaxInt64-9 {
			return 0, false
		}
		v = int64(lo) + int64(s[i]-'0')
	}
	if i == d {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// formatMicros prints integer nanoseconds as microseconds with three
// decimals, as Kineto writes them.
func formatMicros(ns int64) string {
	sign := ""
	if ns < 0 {
		sign, ns = "-", -ns
	}
	return sign + strconv.FormatInt(ns/1000, 10) + "." + strconv.FormatInt(1000+ns%1000, 10)[1:]
}
