// Package units holds the one duration type of the project: integer
// nanoseconds that print as exact microseconds. Kernel times are summed over
// millions of launches, so they are kept as integers (a float would round)
// and printed with exactly three decimals, as Kineto writes them.
package units

import (
	"strconv"
	"time"
)

// Duration is a span of GPU or host time in integer nanoseconds.
// It prints, and marshals to JSON, as microseconds with three decimals.
type Duration int64

// Micros converts a microsecond figure (as CSV tables and Kineto write
// them) to a Duration, rounding to the nearest nanosecond.
func Micros(us float64) Duration {
	if us < 0 {
		return -Duration(-us*1000 + 0.5)
	}
	return Duration(us*1000 + 0.5)
}

// FromTime converts a time.Duration.
func FromTime(d time.Duration) Duration { return Duration(d.Nanoseconds()) }

// Time converts to a time.Duration.
func (d Duration) Time() time.Duration { return time.Duration(d) }

// US is the value in microseconds.
func (d Duration) US() float64 { return float64(d) / 1000 }

// MS is the value in milliseconds.
func (d Duration) MS() float64 { return float64(d) / 1e6 }

// Seconds is the value in seconds.
func (d Duration) Seconds() float64 { return float64(d) / 1e9 }

// String prints microseconds with exactly three decimals, e.g. "12.345".
func (d Duration) String() string { return string(d.AppendText(nil)) }

// AppendText appends the String form to b without allocating.
func (d Duration) AppendText(b []byte) []byte {
	ns := int64(d)
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1000, 10)
	frac := ns % 1000
	return append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
}

// MarshalJSON writes the microseconds as a JSON number with three decimals.
func (d Duration) MarshalJSON() ([]byte, error) { return d.AppendText(nil), nil }

// UnmarshalJSON reads a microsecond number, exactly when it has at most
// three decimals.
func (d *Duration) UnmarshalJSON(b []byte) error {
	v, err := ParseMicros(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ParseMicros reads a decimal microsecond figure ("12", "12.5", "-0.125")
// into exact nanoseconds; digits past the third decimal are rounded.
func ParseMicros(s string) (Duration, error) {
	neg := false
	t := s
	if len(t) > 0 && (t[0] == '-' || t[0] == '+') {
		neg = t[0] == '-'
		t = t[1:]
	}
	var whole, frac int64
	digits, fracDigits := 0, 0
	i := 0
	for ; i < len(t) && t[i] >= '0' && t[i] <= '9'; i++ {
		if whole > (1<<62)/10 {
			return 0, &strconv.NumError{Func: "ParseMicros", Num: s, Err: strconv.ErrRange}
		}
		whole = whole*10 + int64(t[i]-'0')
		digits++
	}
	round := false
	if i < len(t) && t[i] == '.' {
		i++
		for ; i < len(t) && t[i] >= '0' && t[i] <= '9'; i++ {
			switch {
			case fracDigits < 3:
				frac = frac*10 + int64(t[i]-'0')
			case fracDigits == 3:
				round = t[i] >= '5'
			}
			fracDigits++
			digits++
		}
	}
	if i != len(t) || digits == 0 {
		// Exponents and other forms: fall back to a float.
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, &strconv.NumError{Func: "ParseMicros", Num: s, Err: strconv.ErrSyntax}
		}
		return Micros(f), nil
	}
	for n := fracDigits; n < 3; n++ {
		frac *= 10
	}
	ns := whole*1000 + frac
	if round {
		ns++
	}
	if neg {
		ns = -ns
	}
	return Duration(ns), nil
}
