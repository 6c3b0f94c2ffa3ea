package jsonmask

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
		q, bs, br := StructMasks(&p)
		wq, wbs, wbr := StructMasksGo(&p)
		if q != wq || bs != wbs || br != wbr {
			t.Fatalf("StructMasks(%q) = %x %x %x, want %x %x %x", p, q, bs, br, wq, wbs, wbr)
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
