package bench

import (
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// summarizeNS gives Summarize of the same values in milliseconds, bit for
// bit, on gaps of every scale, held in 8 bytes or in 4.
func TestSummarizeNS(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	pcts := []float64{0.1, 1, 25, 50, 90, 95, 99, 99.9}
	for _, tc := range []struct {
		name string
		n    int
		max  time.Duration
	}{
		{"empty", 0, time.Second},
		{"one", 1, time.Second},
		{"two", 2, time.Second},
		{"decode gaps", 10_000, 50 * time.Millisecond},
		{"with stalls", 3_000, 30 * time.Second},
		{"nanoseconds", 1_000, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := make([]time.Duration, tc.n)
			floats := make([]float64, tc.n)
			for i := range ds {
				ds[i] = time.Duration(rng.Int64N(int64(tc.max)))
				floats[i] = ms(ds[i])
			}
			want := Summarize(floats, pcts)
			if tc.max <= math.MaxUint32 {
				small := make([]uint32, len(ds))
				for i, d := range ds {
					small[i] = uint32(d)
				}
				require.Equal(t, want, summarizeNS(small, pcts))
			}
			require.Equal(t, want, summarizeNS(ds, pcts))
			require.True(t, slices.IsSorted(ds))
			// Through Aggregate: one output holding them all.
			if len(ds) > 0 {
				outs := []output{{ITL: gapsOf(ds...), OutputTokens: len(ds) + 1, TokenEvents: len(ds) + 1}}
				require.Equal(t, want, aggregate(outs, 1, time.Second, pcts, SLO{}).ITL)
			}
		})
	}
}

// gaps hold durations exactly, in order, at every scale.
func TestGaps(t *testing.T) {
	t.Parallel()
	want := []time.Duration{0, 1, 127, 128, 20 * time.Millisecond, 3 * time.Second, 90 * time.Minute, -5}
	g := gapsOf(want...)
	require.Equal(t, len(want), g.Len())
	require.Equal(t, want, slices.Collect(g.All()))
	require.Zero(t, gaps{}.Len())
	require.Empty(t, slices.Collect(gaps{}.All()))
}

// A request body reads whole, can be read again until it is let go, and
// says so after.
func TestRequestPayload(t *testing.T) {
	t.Parallel()
	p := &requestPayload{b: []byte(`{"prompt":"the of and"}`)}
	for range 2 {
		r, err := p.rewind()
		require.NoError(t, err)
		got, err := io.ReadAll(r)
		require.NoError(t, err)
		require.Equal(t, `{"prompt":"the of and"}`, string(got))
	}
	p.release()
	_, err := p.rewind()
	require.Error(t, err)
}
