package trim

import (
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDigits8(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"00000000", "12345678", "99999999", "49123469", "10000000", "00000001"} {
		x := binary.LittleEndian.Uint64([]byte(s))
		want, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		require.True(t, eightDigits(x), s)
		require.Equal(t, want, digits8(x), s)
	}
	for _, s := range []string{"1234567.", "/0000000", ":0000000", "1234 678", "\x00\x00\x00\x00\x00\x00\x00\x00"} {
		require.False(t, eightDigits(binary.LittleEndian.Uint64([]byte(s))), "%q", s)
	}
}

// microsAt (the fast path) reads what parseMicros (the general one) does.
func TestMicrosAt(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text string
		ns   int64
		ok   bool
	}{
		{"4912346934909.575", 4912346934909575, true},
		{"1712195495520883.0", 1712195495520883000, true},
		{"1623142623531625", 1623142623531625000, true},
		{"0.5", 500, true},
		{"7.000", 7000, true},
		{"12.3456", 12346, true}, // rounded half up on the fourth decimal
		{"-3.5", -3500, true},
		{"1e3", 1000000, true},
		{"17121954955208831234.5", 0, false}, // does not fit int64 nanoseconds
	}
	for _, c := range cases {
		for _, term := range []string{",", "}", "\n", " "} {
			b := []byte(c.text + term)
			ns, end, ok := microsAt(b, 0)
			require.Equal(t, c.ok, ok, c.text)
			require.Equal(t, len(c.text), end, c.text)
			if ok {
				require.Equal(t, c.ns, ns, c.text)
			}
			gen, genOK := parseMicros([]byte(c.text))
			require.Equal(t, genOK, ok, c.text)
			require.Equal(t, gen, ns, c.text)
		}
	}
	_, end, _ := microsAt([]byte("123.4"), 0)
	require.Equal(t, incomplete, end, "a number at the end of the buffer may go on")
}

func TestFormatMicros(t *testing.T) {
	t.Parallel()
	require.Equal(t, "4912346934909.575", formatMicros(4912346934909575))
	require.Equal(t, "0.007", formatMicros(7))
	require.Equal(t, "-1.500", formatMicros(-1500))
}
