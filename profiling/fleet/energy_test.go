package fleet

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
)

// energySummary is a one-level summary with throughput and GPU telemetry,
// four repeats spread by ±0.1% (enough for the U test).
func energySummary(jpt, watts float64) *Summary {
	l := LevelSummary{Conc: 8, OK: 4}
	for u, v := range map[string]float64{"out-tok/s": 1000, results.UnitJPerToken: jpt, results.UnitPowerMean: watts, results.UnitThrottleS: 0} {
		l.Metrics = append(l.Metrics, MetricSummary{Unit: u, Median: v, Values: []float64{v * 0.999, v, v, v * 1.001}})
	}
	return &Summary{Sweeps: []SweepSummary{{Sweep: "s", Engine: "sim", Levels: []LevelSummary{l}}}}
}

// TestCompareEnergy: with --energy-rise 10, joules per output token rising
// beyond 10% is a regression of its own kind, and the report states the
// threshold only when the results have telemetry.
func TestCompareEnergy(t *testing.T) {
	// Off by default.
	require.False(t, Compare(energySummary(0.50, 600), energySummary(5, 620), DefaultThresholds).Regressed())
	on := DefaultThresholds
	on.EnergyRise = 10
	r := Compare(energySummary(0.50, 600), energySummary(0.56, 620), on)
	require.Len(t, r.Findings, 1)
	f := r.Findings[0]
	require.Equal(t, "energy", f.Kind)
	require.Equal(t, "J/token", f.Unit)
	require.InDelta(t, 12, f.Pct, 1e-9)
	var b bytes.Buffer
	require.NoError(t, r.WriteMarkdown(&b, "old", "new"))
	require.Contains(t, b.String(), "Energy (J/token, from the GPUs' telemetry) rise > 10%.")
	require.Contains(t, b.String(), "| s | 8 | energy | J/token | 0.50 | 0.56 | +12.0% |")

	require.False(t, Compare(energySummary(0.50, 600), energySummary(0.54, 600), on).Regressed(), "+8% is within 10%")

	// Without telemetry the report reads as it did.
	b.Reset()
	require.NoError(t, Compare(summary("s", 8, 1, map[string]float64{"out-tok/s": 1}), summary("s", 8, 1, map[string]float64{"out-tok/s": 1}), on).WriteMarkdown(&b, "old", "new"))
	require.NotContains(t, b.String(), "Energy")
}

// TestMergeEnergyColumns: the merged table gains the GPU columns only when
// a level has telemetry.
func TestMergeEnergyColumns(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, energySummary(0.5, 600).WriteMarkdown(&b))
	require.Contains(t, b.String(), "| µs/layer | GPU W | J/token | s at a clock limit |")
	require.Contains(t, b.String(), "| 1000 | – | – | – | 600 | 0.50 | 0.00 |")
	b.Reset()
	require.NoError(t, summary("s", 8, 1, map[string]float64{"out-tok/s": 1}).WriteMarkdown(&b))
	require.False(t, strings.Contains(b.String(), "J/token"))
}
