package tracing

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/profile-model/profile-model/internal/jsonmask"
)

// Low-level JSON helpers that work on a byte slice holding one complete value.
// The Scanner finds the extent of each traceEvents entry first (scanner.go),
// then these helpers read the few fields it needs without allocating.

// structural marks the bytes the structural skip stops at.
var structural = func() (t [256]bool) {
	for _, c := range []byte(`"{}[]`) {
		t[c] = true
	}
	return t
}()

// delim marks the bytes that end a number or literal.
var delim = func() (t [256]bool) {
	for _, c := range []byte(",}]:\"{[ \n\r\t") {
		t[c] = true
	}
	return t
}()

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func skipSpace(b []byte, i int) int {
	// JSON whitespace is at most ' ': one comparison for the usual byte.
	for i < len(b) && b[i] <= ' ' && isSpace(b[i]) {
		i++
	}
	return i
}

// SWAR (eight bytes at a time) byte search: hasByte flags the bytes of x
// equal to c. Only the lowest flag is exact (a borrow can flag a byte above
// a match), and only the lowest is used.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

func hasByte(x uint64, c byte) uint64 {
	y := x ^ (lsb * uint64(c))
	return (y - lsb) &^ y & msb
}

// stringEnd returns the index just past the closing quote of the string whose
// opening quote is at b[i], or -1 when b ends first. bytes.IndexByte
// (vectorised) finds each quote; one after an odd run of backslashes is
// escaped.
func stringEnd(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
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

// lexer reads one complete JSON value held in b.
type lexer struct {
	b []byte
	i int
}

func (l *lexer) ws() { l.i = skipSpace(l.b, l.i) }

// peek returns the next non-space byte, 0 at the end.
func (l *lexer) peek() byte {
	l.ws()
	if l.i >= len(l.b) {
		return 0
	}
	return l.b[l.i]
}

// expect consumes c (after spaces).
func (l *lexer) expect(c byte) bool {
	if l.peek() != c {
		return false
	}
	l.i++
	return true
}

// str reads a string and returns its raw contents (escapes not decoded).
func (l *lexer) str() ([]byte, bool) {
	if l.peek() != '"' {
		return nil, false
	}
	// Keys and short values end within a few bytes: look there before
	// calling IndexByte.
	for j := l.i + 1; j < len(l.b) && j < l.i+24; j++ {
		if c := l.b[j]; c == '"' {
			s := l.b[l.i+1 : j]
			l.i = j + 1
			return s, true
		} else if c == '\\' {
			break
		}
	}
	return l.longStr()
}

// longStr is str for a string that is usually long (an event name): it
// goes to IndexByte at once.
func (l *lexer) longStr() ([]byte, bool) {
	if l.peek() != '"' {
		return nil, false
	}
	e := stringEnd(l.b, l.i)
	if e < 0 {
		return nil, false
	}
	s := l.b[l.i+1 : e-1]
	l.i = e
	return s, true
}

// scalar reads a number or literal and returns its text.
// strOrScalar reads a string or a scalar; q says it was quoted (a number
// written as a string is read, and warned about, by the caller).
func (l *lexer) strOrScalar() (v []byte, q, ok bool) {
	if l.peek() == '"' {
		v, ok = l.str()
		return v, true, ok
	}
	v, ok = l.scalar()
	return v, false, ok
}

func (l *lexer) scalar() ([]byte, bool) {
	l.ws()
	j := l.i
	for j < len(l.b) && !delim[l.b[j]] {
		j++
	}
	if j == l.i {
		return nil, false
	}
	s := l.b[l.i:j]
	l.i = j
	// Not validated here: the numbers Load uses are checked when parsed,
	// and skipped values are only counted.
	return s, true
}

// validNumber checks JSON number grammar.
func validNumber(s []byte) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	d := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == d {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		d = i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d = i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	return i == len(s)
}

// skip reads over any value, checking bracket nesting.
func (l *lexer) skip() bool {
	switch l.peek() {
	case '"':
		_, ok := l.str()
		return ok
	case '{', '[':
		e := compositeEnd(l.b, l.i)
		if e < 0 {
			return false
		}
		l.i = e
		return true
	case 0:
		return false
	}
	_, ok := l.scalar()
	return ok
}

// Results of compositeEnd besides an end index.
const (
	incomplete = -1 // b ends before the value does
	invalid    = -2 // brackets do not match
)

// compositeEnd returns the index past the object or array starting at b[i],
// or incomplete/invalid. It checks that brackets match but not the grammar
// between them: the skipped parts of a trace are only counted, never read.
func compositeEnd(b []byte, i int) int {
	return skipNested(b, i, 0, 0)
}

// objectRest returns the index past the '}' that closes the object whose
// members continue at b[i].
func objectRest(b []byte, i int) int {
	return skipNested(b, i, '{', 1)
}

func skipNested(b []byte, i int, open0 byte, depth int) int {
	var stack [64]byte
	stack[0] = open0
	var deep []byte
	// bracket applies an opening or closing bracket: it returns the index
	// past the value when it closes, incomplete to go on, invalid on a
	// mismatch.
	bracket := func(c byte, at int) int {
		if c == '{' || c == '[' {
			if depth < len(stack) {
				stack[depth] = c
			} else {
				deep = append(deep, c)
			}
			depth++
			return incomplete
		}
		if depth == 0 {
			return invalid
		}
		depth--
		var open byte
		if depth < len(stack) {
			open = stack[depth]
		} else {
			open = deep[len(deep)-1]
			deep = deep[:len(deep)-1]
		}
		if (open == '{') != (c == '}') {
			return invalid
		}
		if depth == 0 {
			return at + 1
		}
		return incomplete
	}
	inStr, esc := false, false
	slow := 0 // below it, no 64-byte blocks (a backslash is near)
	for i < len(b) {
		if !esc && i >= slow && i+64 <= len(b) {
			// 64 bytes at once (SIMD on amd64); a block with a backslash
			// goes the slower way below.
			q, bs, br := jsonmask.StructMasks((*[64]byte)(b[i:]))
			if bs == 0 {
				in := jsonmask.PrefixXor64(q)
				if inStr {
					in = ^in
				}
				br &^= in
				if bits.OnesCount64(q)&1 == 1 {
					inStr = !inStr
				}
				for br != 0 {
					k := bits.TrailingZeros64(br)
					br &= br - 1
					if r := bracket(b[i+k], i+k); r != incomplete {
						return r
					}
				}
				i += 64
				continue
			}
			// Up to past the backslash, the slower way.
			slow = i + bits.TrailingZeros64(bs) + 2
		}
		if !esc && i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			if hasByte(x, '\\') == 0 {
				// Eight bytes at once, without a branch per quote: quote
				// parity gives the bytes inside strings, the brackets
				// outside them are handled one by one (a few per event).
				q := jsonmask.Gather(jsonmask.EqMask(x, '"'))
				y := x | 0x2020202020202020 // '[' ']' become '{' '}'
				br := jsonmask.Gather(jsonmask.EqMask(y, '{') | jsonmask.EqMask(y, '}'))
				in := prefixXor8(q)
				if inStr {
					in = ^in
				}
				br &^= in
				if bits.OnesCount8(q)&1 == 1 {
					inStr = !inStr
				}
				for br != 0 {
					k := bits.TrailingZeros8(br)
					br &= br - 1
					if r := bracket(b[i+k], i+k); r != incomplete {
						return r
					}
				}
				i += 8
				continue
			}
		}
		// One byte at a time around escapes and at the end.
		c := b[i]
		switch {
		case esc:
			esc = false
		case inStr:
			if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case structural[c]:
			if r := bracket(c, i); r != incomplete {
				return r
			}
		}
		i++
	}
	return incomplete
}

// prefixXor8 sets bit k to the parity of bits 0..k.
func prefixXor8(q uint8) uint8 {
	q ^= q << 1
	q ^= q << 2
	q ^= q << 4
	return q
}

// scalarEnd returns the index past the number or literal starting at b[i],
// or incomplete when b ends first.
func scalarEnd(b []byte, i int) int {
	for j := i; j < len(b); j++ {
		if delim[b[j]] {
			return j
		}
	}
	return incomplete
}

// unquote decodes a raw JSON string body; raw is returned as is when it has
// no escapes.
func unquote(raw []byte, scratch []byte) ([]byte, bool) {
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw, true
	}
	q := append(append(append(scratch[:0], '"'), raw...), '"')
	out, err := jsontext.AppendUnquote(nil, q)
	if err != nil {
		return nil, false
	}
	return out, true
}

// parseMicros converts Kineto's microsecond text (integer, 3-decimal, or
// 19-significant-digit) to exact integer nanoseconds. Digits past the third
// decimal are rounded half up; exponents fall back to float arithmetic.
func parseMicros(s []byte) (int64, bool) {
	if len(s) == 0 {
		return 0, false
	}
	neg := false
	i := 0
	if s[0] == '-' {
		neg = true
		i++
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
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			switch {
			case n < 3:
				frac = frac*10 + int64(s[i]-'0')
			case n == 3 && s[i] >= '5':
				frac++ // round half up on the fourth decimal
			}
			n++
			i++
		}
		if i == d {
			return 0, false
		}
		for ; n < 3; n++ {
			frac *= 10
		}
	}
	if i < len(s) {
		if s[i] != 'e' && s[i] != 'E' {
			return 0, false
		}
		if !validNumber(s) {
			return 0, false
		}
		f, err := strconv.ParseFloat(string(s), 64)
		if err != nil || math.IsInf(f, 0) || math.Abs(f) > math.MaxInt64/1000 {
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

// parseInt reads an integer; a fractional part is dropped (Kineto writes
// some ids as floats in old eras).
func parseInt(s []byte) (int64, bool) {
	if len(s) == 0 {
		return 0, false
	}
	neg := false
	i := 0
	if s[0] == '-' {
		neg = true
		i++
	}
	var v int64
	d := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		if v > (math.MaxInt64-9)/10 {
			return 0, false
		}
		v = v*10 + int64(s[i]-'0')
		i++
	}
	if i == d {
		return 0, false
	}
	if i < len(s) && !validNumber(s) {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// idText reads a pid or tid written as a number or a string ("stream 7",
// "25738"): the trailing digits of a string, 0 when it has none.
func idText(raw []byte, quoted bool) int64 {
	if !quoted {
		v, _ := parseInt(raw)
		return v
	}
	j := len(raw)
	for j > 0 && raw[j-1] >= '0' && raw[j-1] <= '9' {
		j--
	}
	if j == len(raw) {
		return 0
	}
	v, _ := parseInt(raw[j:])
	return v
}
