package bench

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/sim"
)

func TestLengthsRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rule   string
		l      int
		r      float64
		lo, hi int
	}{
		{RangeSGLang, 1024, 0.8, 819, 1024}, // ⌊1024·0.8⌋ = 819
		{RangeSGLang, 50, 0.8, 40, 50},
		{RangeSGLang, 50, 1, 50, 50},
		{RangeSGLang, 3, 0.1, 1, 3},       // never below one token
		{RangeVLLM, 1024, 0.8, 204, 1844}, // ⌊1024·0.2⌋, ⌈1024·1.8⌉
		{RangeVLLM, 50, 0.1, 45, 56},      // 50·1.1 is 55.00000000000001 in floats, in Python too: ⌈⌉ = 56
		{RangeVLLM, 50, 0, 50, 50},        // r = 0: exactly L
		{RangeVLLM, 1, 0.5, 1, 2},         // ⌊0.5⌋ = 0 is raised to one token
	} {
		rng := rand.New(rand.NewPCG(1, 2))
		got := LengthsBy(tc.rule, rng, 5000, tc.l, tc.r)
		seen := map[int]bool{}
		for _, n := range got {
			require.GreaterOrEqual(t, n, tc.lo)
			require.LessOrEqual(t, n, tc.hi)
			seen[n] = true
		}
		require.True(t, seen[tc.lo] && seen[tc.hi], "both ends of [%d, %d] are drawn", tc.lo, tc.hi)
	}
}

func TestPromptsHitTokenCounts(t *testing.T) {
	t.Parallel()
	// With the simulated engine's stand-in tokenizer one word is one token,
	// so a calibrated shaper (1 per word, base 0) must hit every length.
	reqs := workload{ISL: 1024, OSL: 50, RangeRatio: 0.8, NumPrompts: 200, Seed: 3}.Requests(shaper{PerWord: 1, Calibrated: true})
	first := map[string]bool{}
	for _, r := range reqs {
		require.Equal(t, r.PromptLen, sim.CountTokens(r.Prompt))
		w, _, _ := strings.Cut(r.Prompt, " ")
		require.False(t, first[w], "request %d repeats a prefix", r.Index)
		first[w] = true
		require.GreaterOrEqual(t, r.MaxTokens, 40)
		require.LessOrEqual(t, r.MaxTokens, 50)
	}
	// The same seed gives the same workload; another seed another one.
	again := workload{ISL: 1024, OSL: 50, RangeRatio: 0.8, NumPrompts: 200, Seed: 3}.Requests(shaper{PerWord: 1})
	require.Equal(t, reqs, again)
	other := workload{ISL: 1024, OSL: 50, RangeRatio: 0.8, NumPrompts: 200, Seed: 4}.Requests(shaper{PerWord: 1})
	require.NotEqual(t, reqs[0].Prompt, other[0].Prompt)

	// Warmups, numbered apart, never share a first word with the measured
	// requests, even at a seed whose last three digits are the level's.
	warm := workload{ISL: 1024, OSL: 50, RangeRatio: 0.8, NumPrompts: 200, Seed: 3 + 500_000, FirstIndex: warmupIndex}.Requests(shaper{PerWord: 1})
	for _, r := range warm {
		w, _, _ := strings.Cut(r.Prompt, " ")
		require.False(t, first[w], "warmup %d shares its first word %q with a measured request", r.Index, w)
		require.GreaterOrEqual(t, r.Index, warmupIndex)
	}
}

func TestShaperWords(t *testing.T) {
	t.Parallel()
	// A tokenizer that spends 1.25 tokens per word plus 3 (BOS and the prefix word).
	s := shaper{Base: 3, PerWord: 1.25, Calibrated: true}
	require.Equal(t, 800, s.Words(1003))
	require.Equal(t, 1, s.Words(1), "at least one word")
	require.Equal(t, 10, shaper{}.Words(10), "uncalibrated: one word per token")
}

func TestCalibrateAgainstSim(t *testing.T) {
	t.Parallel()
	for _, endpoint := range []string{"/v1/completions", "/v1/chat/completions"} {
		t.Run(endpoint, func(t *testing.T) {
			t.Parallel()
			url, _ := startSim(t, sim.Config{TimeScale: 100})
			c := newClient(url, simModel, 4)
			c.Endpoint = endpoint
			s, err := calibrate(context.Background(), c, 1)
			require.NoError(t, err)
			require.True(t, s.Calibrated)
			require.InDelta(t, 1, s.PerWord, 1e-9)
			base := 0.0
			if strings.Contains(endpoint, "chat") {
				base = 1 // the simulated chat template counts the role as a word
			}
			require.InDelta(t, base, s.Base, 1e-9)
			// A real request of 300 tokens reports exactly 300 prompt tokens.
			reqs := workload{ISL: 300, OSL: 4, RangeRatio: 1, NumPrompts: 3, Seed: 9}.Requests(s)
			outs, _, _ := runLoad(context.Background(), c, fromSlice(reqs), load{MaxConcurrency: 3})
			for _, o := range outs {
				require.True(t, o.OK(), o.Error)
				require.True(t, o.UsagePrompt)
				require.Equal(t, 300, o.PromptTokens)
				require.Equal(t, 4, o.OutputTokens)
				require.Equal(t, 4, o.TokenEvents, "the empty finish frame (and chat's empty first chunk) are not tokens")
			}
		})
	}
}

func TestGammaGaps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ rate, burst, wantCV float64 }{
		{10, 1, 1},   // Poisson: exponential gaps, CV 1
		{10, 4, 0.5}, // CV = 1/sqrt(shape)
		{100, 0.5, math.Sqrt2},
	} {
		g := newGapper(load{RequestRate: tc.rate, Burstiness: tc.burst, Seed: 5})
		const n = 40000
		var sum, sq float64
		for range n {
			x := g.next().Seconds()
			sum += x
			sq += x * x
		}
		mean := sum / n
		cv := math.Sqrt(sq/n-mean*mean) / mean
		require.InDelta(t, 1/tc.rate, mean, 0.03/tc.rate, "mean gap is 1/rate")
		require.InDelta(t, tc.wantCV, cv, 0.05*tc.wantCV, "coefficient of variation for burstiness %v", tc.burst)
	}
	require.Nil(t, newGapper(load{RequestRate: math.Inf(1)}), "inf: no gaps")
}

func TestRunRespectsConcurrency(t *testing.T) {
	t.Parallel()
	url, _ := startSim(t, sim.Config{TimeScale: 100})
	c := newClient(url, simModel, 8)
	reqs := workload{ISL: 16, OSL: 8, RangeRatio: 1, NumPrompts: 24, Seed: 1}.Requests(shaper{PerWord: 1})
	outs, start, end := runLoad(context.Background(), c, fromSlice(reqs), load{MaxConcurrency: 3})
	require.Len(t, outs, 24)
	// At no instant were more than 3 requests in flight.
	type ev struct {
		at    time.Time
		delta int
	}
	var evs []ev
	for _, o := range outs {
		require.True(t, o.OK(), o.Error)
		evs = append(evs, ev{o.Start, 1}, ev{o.Start.Add(o.E2EL), -1})
	}
	maxIn, in := 0, 0
	for len(evs) > 0 {
		k := 0
		for i := range evs {
			if evs[i].at.Before(evs[k].at) || evs[i].at.Equal(evs[k].at) && evs[i].delta < evs[k].delta {
				k = i
			}
		}
		in += evs[k].delta
		maxIn = max(maxIn, in)
		evs = append(evs[:k], evs[k+1:]...)
	}
	require.LessOrEqual(t, maxIn, 3)
	require.True(t, end.After(start))
}

// TestRangeRuleRecorded: the rule that read --random-range-ratio is in
// every level's result, and vLLM's rule refuses r = 1 (lengths 0 to 2L).
func TestRangeRuleRecorded(t *testing.T) {
	t.Parallel()
	url, _ := startSim(t, sim.Config{TimeScale: 50})
	for _, rule := range []string{"", RangeVLLM} {
		res, err := Sweep(context.Background(), SweepConfig{
			URL: url, Model: simModel, Shaper: &shaper{PerWord: 1}, ISL: 16, OSL: 4, RangeRatio: 0.5, RangeRule: rule,
			Concurrencies: []int{2}, OutDir: t.TempDir(),
		})
		require.NoError(t, err)
		lv, err := results.LoadLevel(res.Levels[0].ResultFile)
		require.NoError(t, err)
		require.Equal(t, cmp.Or(rule, RangeSGLang), lv.RandomRangeRule)
	}
	_, err := Sweep(context.Background(), SweepConfig{URL: url, ISL: 16, OSL: 4, RangeRatio: 1, RangeRule: RangeVLLM, Concurrencies: []int{1}})
	require.ErrorContains(t, err, "random range ratio 1 under vLLM's rule")
}
