package tracing

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// The assembly (on amd64) agrees with the portable definition, on bytes
// drawn mostly from the ones it looks for and their neighbours in ASCII.
func TestStructMasks(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("\"\\{}[]|;:zZ{ \n\x02\x7b\x5b\x5d\x7d\x3b\xfb\xdd\xa2")
	var p [64]byte
	for n := range 20000 {
		for i := range p {
			if n%2 == 0 {
				p[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				p[i] = byte(rng.IntN(256))
			}
		}
		q, bs, br := structMasks(&p)
		wq, wbs, wbr := structMasksGo(&p)
		if q != wq || bs != wbs || br != wbr {
			t.Fatalf("structMasks(%q) = %x %x %x, want %x %x %x", p, q, bs, br, wq, wbs, wbr)
		}
		for i, c := range p {
			got := [3]bool{q>>i&1 == 1, bs>>i&1 == 1, br>>i&1 == 1}
			want := [3]bool{c == '"', c == '\\', strings.IndexByte("{}[]", c) >= 0}
			if got != want {
				t.Fatalf("byte %d (%q) of %q: quote, backslash, bracket bits %v, want %v", i, c, p, got, want)
			}
		}
	}
}

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
