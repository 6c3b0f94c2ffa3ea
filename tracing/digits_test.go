package tracing

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// numberTexts are numbers as traces write them and the cases around them:
// every digit count, decimals, signs, exponents, overflow.
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
	texts = append(texts, "0", "00", "007", "1.5", "1.", "1.25", "12.345", "12.3456", "12.3455", "4912346589279.000",
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

// checkNumberReaders holds the fast paths' number readers to the plain
// parsers: uintAt to strconv, intAt and microsAt to number followed by
// parseInt or parseMicros.
func checkNumberReaders(t *testing.T, b []byte) {
	n := 0
	for n < len(b) && n < 16 && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	gotN, got := uintAt(b, 0)
	require.Equal(t, n, gotN, "digits")
	require.Equal(t, n, digitCount(b, 0), "digitCount")
	if n > 0 {
		want, err := strconv.ParseUint(string(b[:n]), 10, 64)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	e := number(b, 0)
	end, v, ok := intAt(b, 0)
	require.Equal(t, e >= 0, ok, "intAt")
	if ok {
		wantV, _ := parseInt(b[:e])
		require.Equal(t, e, end)
		require.Equal(t, wantV, v)
	}
	end, ns, ok := microsAt(b, 0)
	wantNS, wantOK := int64(0), false
	if e >= 0 {
		wantNS, wantOK = parseMicros(b[:e])
	}
	require.Equal(t, wantOK, ok, "microsAt")
	if ok {
		require.Equal(t, e, end)
		require.Equal(t, wantNS, ns)
	}
}

func TestNumberReaders(t *testing.T) {
	t.Parallel()
	for _, b := range numberTexts() {
		t.Run(strconv.Quote(string(b)), func(t *testing.T) {
			checkNumberReaders(t, b)
		})
	}
}

func FuzzNumberReaders(f *testing.F) {
	for _, b := range numberTexts() {
		f.Add(b)
	}
	f.Fuzz(checkNumberReaders)
}
