package jsonscan

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
				return Invalid
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return i + 1
			}
		}
	}
	return Incomplete
}

func TestCompositeEnd(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 70)
	cases := []string{
		`{}`, `[]`, `{"a": 1}`, `{"a": "}"}`, `{"a": "\"}"}`, `{"a": "\\"}`, `{"a": "\\\""} }`,
		`{"name": "void f<{lambda()#1}>(x)", "args": {"k": [1, 2, {"z": "]"}]}}, {"next": 1}`,
		`{"a": "` + strings.Repeat(`\\`, 9) + `\"x"}`, // an escaped quote after an odd run
		`{"a": "1234567\"}"}`, `{"abcdefg": "\"}`, `{"a": [}`, `{"a": 1]`, `{"a": "x`, `{"a": {`,
		strings.Repeat("[", 100) + strings.Repeat("]", 100),
		strings.Repeat("[", 70) + strings.Repeat("]", 69) + "}",
		`{"k": "é{ü}\u00e9"}`,
		// The 64-byte path: long values, escapes, brackets in strings.
		`{"name": "` + long + `", "args": {"a": [1, 2, 3], "b": "}]{["}, "c": "` + long + `"}`,
		`{"name": "` + long + `\"}` + long + `", "z": {}}, {"next": 1}`,
		`{"a": "` + strings.Repeat(`\\`, 40) + `", "b": "` + strings.Repeat(`\"`, 40) + `"}`,
		`{"a": "` + long + strings.Repeat(`\\`, 33) + `"}"}`,
		`{"` + long + `": [` + strings.Repeat(`{"k": "v"}, `, 20) + `{}]}`,
		strings.Repeat(`[{"a": "]"}, `, 30) + `0` + strings.Repeat("]", 30),
		`{"a": "` + long + `", "b": [` + long,
		`{"a": "` + long + `"]` + long,
		`{"a": "` + long + `"}` + strings.Repeat(" ", 70),
	}
	for _, c := range cases {
		for pad := range 65 { // every alignment against the words and blocks
			b := []byte(strings.Repeat(" ", pad) + c)
			if got, want := CompositeEnd(b, pad), refCompositeEnd(b, pad); got != want {
				t.Errorf("CompositeEnd(%q) = %d, want %d", b, got, want)
			}
		}
	}
}

// Random nested values, whole and cut short.
func TestCompositeEndRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 3000 {
		v := `{"v": ` + randomValue(rng, 0) + `}`
		b := append([]byte(v), []byte(`, "tail": 1}`)...)
		require.Equal(t, len(v), CompositeEnd(b, 0), "%d: %s", n, v)
		require.Equal(t, Incomplete, CompositeEnd(b[:len(v)-1], 0), "%d: cut %s", n, v)
		require.Equal(t, len(v), ObjectRest(b, 1), "%d: members of %s", n, v)
	}
}

func randomValue(rng *rand.Rand, depth int) string {
	switch k := rng.IntN(6); {
	case depth > 4 || k == 0:
		return []string{`1`, `-2.5e3`, `true`, `null`, `"x"`}[rng.IntN(5)]
	case k == 1:
		s := `"`
		for range rng.IntN(90) {
			s += []string{`a`, `\\`, `\"`, `{`, `]`, ` `, `é`, `\u00e9`}[rng.IntN(8)]
		}
		return s + `"`
	case k < 4:
		s := `{`
		for i := range rng.IntN(5) {
			if i > 0 {
				s += `, `
			}
			s += `"k` + string(rune('a'+i)) + `": ` + randomValue(rng, depth+1)
		}
		return s + `}`
	default:
		s := `[`
		for i := range rng.IntN(5) {
			if i > 0 {
				s += `,` + []string{" ", "\n      ", ""}[rng.IntN(3)]
			}
			s += randomValue(rng, depth+1)
		}
		return s + `]`
	}
}

// refStringEnd is the byte-at-a-time definition of StringEnd.
func refStringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return Incomplete
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
			if got, want := StringEnd(b, pad), refStringEnd(b, pad); got != want {
				t.Errorf("StringEnd(%q, %d) = %d, want %d", b, pad, got, want)
			}
		}
	}
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
		{"0.5", 500, true}, {"-0.5", -500, true}, {"1e1", 10000, true}, {"1.5E-3", 2, true},
		{"", 0, false}, {"-", 0, false}, {"1.", 0, false}, {".5", 0, false}, {"1x", 0, false},
		{"0123", 0, false}, {"-0123", 0, false}, {"00", 0, false}, {"01.5", 0, false}, {"0x1p3", 0, false},
		{"99999999999999999999", 0, false}, {"1e400", 0, false},
	}
	for _, c := range cases {
		got, ok := ParseMicros([]byte(c.in))
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("ParseMicros(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestParseInt(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"7", 7, true}, {"-12", -12, true}, {"12.9", 12, true}, {"9223372036854775807", 9223372036854775807, true},
		{"", 0, false}, {"-", 0, false}, {"007", 0, false}, {"-01", 0, false}, {"12abc", 0, false}, {"1.", 0, false},
		{"9223372036854775808", 0, false},
	}
	for _, c := range cases {
		got, ok := ParseInt([]byte(c.in))
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// numberTexts are numbers as traces write them and the cases around them:
// every digit count, decimals, signs, exponents, leading zeros, overflow,
// each followed by what may come after it.
func numberTexts() [][]byte {
	var texts []string
	for n := 1; n <= 20; n++ {
		for _, d := range []byte("0159") {
			num := make([]byte, n)
			for k := range num {
				num[k] = '1' + byte((k*7)%9)
			}
			num[n-1] = d
			texts = append(texts, string(num))
		}
	}
	texts = append(texts, "0", "00", "007", "0123.5", "1.5", "1.", "1.25", "12.345", "12.3456", "12.3455", "4912346589279.000",
		"1712195495505582.988", "-3", "1e3", "1.5e2", "1-2", "..", "9223372036854775807", "99999999999999999999")
	var out [][]byte
	for _, text := range texts {
		for _, tail := range []string{",", "}", "]", " ", "\n", "x", "\"", ":", "e5,", "0123456789012345678", "\xfa",
			// Long enough for the eight-bytes-at-a-time reading.
			",                 ", "x                 ", "}\n  }, {\"ph\": ", "\xfa\xff\x00                "} {
			out = append(out, []byte(text+tail))
		}
	}
	return out
}

// checkNumberReaders holds the one-pass readers to the plain parsers:
// UintAt to strconv, MicrosAt to ScalarEnd followed by ParseMicros.
func checkNumberReaders(t *testing.T, b []byte) {
	n := 0
	for n < len(b) && n < 16 && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	gotN, got := UintAt(b, 0)
	require.Equal(t, n, gotN, "digits")
	if n > 0 {
		want, err := strconv.ParseUint(string(b[:n]), 10, 64)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	e := ScalarEnd(b, 0)
	end, ns, ok := MicrosAt(b, 0)
	wantNS, wantOK := int64(0), false
	if e >= 0 {
		wantNS, wantOK = ParseMicros(b[:e])
	}
	require.Equal(t, wantOK, ok, "MicrosAt")
	if ok {
		require.Equal(t, e, end)
		require.Equal(t, wantNS, ns)
	}
	if e < 0 {
		require.Equal(t, e, end, "MicrosAt end without a number")
	}
}

func TestNumberReaders(t *testing.T) {
	t.Parallel()
	for _, b := range numberTexts() {
		t.Run(strconv.Quote(string(b)), func(t *testing.T) {
			checkNumberReaders(t, b)
		})
	}
	_, _, ok := MicrosAt([]byte("123.4"), 0)
	require.False(t, ok, "a number at the end of the buffer may go on")
	require.Equal(t, Incomplete, ScalarEnd([]byte("123.4"), 0))
}

// FuzzLexer holds the fast readers to their byte-at-a-time definitions on
// any input: CompositeEnd, StringEnd and the number readers.
func FuzzLexer(f *testing.F) {
	f.Add([]byte(`{"a": "b\"}", "c": [1, {"d": "]"}]}`))
	f.Add([]byte(`[{"x": "\\\\"}, ["]", "["]]`))
	f.Add([]byte(`"a\"b\\"c"`))
	for _, b := range numberTexts() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		switch b[0] {
		case '{', '[':
			if got, want := CompositeEnd(b, 0), refCompositeEnd(b, 0); got != want {
				t.Fatalf("CompositeEnd(%q) = %d, want %d", b, got, want)
			}
		case '"':
			if got, want := StringEnd(b, 0), refStringEnd(b, 0); got != want {
				t.Fatalf("StringEnd(%q) = %d, want %d", b, got, want)
			}
		default:
			checkNumberReaders(t, b)
		}
	})
}
