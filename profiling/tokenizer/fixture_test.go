package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/profile-model/profile-model/profiling/tokenizer/tokenizertest"
)

// The fixtures come from package tokenizertest: a tiny byte-level BPE
// trained on some text, written in Hugging Face's schema.

type (
	trained     = tokenizertest.Trained
	fixtureOpts = tokenizertest.Options
)

// fixture trains the standard tiny tokenizer and parses it with options o.
func fixture(t testing.TB, o fixtureOpts) (*Tokenizer, trained, []byte) {
	t.Helper()
	tr := tokenizertest.Train(tokenizertest.TrainText, 300)
	data, err := tr.JSON(o)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse of the generated fixture: %v", err)
	}
	return tok, tr, data
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// bruteBPE encodes one pre-tokenised chunk by the definition of BPE: map its
// bytes, then while any adjacent pair has a merge, merge the pair of lowest
// rank (leftmost on ties).
func bruteBPE(tr trained, chunk string) []int {
	rank := map[[2]string]int{}
	for i, m := range tr.Merges {
		if _, ok := rank[m]; !ok {
			rank[m] = i
		}
	}
	syms := tokenizertest.MapBytes(chunk)
	for {
		best, at := -1, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := rank[[2]string{syms[i], syms[i+1]}]; ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		syms = slices.Replace(syms, at, at+2, syms[at]+syms[at+1])
	}
	ids := make([]int, len(syms))
	for i, s := range syms {
		ids[i] = tr.Vocab[s]
	}
	return ids
}
