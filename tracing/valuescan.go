package tracing

import (
	"bytes"

	"github.com/profile-model/profile-model/internal/jsonscan"
)

// valueScan finds where one JSON value ends when it spans many refills of
// the buffer: it keeps its place (nesting, inside a string or not) between
// calls, so a value of n bytes costs O(n) however it arrives. Scanning it
// again from its start at each refill, as the one-shot helpers do, made a
// 64 MB value cost minutes. Like jsonscan.CompositeEnd, it checks that brackets
// match and nothing else.
type valueScan struct {
	pos   int      // bytes of the value scanned so far
	depth int      // open brackets
	low   uint64   // one bit per open bracket of the first 64, set for '{'
	deep  []uint64 // the same for the brackets beyond (hostile input)
	inStr bool
	esc   bool
}

// scan goes on over b, which holds the value from its first byte, and
// returns the index past its end, jsonscan.Incomplete, or jsonscan.Invalid. eof says no more
// bytes will come (a number or literal then ends with b).
func (v *valueScan) scan(b []byte, eof bool) int {
	if len(b) == 0 {
		return jsonscan.Incomplete
	}
	switch c := b[0]; {
	case c == '"':
		return v.str(b)
	case c == '{' || c == '[':
		return v.composite(b)
	default:
		if e := jsonscan.ScalarEnd(b, v.pos); e >= 0 {
			return e
		}
		v.pos = len(b)
		if eof {
			return len(b)
		}
		return jsonscan.Incomplete
	}
}

// str finds the closing quote of the string value at b[0].
func (v *valueScan) str(b []byte) int {
	i := max(v.pos, 1)
	for i < len(b) {
		if v.esc {
			v.esc = false
			i++
			continue
		}
		k := bytes.IndexAny(b[i:], `"\`)
		if k < 0 {
			i = len(b)
			break
		}
		i += k
		if b[i] == '"' {
			return i + 1
		}
		v.esc = true
		i++
	}
	v.pos = i
	return jsonscan.Incomplete
}

// composite finds the bracket that closes the object or array at b[0].
func (v *valueScan) composite(b []byte) int {
	i := v.pos
	for i < len(b) {
		c := b[i]
		switch {
		case v.esc:
			v.esc = false
		case v.inStr:
			// The rest of the string at once.
			k := bytes.IndexAny(b[i:], `"\`)
			if k < 0 {
				i = len(b)
				continue
			}
			i += k
			if b[i] == '\\' {
				v.esc = true
			} else {
				v.inStr = false
			}
		case c == '"':
			v.inStr = true
		case c == '{' || c == '[':
			w, bit := v.word(v.depth)
			if c == '{' {
				*w |= bit
			} else {
				*w &^= bit
			}
			v.depth++
		case c == '}' || c == ']':
			if v.depth == 0 {
				return jsonscan.Invalid
			}
			v.depth--
			if w, bit := v.word(v.depth); (*w&bit != 0) != (c == '}') {
				return jsonscan.Invalid
			}
			if v.depth == 0 {
				return i + 1
			}
		}
		i++
	}
	v.pos = i
	return jsonscan.Incomplete
}

// word returns the word and bit that hold nesting level d.
func (v *valueScan) word(d int) (*uint64, uint64) {
	bit := uint64(1) << (d % 64)
	if d < 64 {
		return &v.low, bit
	}
	w := d/64 - 1
	if w == len(v.deep) {
		v.deep = append(v.deep, 0)
	}
	return &v.deep[w], bit
}
