package tracing

import (
	"strings"
	"testing"
)

// refCompositeEnd is the plain byte-at-a-time definition that the SWAR
// skip must agree with.
func refCompositeEnd(b []byte, i int) int {
	var stack []byte
	inStr, esc := false, false
	for ; i < len(b); i++ {
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
		case c == '{' || c == '[':
			stack = append(stack, c)
		case c == '}' || c == ']':
			if len(stack) == 0 || (stack[len(stack)-1] == '{') != (c == '}') {
				return invalid
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return i + 1
			}
		}
	}
	return incomplete
}

func TestCompositeEnd(t *testing.T) {
	t.Parallel()
	cases := []string{
		`{}`, `[]`, `{"a": 1}`, `{"a": "}"}`, `{"a": "\"}"}`, `{"a": "\\"}`, `{"a": "\\\""} }`,
		`{"name": "void f<{lambda()#1}>(x)", "args": {"k": [1, 2, {"z": "]"}]}}, {"next": 1}`,
		`{"a": "` + strings.Repeat(`\\`, 9) + `\"x"}`, // an escaped quote after an odd run
		`{"a": "1234567\"}"}`, `{"abcdefg": "\"}`, `{"a": [}`, `{"a": 1]`, `{"a": "x`, `{"a": {`,
		strings.Repeat("[", 100) + strings.Repeat("]", 100),
		strings.Repeat("[", 70) + strings.Repeat("]", 69) + "}",
		`{"k": "é{ü}\u00e9"}`,
	}
	for _, c := range cases {
		for pad := range 9 { // every alignment against the 8-byte words
			b := []byte(strings.Repeat(" ", pad) + c)
			if got, want := compositeEnd(b, pad), refCompositeEnd(b, pad); got != want {
				t.Errorf("compositeEnd(%q) = %d, want %d", b, got, want)
			}
		}
	}
}

func FuzzCompositeEnd(f *testing.F) {
	f.Add([]byte(`{"a": "b\"}", "c": [1, {"d": "]"}]}`))
	f.Add([]byte(`[{"x": "\\\\"}, ["]", "["]]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || (b[0] != '{' && b[0] != '[') {
			return
		}
		if got, want := compositeEnd(b, 0), refCompositeEnd(b, 0); got != want {
			t.Fatalf("compositeEnd(%q) = %d, want %d", b, got, want)
		}
	})
}

func TestParseMicros(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"5", 5000, true}, {"1.5", 1500, true}, {"1.76", 1760, true},
		{"4203669603018.756", 4203669603018756, true},
		{"1712195495505582.988", 1712195495505582988, true}, // 19 significant digits
		{"2.0004", 2000, true}, {"2.0005", 2001, true}, {"-3.25", -3250, true},
		{"1e1", 10000, true}, {"1.5E-3", 2, true},
		{"", 0, false}, {"-", 0, false}, {"1.", 0, false}, {".5", 0, false}, {"1x", 0, false},
		{"99999999999999999999", 0, false}, {"1e400", 0, false},
	}
	for _, c := range cases {
		got, ok := parseMicros([]byte(c.in))
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("parseMicros(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// refStringEnd is the byte-at-a-time definition of stringEnd.
func refStringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

func TestStringEnd(t *testing.T) {
	t.Parallel()
	cases := []string{
		`""`, `"a"`, `"\""`, `"\\"`, `"\\\""x"`, `"\\\\"`, `"abc\`, `"abc\"`, `"`, `"` + strings.Repeat(`\\`, 20) + `"`,
		`"` + strings.Repeat("x", 40) + `\"` + strings.Repeat("y", 40) + `" "z"`, `"\\\\\"\\"`,
	}
	for _, c := range cases {
		for pad := range 3 {
			b := []byte(strings.Repeat(`\`, pad) + c)
			if got, want := stringEnd(b, pad), refStringEnd(b, pad); got != want {
				t.Errorf("stringEnd(%q, %d) = %d, want %d", b, pad, got, want)
			}
		}
	}
}

func FuzzStringEnd(f *testing.F) {
	f.Add([]byte(`"a\"b\\"c"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			return
		}
		if got, want := stringEnd(b, 0), refStringEnd(b, 0); got != want {
			t.Fatalf("stringEnd(%q) = %d, want %d", b, got, want)
		}
	})
}
