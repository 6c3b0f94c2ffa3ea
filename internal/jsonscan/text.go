package jsonscan

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

// BadText finds what JSON does not allow in a value whose brackets and
// quotes are otherwise in place: a raw control byte (JSON wants it escaped)
// or bytes that are not UTF-8. It returns the offset of the first in b and
// what it is, or -1. A writer that copies values byte for byte checks them
// with it, so that it never writes invalid JSON.
func BadText(b []byte) (int, string) {
	if !hasControl(b) && utf8.Valid(b) {
		return -1, ""
	}
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			e := StringEnd(b, i)
			if e < 0 {
				e = len(b)
			}
			if j, msg := badString(b[:e], i+1); j >= 0 {
				return j, msg
			}
			i = e
		case c < 0x20 && !IsSpace(c):
			return i, fmt.Sprintf("a raw control byte 0x%02x", c)
		case c >= utf8.RuneSelf:
			return i, "bytes that are not UTF-8"
		default:
			i++
		}
	}
	return -1, ""
}

// badString checks the string body from b[i] to the end of b (its closing
// quote).
func badString(b []byte, i int) (int, string) {
	for i < len(b) {
		c := b[i]
		if c < 0x20 {
			return i, fmt.Sprintf("a raw control byte 0x%02x in a string (JSON wants it escaped)", c)
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i, "bytes that are not UTF-8 in a string"
		}
		i += size
	}
	return -1, ""
}

// hasControl tells whether b has a byte below 0x20, eight at a time.
func hasControl(b []byte) bool {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if (x-lsb*0x20)&^x&msb != 0 {
			return true
		}
	}
	for ; i < len(b); i++ {
		if b[i] < 0x20 {
			return true
		}
	}
	return false
}
