package fleet

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A named baseline keeps the repeats' values: the U test calls a planted
// 10% rise against it as against the run directories it came from.
func TestNamedBaseline(t *testing.T) {
	level := func(vals ...float64) *Summary {
		l := LevelSummary{Conc: 8, OK: len(vals), Metrics: []MetricSummary{{Unit: "tpot-p50-ms", Median: median(vals), Values: vals}}}
		return &Summary{Sweeps: []SweepSummary{{Sweep: "s", Engine: "sim", Levels: []LevelSummary{l}}}}
	}
	dir := filepath.Join(t.TempDir(), "baselines")
	old := level(10, 9.8, 10.3, 9.9, 10.2)
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	path, err := SaveBaseline(dir, "release-1.2", old, []string{"results/old"}, now, false)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "release-1.2.json"), path)

	bf, err := LoadBaseline(dir, "release-1.2")
	require.NoError(t, err)
	require.Equal(t, "2026-12-02T12:00:00Z", bf.Created)
	require.Equal(t, []string{"results/old"}, bf.Sources)
	require.Equal(t, old.Sweeps, bf.Summary.Sweeps)

	th := DefaultThresholds
	th.LatencyRise = 5
	r := Compare(bf.Summary, level(11.0, 10.8, 11.3, 10.9, 11.2), th)
	require.True(t, r.Regressed())
	require.Less(t, *r.Findings[0].P, 0.05)
	require.Equal(t, [2]int{5, 5}, *r.Findings[0].N)

	// Kept unless replaced on purpose; names are plain; a missing one
	// lists those there are.
	_, err = SaveBaseline(dir, "release-1.2", old, nil, now, false)
	require.ErrorContains(t, err, "--force")
	_, err = SaveBaseline(dir, "release-1.2", level(1), nil, now, true)
	require.NoError(t, err)
	_, err = SaveBaseline(dir, "../x", old, nil, now, false)
	require.ErrorContains(t, err, `baseline name "../x"`)
	_, err = LoadBaseline(dir, "main")
	require.ErrorContains(t, err, `no baseline "main"`)
	require.ErrorContains(t, err, "(there: release-1.2)")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "broken.json"), []byte("{"), 0o644))
	_, err = LoadBaseline(dir, "broken")
	require.ErrorContains(t, err, "broken.json")
	names, err := Baselines(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"broken", "release-1.2"}, names)
}
