package tracing

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// The launch log gives back exactly what went in, base added: extreme and
// negative values, starts out of order, names repeated, over many chunks.
func TestLaunchLogRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	names := []string{"hipLaunchKernel", "cudaGraphLaunch", "", "hipMemcpyAsync"}
	var in []runtimeLaunch
	var l launchLog
	for i := range 300_000 {
		r := runtimeLaunch{
			Name:        names[rng.IntN(len(names))],
			Start:       rng.Int64N(1<<62) - 1<<61,
			Dur:         rng.Int64N(1 << 40),
			Correlation: rng.Int64(),
			External:    -rng.Int64N(1 << 20),
			PID:         rng.Int64N(1 << 22),
			TID:         rng.Int64(),
			Graph:       rng.IntN(2) == 0,
		}
		if i == 11 {
			r.Start, r.Dur, r.Correlation, r.PID, r.TID = math.MaxInt64, math.MinInt64, math.MinInt64, math.MaxInt64, math.MinInt64
		}
		l.add(&r)
		in = append(in, r)
	}
	require.Greater(t, len(l.chunks), 2, "the test spans several chunks")
	const base = 1_700_000_000_000_000_000
	out := l.launches(base)
	for i := range in {
		in[i].Start += base
	}
	if diff := gocmp.Diff(in, out, gocmp.AllowUnexported(runtimeLaunch{})); diff != "" {
		t.Fatalf("round trip differs (-in +out):\n%s", diff)
	}
	var empty launchLog
	require.Nil(t, empty.launches(base), "no launches: nil, as append left it")
}

// sortByStart gives what a stable sort gives: on sorted input, on nearly
// sorted input (insertion within its budget), and on shuffled input (past
// the budget), with many equal starts whose order must be kept.
func TestSortByStart(t *testing.T) {
	t.Parallel()
	type item struct{ start, order int64 }
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		name  string
		swaps int // adjacent-ish displacements; -1 shuffles
	}{{"sorted", 0}, {"nearly", 40}, {"shuffled", -1}} {
		in := make([]item, 5000)
		for i := range in {
			in[i] = item{start: int64(i / 3), order: int64(i)} // three equal starts each
		}
		switch {
		case c.swaps < 0:
			rng.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
		default:
			for range c.swaps {
				i := 5 + rng.IntN(len(in)-5)
				k := i - 1 - rng.IntN(4)
				in[i], in[k] = in[k], in[i]
			}
		}
		for i := range in {
			in[i].order = int64(i) // the order the input gives equal starts
		}
		want := slices.Clone(in)
		slices.SortStableFunc(want, func(x, y item) int { return cmp.Compare(x.start, y.start) })
		got := slices.Clone(in)
		sortByStart(got, func(x *item) int64 { return x.start })
		require.Equal(t, want, got, c.name)
	}
}
