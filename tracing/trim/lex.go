package trim

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
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
	for lim := min(len(b)-8, j+64); j <= lim; j += 8 {
		x := binary.LittleEndian.Uint64(b[j:])
		q := x ^ (lsb * '"')
		e := x ^ (lsb * '\\')
		if m := ((q - lsb) &^ q | (e - lsb) &^ e) & msb; m != 0 {
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

// eqBytes flags (high bit) exactly the bytes of x equal to c.
func eqBytes(x uint64, c byte) uint64 {
	y := x ^ (lsb * uint64(c))
	t := (y & ^uint64(msb)) + ^uint64(msb)
	return ^(t | y | ^uint64(msb))
}

// gather packs the high bits of the eight bytes into one byte.
func gather(m uint64) uint8 { return uint8(((m >> 7) * 0x0102040810204080) >> 56) }

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
	return nestedEnd(b, i+1, []byte{b[i]})
}

// nestedEnd returns the index past the bracket that closes the innermost
// of open (the brackets open at b[i], outermost first), reading outside any
// string from b[i]. Eight bytes at a time: quotes and brackets are flagged
// in a word, the bytes inside strings found by the parity of the quotes
// before them; a word with a backslash is read byte by byte.
func nestedEnd(b []byte, i int, open []byte) int {
	var stack [16]byte
	st := append(stack[:0], open...)
	j := i
	var in uint8 // 0xff while inside a string at the start of the word
	for {
		for ; j+8 <= len(b); j += 8 {
			x := binary.LittleEndian.Uint64(b[j:])
			if eqBytes(x, '\\') != 0 {
				break
			}
			y := x | 0x2020202020202020 // '[' ']' fold onto '{' '}'
			qm, bm := eqBytes(x, '"'), eqBytes(y, '{')|eqBytes(y, '}')
			if qm|bm == 0 {
				continue
			}
			q := gather(qm)
			inside := prefixXor8(q) ^ in
			for out := gather(bm) &^ inside; out != 0; out &= out - 1 {
				k := j + bits.TrailingZeros8(out)
				switch c := b[k]; c {
				case '{', '[':
					st = append(st, c)
				default:
					if st[len(st)-1]+2 != c { // '{'+2 == '}', '['+2 == ']'
						return invalid
					}
					if st = st[:len(st)-1]; len(st) == 0 {
						return k + 1
					}
				}
			}
			if bits.OnesCount8(q)&1 == 1 {
				in = ^in
			}
		}
		if j >= len(b) {
			return incomplete
		}
		// A backslash, or the last few bytes: one word byte by byte
		// (inside a string, no escape is pending at a word start: the
		// words before had no backslash).
		lim := min(j+8, len(b))
		if in != 0 {
			e := longStringEnd(b, j-1)
			if e < 0 {
				return e
			}
			j, in = e, 0
			continue
		}
		for j < lim {
			switch c := b[j]; c {
			case '"':
				e := longStringEnd(b, j)
				if e < 0 {
					return e
				}
				j = e
				continue
			case '{', '[':
				st = append(st, c)
			case '}', ']':
				if st[len(st)-1]+2 != c {
					return invalid
				}
				if st = st[:len(st)-1]; len(st) == 0 {
					return j + 1
				}
			}
			j++
		}
		if j >= len(b) {
			return incomplete
		}
		j = max(j, lim)
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
// nanoseconds with the index past it (incomplete or invalid when it is
// cut or is not a number); ok is false for a value that is not a number
// of microseconds (a string, say).
func microsAt(b []byte, i int) (ns int64, end int, ok bool) {
	// The usual case, digits with up to three decimals, in one loop.
	j := i
	var us, frac int64
	n, dot := 0, -1
	for ; j < len(b); j++ {
		c := b[j]
		if c >= '0' && c <= '9' {
			if dot < 0 {
				us = us*10 + int64(c-'0')
				n++
			} else if j-dot <= 3 {
				frac = frac*10 + int64(c-'0')
			} else {
				break
			}
			continue
		}
		if c == '.' && dot < 0 && n > 0 {
			dot = j
			continue
		}
		break
	}
	if j >= len(b) {
		return 0, incomplete, false
	}
	if c := b[j]; n > 0 && n <= 16 && (dot < 0 || j-dot > 1) && (c == ',' || c == '}' || c == ']' || isSpace(c)) {
		if dot >= 0 {
			for k := j - dot - 1; k < 3; k++ {
				frac *= 10
			}
		}
		return us*1000 + frac, j, true
	}
	// Anything else (a sign, an exponent, more decimals, a string): the
	// general path.
	end = valueEnd(b, i)
	if end < 0 {
		return 0, end, false
	}
	ns, ok = parseMicros(b[i:end])
	return ns, end, ok
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
