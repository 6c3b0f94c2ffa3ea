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
	"github.com/profile-model/profile-model/profiling/tokenizer"
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
	s, err := newTokenizerShaper(tok, "toy")
	require.NoError(t, err)
	for _, w := range s.fill {
		require.LessOrEqual(t, len(w), 3, "fill word %q is one token", w)
	}
	reqs := workload{ISL: 1024, OSL: 8, RangeRatio: 0.5, NumPrompts: 300, Seed: 5}.Requests(s)
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
	_, err := newTokenizerShaper(toyTokenizer{per: 1}, "bytes.json")
	require.ErrorContains(t, err, "bytes.json")
	require.ErrorContains(t, err, "single tokens")
}

// plusBOS is a server tokenizer that adds one token the client's tokenizer
// files do not declare (a BOS from an engine default).
type plusBOS struct{ toyTokenizer }

func (p plusBOS) Count(text string) int { return p.toyTokenizer.Count(text) + 1 }

// TestSweepWithTokenizer: against a server that counts like the tokenizer up
// to a constant (none; a chat template; an undeclared BOS), every request's
// usage.prompt_tokens is exactly its drawn length. A tokenizer the server
// disagrees with stops the run when the user named it, and falls back to
// calibration with a warning when it was found by model name.
func TestSweepWithTokenizer(t *testing.T) {
	t.Parallel()
	tok := toyTokenizer{per: 3}
	found := func(string) (tokenizer.Counter, string, string, error) { return tok, "found/tokenizer.json", "", nil }
	cases := []struct {
		name, endpoint string
		server         sim.Config
		named          bool // the user gave the tokenizer; else LoadTokenizer finds it
		method         string
		offset         int
		err            string
	}{
		{"completions", "/v1/completions", sim.Config{Tokenizer: tok}, true, "tokenizer", 0, ""},
		// <|im_start|> user \n … <|im_end|> \n <|im_start|> assistant \n: 1+2+1+1+3, BOS counted once.
		{"chat", "/v1/chat/completions", sim.Config{Tokenizer: tok}, true, "tokenizer", 8, ""},
		{"server adds a BOS", "/v1/completions", sim.Config{Tokenizer: plusBOS{tok}}, false, "tokenizer", 1, ""},
		{"found tokenizer the server disagrees with", "/v1/completions", sim.Config{Tokenizer: toyTokenizer{per: 2}}, false, "calibrated", 0, ""},
		{"named tokenizer the server disagrees with", "/v1/completions", sim.Config{Tokenizer: toyTokenizer{per: 2}}, true, "", 0, "disagrees with the server"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.server.TimeScale = 200
			url, _ := startSim(t, tc.server)
			var log bytes.Buffer
			cfg := SweepConfig{
				URL: url, Endpoint: tc.endpoint, Model: simModel, ISL: 200, OSL: 4, RangeRatio: 0.5,
				Concurrencies: []int{4}, NumPromptsMul: 8, Seed: 3, OutDir: t.TempDir(), Log: &log, Details: true,
			}
			if tc.named {
				cfg.Tokenizer, cfg.TokenizerSource = tok, "toy.json"
			} else {
				cfg.LoadTokenizer = found
			}
			res, err := Sweep(context.Background(), cfg)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.ErrorContains(t, err, "toy.json")
				require.Empty(t, res.RunDir, "nothing is written when the run cannot start")
				return
			}
			require.NoError(t, err, log.String())
			require.Equal(t, tc.method, res.Shaper.Method(), log.String())
			lv := res.Levels[0]
			require.Equal(t, statusOK, lv.Status)
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
