package jsonscan

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
)

// The lexer: functions over buffered bytes that may end before the value
// does. Each returns the index past what it read, Incomplete when b ends
// first, or Invalid when the bytes cannot be JSON.
const (
	Incomplete = -1
	Invalid    = -2
)

// IsSpace tells JSON whitespace.
func IsSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// SkipSpace returns the index of the first byte at or after i that is not
// whitespace (len(b) when none is).
func SkipSpace(b []byte, i int) int {
	// JSON whitespace is at most ' ': one comparison for the usual byte.
	for i < len(b) && b[i] <= ' ' && IsSpace(b[i]) {
		i++
	}
	return i
}

// delim marks the bytes that end a number or literal.
var delim = func() (t [256]bool) {
	for _, c := range []byte(",}]:\"{[ \n\r\t") {
		t[c] = true
	}
	return t
}()

// Delim tells the bytes that end a number or literal.
func Delim(c byte) bool { return delim[c] }

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// StringEnd returns the index past the closing quote of the string whose
// opening quote is at b[i]. Short strings (keys, categories) are searched
// eight bytes at a time; past them, or at a backslash, bytes.IndexByte
// (vectorised) finds each quote.
func StringEnd(b []byte, i int) int {
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

// longStringEnd is StringEnd for a string that is usually long: a quote
// after an odd run of backslashes is escaped.
func longStringEnd(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return Incomplete
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

// ScalarEnd returns the index past the number or literal at b[i]: the first
// delimiter after it. It does not check the grammar (ValidNumber does,
// where a value is read).
func ScalarEnd(b []byte, i int) int {
	for j := i; j < len(b); j++ {
		if delim[b[j]] {
			if j == i {
				return Invalid
			}
			return j
		}
	}
	return Incomplete
}

// ValueEnd returns the index past the JSON value starting at b[i].
func ValueEnd(b []byte, i int) int {
	if i >= len(b) {
		return Incomplete
	}
	switch b[i] {
	case '"':
		return StringEnd(b, i)
	case '{', '[':
		return CompositeEnd(b, i)
	}
	return ScalarEnd(b, i)
}

// ValidNumber checks JSON number grammar (no leading zeros, no '+', digits
// on both sides of a point).
func ValidNumber(s []byte) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	if leadingZero(s[i:]) {
		return false
	}
	d := i
	i = digitsEnd(s, i)
	if i == d {
		return false
	}
	if i < len(s) && s[i] == '.' {
		d = i + 1
		if i = digitsEnd(s, d); i == d {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d = i
		if i = digitsEnd(s, i); i == d {
			return false
		}
	}
	return i == len(s)
}

func digitsEnd(s []byte, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// leadingZero tells digits that start with a 0 followed by another digit
// ("0123"), which JSON does not allow: such a number is rejected rather
// than read as 123.
func leadingZero(s []byte) bool {
	return len(s) > 1 && s[0] == '0' && s[1] >= '0' && s[1] <= '9'
}

// ValidScalar tells a number or literal that is valid JSON.
func ValidScalar(s []byte) bool {
	switch string(s) {
	case "true", "false", "null":
		return true
	}
	return ValidNumber(s)
}

// ParseMicros converts Kineto's microsecond text (an integer, three
// decimals, or 19 significant digits) to integer nanoseconds, exactly:
// 19-digit timestamps do not fit a float64. Digits past the third decimal
// are rounded half up; an exponent falls back to float arithmetic. Text
// that is not a JSON number is rejected.
func ParseMicros(s []byte) (int64, bool) {
	i, neg := 0, false
	if len(s) > 0 && s[0] == '-' {
		neg, i = true, 1
	}
	if leadingZero(s[i:]) {
		return 0, false
	}
	var us int64
	d := i
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if us > (math.MaxInt64/1000-9)/10 {
			return 0, false
		}
		us = us*10 + int64(s[i]-'0')
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
				frac++ // round half up on the fourth decimal
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
		return exponentMicros(s, i)
	}
	ns := us*1000 + frac
	if neg {
		ns = -ns
	}
	return ns, true
}

// exponentMicros is ParseMicros for a number with an exponent (s[i] is
// past its mantissa), in float arithmetic.
func exponentMicros(s []byte, i int) (int64, bool) {
	if s[i] != 'e' && s[i] != 'E' || !ValidNumber(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(s), 64)
	if err != nil || math.IsInf(f, 0) || math.Abs(f) > math.MaxInt64/1000 {
		return 0, false
	}
	return int64(math.Round(f * 1000)), true
}

// ParseInt reads an integer; a fractional part is dropped (Kineto writes
// some ids as floats in old eras). Text that is not a JSON number is
// rejected.
func ParseInt(s []byte) (int64, bool) {
	i, neg := 0, false
	if len(s) > 0 && s[0] == '-' {
		neg, i = true, 1
	}
	if leadingZero(s[i:]) {
		return 0, false
	}
	var v int64
	d := i
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		hi, lo := bits.Mul64(uint64(v), 10)
		if hi != 0 || lo > math.MaxInt64-uint64(s[i]-'0') {
			return 0, false
		}
		v = int64(lo) + int64(s[i]-'0')
	}
	if i == d {
		return 0, false
	}
	if i < len(s) && !ValidNumber(s) {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// MicrosAt reads the number at b[i] as ParseMicros does and returns the
// index past it: Kineto's "123.456" in one pass, anything else through
// ScalarEnd and ParseMicros. end is Incomplete when b may end inside the
// number, Invalid when no scalar is there; ok is false then, and for a
// scalar that is not a number of microseconds.
func MicrosAt(b []byte, i int) (end int, ns int64, ok bool) {
	// 15 integer digits cannot overflow (ParseMicros checks longer ones).
	if n, us := UintAt(b, i); n > 0 && n <= 15 && i+n+4 < len(b) && (n == 1 || b[i] != '0') {
		j := i + n
		var frac int64
		if b[j] == '.' {
			// Up to three decimals: more go to ParseMicros (it rounds).
			k := j + 1
			for k < j+4 && b[k] >= '0' && b[k] <= '9' {
				frac = frac*10 + int64(b[k]-'0')
				k++
			}
			switch k - j {
			case 1:
				k = j // "1." is not a number: ParseMicros says so
			case 2:
				frac *= 100
			case 3:
				frac *= 10
			}
			j = k
		}
		if numEnd[b[j]] {
			return j, int64(us)*1000 + frac, true
		}
	}
	e := ScalarEnd(b, i)
	if e < 0 {
		return e, 0, false
	}
	ns, ok = ParseMicros(b[i:e])
	return e, ns, ok
}

// numEnd marks the bytes that may follow a number inside an object or array.
var numEnd = func() (t [256]bool) {
	for _, c := range []byte(",}] \n\r\t") {
		t[c] = true
	}
	return t
}()

// NumberEnd tells the bytes that may follow a number inside an object or
// array.
func NumberEnd(c byte) bool { return numEnd[c] }

// UintAt reads the decimal digits at b[i], up to 16, eight at a time: it
// returns how many there are (16 when there may be more) and their value.
func UintAt(b []byte, i int) (n int, v uint64) {
	if len(b)-i < 16 {
		for n < 16 && i+n < len(b) && b[i+n] >= '0' && b[i+n] <= '9' {
			v = v*10 + uint64(b[i+n]-'0')
			n++
		}
		return n, v
	}
	n, v = digits8(binary.LittleEndian.Uint64(b[i:]))
	if n == 8 {
		m, w := digits8(binary.LittleEndian.Uint64(b[i+8:]))
		n, v = 8+m, v*pow10[m]+w
	}
	return n, v
}

var pow10 = [...]uint64{1, 10, 100, 1000, 1e4, 1e5, 1e6, 1e7, 1e8}

// digits8 reads the leading decimal digits of the eight bytes of x (the
// first byte lowest): how many (0 to 8) and their value.
func digits8(x uint64) (n int, v uint64) {
	const three = 0x3030303030303030
	n = LeadingDigits(x)
	if n == 0 {
		return 0, 0
	}
	// Digit values, shifted up so that the bytes past the digits fall off
	// and zeros (leading zeros of the number) come in below.
	d := (x - three) << (64 - 8*uint(n))
	// Pairs, then quads, then all eight (first byte most significant).
	d = (d * (10<<8 + 1)) >> 8 & 0x00FF00FF00FF00FF
	d = (d * (100<<16 + 1)) >> 16 & 0x0000FFFF0000FFFF
	d = (d * (10000<<32 + 1)) >> 32
	return n, d
}

// LeadingDigits is how many of the eight bytes of x, from the lowest, are
// decimal digits. A byte is a digit when its high nibble is 3 both as is
// and after adding 6; a carry out of a non-digit byte only reaches the
// bytes after it, which are not counted.
func LeadingDigits(x uint64) int {
	const hi, three, six = 0xF0F0F0F0F0F0F0F0, 0x3030303030303030, 0x0606060606060606
	return bits.TrailingZeros64((x&hi^three)|((x+six)&hi^three)) >> 3
}
