package tokenizer

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// benchTokenizer is the real tokenizer named by PROFILE_MODEL_TOKENIZER, else
// the generated fixture.
func benchTokenizer(b *testing.B) *Tokenizer {
	b.Helper()
	if p := os.Getenv("PROFILE_MODEL_TOKENIZER"); p != "" {
		tok, err := Load(p)
		if err != nil {
			b.Fatal(err)
		}
		return tok
	}
	tok, _, _ := fixture(b, fixtureOpts{Split: true, Normalizer: "NFC", BOS: true})
	return tok
}

// benchPrompt is a bench-style prompt: a distinct first word, then common
// words, grown until it counts at least tokens tokens.
func benchPrompt(tok *Tokenizer, tokens int) string {
	common := strings.Fields(`the of and to in is was for on are with as his they at be this from have or one had by
word but not what all were when we there can an your which their said if do will each about how up out them
then she many some so these would other into has more her two like him see time could no make than first been`)
	rng := rand.New(rand.NewPCG(9, 10))
	var sb strings.Builder
	sb.WriteString("r1z2k9")
	for n := 0; ; n++ {
		if n%256 == 0 && tok.Count(sb.String()) >= tokens {
			return sb.String()
		}
		sb.WriteByte(' ')
		sb.WriteString(common[rng.IntN(len(common))])
	}
}

// BenchmarkCount counts an 8k-token prompt: "warm" with the per-word cache
// filled (the bench's case: prompts reuse a few hundred words), "uncached"
// with it emptied before each count.
func BenchmarkCount(b *testing.B) {
	tok := benchTokenizer(b)
	prompt := benchPrompt(tok, 8192)
	b.Logf("prompt: %d bytes, %d tokens", len(prompt), tok.Count(prompt))
	b.Run("warm", func(b *testing.B) {
		b.SetBytes(int64(len(prompt)))
		b.ReportAllocs()
		for b.Loop() {
			tok.Count(prompt)
		}
	})
	b.Run("uncached", func(b *testing.B) {
		b.SetBytes(int64(len(prompt)))
		b.ReportAllocs()
		for b.Loop() {
			tok.model.cache.Clear()
			tok.model.cacheSize.Store(0)
			tok.Count(prompt)
		}
	})
}

// BenchmarkLoad loads the real tokenizer named by PROFILE_MODEL_TOKENIZER.
func BenchmarkLoad(b *testing.B) {
	p := os.Getenv("PROFILE_MODEL_TOKENIZER")
	if p == "" {
		b.Skip("set PROFILE_MODEL_TOKENIZER to a real tokenizer.json to time Load")
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(p); err != nil {
			b.Fatal(err)
		}
	}
}
