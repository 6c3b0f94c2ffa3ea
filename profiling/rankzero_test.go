package profiling

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/internal/units"
	"github.com/profile-model/profile-model/inventory/roofline"
	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing/kineto"
)

// writeCPUOnly writes a trace with CPU spans and no GPU activity, as
// vLLM's API process does.
func writeCPUOnly(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	w, err := kineto.NewWriter(f, kineto.WriterOptions{Gzip: true})
	require.NoError(t, err)
	for i := range 5 {
		require.NoError(t, w.WriteEvent(&kineto.Event{Ph: 'X', Cat: "user_annotation", Name: "async_llm.generate", PID: 1, TID: 1,
			TS: 1_000_000_000 + int64(i)*1_000_000, Dur: units.Micros(300)}))
	}
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())
}

// TestAnalyseLevelRankZero: rank 0 is the first trace with GPU kernels,
// whatever sorts first (a CPU-only front-end trace whose name sorts before
// the worker's gave empty tables and batch size 0); a level with no GPU
// kernel in any trace is an error, never ok.
func TestAnalyseLevelRankZero(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	front := filepath.Join(dir, "host_1.async_llm.1.pt.trace.json.gz")
	writeCPUOnly(t, front)
	worker := filepath.Join(dir, "vllm-instance-0-rank-0.1.pt.trace.json.gz")
	f, err := os.Create(worker)
	require.NoError(t, err)
	_, err = synth.Generate(context.Background(), f, synth.GenerateOptions{BS: 4, DecodeSteps: 6, PrefillSteps: 1, Layers: 4, Gzip: true})
	require.NoError(t, err)
	require.NoError(t, f.Close())

	run := results.Run(t.TempDir())
	var li results.LevelInfo
	bs, warns, err := analyseLevel(context.Background(), run, 4, []string{front, worker}, 0, roofline.Level{TP: 1}, &li)
	require.NoError(t, err)
	require.Equal(t, 4, bs)
	require.Equal(t, []string{worker}, li.Traces[:1], "rank 0 is the worker's trace")
	require.True(t, diag.Has(warns, diag.Trace), "the trace without kernels is named")

	_, _, err = analyseLevel(context.Background(), run, 8, []string{front}, 0, roofline.Level{TP: 1}, &results.LevelInfo{})
	require.ErrorContains(t, err, "no GPU kernel in the level's traces (host_1.async_llm.1.pt.trace.json.gz)")
}
