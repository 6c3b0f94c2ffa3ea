package bench

import (
	"bytes"
	"context"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/sim"
)

// toyTokenizer counts like a small BPE would, differently from the
// simulator's stand-in: a BOS token, <|...|> specials whole, and every
// other whitespace-separated word ceil(len/per) tokens.
type toyTokenizer struct{ per int }

var toySpecial = regexp.MustCompile(`<\|[a-z_]+\|>`)

func (tt toyTokenizer) Count(text string) int {
	n := 1 + len(toySpecial.FindAllString(text, -1))
	for _, w := range strings.Fields(toySpecial.ReplaceAllString(text, " ")) {
		n += (len(w) + tt.per - 1) / tt.per
	}
	return n
}

func TestTokenizerShaperExactLengths(t *testing.T) {
	t.Parallel()
	tok := toyTokenizer{per: 3}
	s, err := NewTokenizerShaper(tok, "toy")
	require.NoError(t, err)
	for _, w := range s.fill {
		require.LessOrEqual(t, len(w), 3, "fill word %q is one token", w)
	}
	reqs := Workload{ISL: 1024, OSL: 8, RangeRatio: 0.5, NumPrompts: 300, Seed: 5}.Requests(s)
	lens := map[int]bool{}
	for _, r := range reqs {
		require.Equal(t, r.PromptLen, tok.Count(r.Prompt), "request %d", r.Index)
		lens[r.PromptLen] = true
	}
	require.Greater(t, len(lens), 100, "lengths are drawn, not all the same")

	// Offset: the server adds a template; prompts leave room for it.
	s.Offset = 7
	rng := rand.New(rand.NewPCG(1, 2))
	require.Equal(t, 500-7, tok.Count(s.Prompt(rng, 1, 0, 500)))
	// Below what the distinct first word takes, the first word alone.
	p := s.Prompt(rng, 1, 123456, 1)
	require.Equal(t, prefixWord(1, 123456), p)
}

func TestTokenizerShaperRefusesAWordSplitter(t *testing.T) {
	t.Parallel()
	// Two tokens per byte: no word is a single token.
	_, err := NewTokenizerShaper(toyTokenizer{per: 1}, "bytes.json")
	require.ErrorContains(t, err, "bytes.json")
	require.ErrorContains(t, err, "single tokens")
}

// TestSweepWithTokenizer: against a server that counts with the same
// tokenizer, every request's usage.prompt_tokens is exactly its drawn
// length, on both endpoints (chat: the template's tokens are measured and
// left room for); against a server counting otherwise, the sweep warns and
// calibrates instead.
func TestSweepWithTokenizer(t *testing.T) {
	t.Parallel()
	tok := toyTokenizer{per: 3}
	cases := []struct {
		name, endpoint string
		server         sim.Config
		method         string
		offset         int
	}{
		{"completions", "/v1/completions", sim.Config{Tokenizer: tok}, "tokenizer", 0},
		// <|im_start|> user \n … <|im_end|> \n <|im_start|> assistant \n: 1+2+1+1+3, BOS counted once.
		{"chat", "/v1/chat/completions", sim.Config{Tokenizer: tok}, "tokenizer", 8},
		{"other tokenizer on the server", "/v1/completions", sim.Config{}, "calibrated", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.server.TimeScale = 200
			url, _ := startSim(t, tc.server)
			var log bytes.Buffer
			res, err := Sweep(context.Background(), SweepConfig{
				URL: url, Endpoint: tc.endpoint, Model: simModel, ISL: 200, OSL: 4, RangeRatio: 0.5,
				Concurrencies: []int{4}, NumPromptsMul: 8, Seed: 3, OutDir: t.TempDir(), Log: &log,
				Tokenizer: tok, TokenizerSource: "toy.json", Details: true,
			})
			require.NoError(t, err, log.String())
			require.Equal(t, tc.method, res.Shaper.Method(), log.String())
			lv := res.Levels[0]
			require.Equal(t, StatusOK, lv.Status)
			if tc.method != "tokenizer" {
				require.Contains(t, log.String(), "warning: the tokenizer disagrees with the server")
				return
			}
			require.True(t, res.Shaper.Verified)
			require.Equal(t, tc.offset, res.Shaper.Offset)
			lens := map[int]bool{}
			for _, o := range lv.Outputs {
				require.True(t, o.UsagePrompt)
				require.Equal(t, o.PromptLen, o.PromptTokens, "request %d: the server counts exactly the drawn length", o.Index)
				lens[o.PromptLen] = true
			}
			require.Greater(t, len(lens), 5, "drawn lengths vary")
		})
	}
}
