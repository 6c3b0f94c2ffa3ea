package synth

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// samples meets the statistics a compatible table prints, to one decimal,
// with every value inside [min, max].
func TestSamplesMeetPrintedStats(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                string
		n                   int
		mean, std, min, max float64
	}{
		{"narrow", 793, 10.2, 0.6, 8.8, 13.0},
		{"one far outlier", 2501, 5.6, 2.8, 4.3, 92.8},
		{"no spread", 50, 5.0, 0.0, 5.0, 5.0},
		{"wide", 12680, 180.0, 12.5, 150.1, 260.7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := samples(tt.n, tt.mean, tt.std, tt.min, tt.max)
			require.Len(t, s, tt.n)
			var sum float64
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, v := range s {
				us := float64(v) / 1000
				sum += us
				lo, hi = min(lo, us), max(hi, us)
			}
			mean := sum / float64(tt.n)
			var ss float64
			for _, v := range s {
				d := float64(v)/1000 - mean
				ss += d * d
			}
			std := math.Sqrt(ss / float64(tt.n-1))
			require.InDelta(t, tt.mean, mean, 0.01)
			require.InDelta(t, tt.std, std, 0.01)
			require.InDelta(t, tt.min, lo, 0.001)
			require.InDelta(t, tt.max, hi, 0.001)
		})
	}
}
