package analysis_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/modelconfig"
	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/inventory/roofline"
	"github.com/profile-model/profile-model/profiling/sim"
	"github.com/profile-model/profile-model/profiling/synth"
)

// The level file carries the speed of light of its decode steps and the
// measured step as a multiple of it.
func TestLevelFileSpeedOfLight(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.json")
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = synth.Generate(context.Background(), f, synth.GenerateOptions{DecodeSteps: 30, BS: 8, PythonPerStep: -1})
	require.NoError(t, err)
	require.NoError(t, f.Close())
	cfg, err := modelconfig.Parse(sim.ModelConfig)
	require.NoError(t, err)
	arch := cfg.Architecture()
	r, err := analysis.Load(context.Background(), path, analysis.Options{Arch: &arch})
	require.NoError(t, err)
	roofs := r.AddRoofline(roofline.Level{Arch: &arch, TP: 1, KVCache: "fp8", Context: 1049})
	lf := analysis.NewLevelFile(r)
	lf.SetRoofline(roofs)

	s := lf.SpeedOfLight
	require.NotNil(t, s, lf.SpeedOfLightNote)
	require.Positive(t, lf.StepTime.StepUS)
	require.Equal(t, lf.StepTime.StepUS, s.MeasuredUS)
	require.InDelta(t, s.MeasuredUS/s.StepUS, s.Multiple, 1e-9)
	// Batch 8 of MiniMax-M2.5 on an MI355X reads far more bytes than it
	// computes at the peaks: memory-bound, and no sim step beats it.
	require.Equal(t, "memory", s.Bound)
	require.Greater(t, s.Multiple, 1.0)
	b, _ := analysis.BatchOf(lf)
	require.InDelta(t, b.Real, s.Batch, 1e-9, "the same token-weighted batch as the waterfall's")

	// Without a model config the note says why.
	lf2 := analysis.NewLevelFile(r)
	lf2.SetRoofline(r.AddRoofline(roofline.Level{}))
	require.Nil(t, lf2.SpeedOfLight)
	require.Contains(t, lf2.SpeedOfLightNote, "config.json")
}
