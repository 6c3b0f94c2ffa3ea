package diff

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
)

func TestClientMetricsGPU(t *testing.T) {
	t.Parallel()
	gpu := func(w, jpt, tpj, thr float64) []float64 {
		return []float64{w, w + 100, 0, jpt, 10 * jpt, tpj, thr, 0, 0, 0, 0}
	}
	a := results.SummaryRow{Conc: 8, GPU: gpu(600, 0.5, 2, 0)}
	b := results.SummaryRow{Conc: 8, GPU: gpu(700, 0.4, 2.5, 3)}
	byUnit := map[string]Metric{}
	for _, m := range clientMetrics(a, b) {
		byUnit[m.Unit] = m
	}
	require.Equal(t, Pair{A: 600, B: 700, Delta: 100, Pct: ptr(16.67)}, byUnit["W-mean"].Pair)
	require.Equal(t, 0.4, byUnit["J/token"].Pair.B)
	require.True(t, byUnit["tok/J"].HigherIsBetter)
	require.False(t, byUnit["J/token"].HigherIsBetter)
	require.Equal(t, 3.0, byUnit["throttle-s"].Pair.B)

	// One side without telemetry: no GPU metric at all.
	for _, m := range clientMetrics(a, results.SummaryRow{Conc: 8}) {
		require.NotContains(t, []string{"W-mean", "J/token", "tok/J"}, m.Unit)
	}

	// The benchmark files carry them, and the per-role energy.
	rr := &RunReport{Levels: []LevelReport{{Conc: 8, Client: clientMetrics(a, b),
		Energy: []Metric{{Name: "MoE experts", Unit: "moe-experts-mJ/token", Pair: pair(300, 250)}}}}}
	ra, rb := rr.BenchResults()
	units := map[string]float64{}
	for _, m := range rb[0].Metrics {
		units[m.Unit] = m.Value
	}
	require.Equal(t, 0.4, units["J/token"])
	require.Equal(t, 250.0, units["moe-experts-mJ/token"])
	require.Len(t, ra[0].Metrics, len(rb[0].Metrics))
}

func ptr(v float64) *float64 { return &v }
