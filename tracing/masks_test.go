package tracing

import (
	"strings"
	"testing"
)

// The 64-byte path of compositeEnd: long values, with escapes, brackets
// in strings and deep nesting at every alignment against the blocks.
func TestCompositeEndLong(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 70)
	cases := []string{
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
		for pad := range 65 {
			b := []byte(strings.Repeat(" ", pad) + c)
			if got, want := compositeEnd(b, pad), refCompositeEnd(b, pad); got != want {
				t.Errorf("compositeEnd(%q) = %d, want %d", b, got, want)
			}
		}
	}
}
