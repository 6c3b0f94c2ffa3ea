package units

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestString(t *testing.T) {
	for _, c := range []struct {
		d    Duration
		want string
	}{
		{0, "0.000"}, {1, "0.001"}, {999, "0.999"}, {1000, "1.000"}, {12345, "12.345"},
		{-1, "-0.001"}, {-12345, "-12.345"}, {4_000_000_000_000_123, "4000000000000.123"},
	} {
		require.Equal(t, c.want, c.d.String(), "%d ns", int64(c.d))
		back, err := ParseMicros(c.want)
		require.NoError(t, err)
		require.Equal(t, c.d, back, "round trip of %q", c.want)
	}
}

func TestParseMicros(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Duration
		bad  bool
	}{
		{in: "12", want: 12000}, {in: "12.5", want: 12500}, {in: "0.0004", want: 0},
		{in: "0.0005", want: 1}, {in: "-3.25", want: -3250}, {in: "1e3", want: 1_000_000},
		{in: "", bad: true}, {in: "abc", bad: true}, {in: "1.2.3", bad: true},
	} {
		got, err := ParseMicros(c.in)
		if c.bad {
			require.Error(t, err, "%q", c.in)
			continue
		}
		require.NoError(t, err, "%q", c.in)
		require.Equal(t, c.want, got, "%q", c.in)
	}
}

func TestJSON(t *testing.T) {
	b, err := json.Marshal(map[string]Duration{"t": 1_234_567})
	require.NoError(t, err)
	require.JSONEq(t, `{"t": 1234.567}`, string(b))
	var back map[string]Duration
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, Duration(1_234_567), back["t"])
}

func TestMicros(t *testing.T) {
	require.Equal(t, Duration(12300), Micros(12.3))
	require.Equal(t, Duration(-12300), Micros(-12.3))
	require.InDelta(t, 12.3, Micros(12.3).US(), 1e-9)
}

func ExampleDuration() {
	d := Micros(12.3456) + Micros(0.5)
	fmt.Println(d, "µs =", d.MS(), "ms")
	// Output: 12.846 µs = 0.012846 ms
}
