package tracing

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tokens reads a launch sequence written as letters: upper case a graph
// replay, lower case an eager kernel. The GPU idles idle[c] ns before each
// launch c.
func tokens(seq string, idle map[rune]int64) ([]launchToken, []int64) {
	toks := make([]launchToken, len(seq))
	gap := make([]int64, len(seq))
	for i, c := range seq {
		toks[i] = launchToken{id: uint64(c), first: int32(i), graph: -1}
		if c >= 'A' && c <= 'Z' {
			toks[i] = launchToken{id: 1<<63 | uint64(c), first: int32(i), graph: int32(i)}
		}
		gap[i] = idle[c]
	}
	return toks, gap
}

// cut returns the steps segmentTokens forms, as the letters of each.
func cut(seq string, toks []launchToken, gap []int64) []string {
	var runs []tokenRun
	segmentTokens(toks, gap, 0, len(toks), 0, &runs)
	var out []string
	for _, r := range runs {
		out = append(out, seq[r.lo:r.hi])
	}
	return out
}

// A decode step "xFaMaMaMaLs": input copy x, first piece F, attention a
// between the pieces, middle pieces M (one per layer, alike), last piece L,
// sampler s. A prefill "xpqpqpqs" is eager and ends with the same sampler.
func TestSegmentTokens(t *testing.T) {
	t.Parallel()
	const dec, pre = "xFaMaMaMaLs", "xpqpqpqs"
	rep := func(s string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	join := func(parts ...[]string) ([]string, string) {
		var all []string
		for _, p := range parts {
			all = append(all, p...)
		}
		return all, strings.Join(all, "")
	}

	// A prefill after every third decode step, exactly: the whole sequence
	// also repeats every three steps and a prefill, but the step is the
	// period (not the layer's "aM", nor three steps and a prefill).
	var parts [][]string
	for range 6 {
		parts = append(parts, rep(dec, 3), []string{pre})
	}
	want, seq := join(parts...)
	toks, gap := tokens(seq, nil)
	require.Equal(t, want, cut(seq, toks, gap))

	// The trace begins and ends inside steps, and the GPU idles before
	// every piece nearly as long as between steps: the prefills say where
	// steps begin, and the idle time only decides which of the launches a
	// prefill shares with the steps (x, s) belong to which.
	want, seq = join([]string{"aMaLs"}, rep(dec, 4), []string{pre}, rep(dec, 5), []string{pre}, rep(dec, 3), []string{"xFaM"})
	toks, gap = tokens(seq, map[rune]int64{'F': 100, 'M': 100, 'L': 100, 'x': 110})
	require.Equal(t, want, cut(seq, toks, gap))

	// No prefill to say it: the step begins after the host's work between
	// steps, the longest typical idle time.
	want, seq = join([]string{"aLs"}, rep(dec, 8), []string{"xFaMaM"})
	toks, gap = tokens(seq, map[rune]int64{'F': 100, 'M': 100, 'L': 100, 'x': 150})
	require.Equal(t, want, cut(seq, toks, gap))

	// One graph launch per step (a full graph): not piecewise, no period.
	seq = strings.Repeat("xGs", 10)
	toks, _ = tokens(seq, nil)
	_, ok := findPeriod(toks)
	require.False(t, ok)
}
