package tracing

import (
	"math"
	"math/rand/v2"
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
