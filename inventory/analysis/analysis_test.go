package analysis

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/results"
)

func TestParts(t *testing.T) {
	t.Parallel()
	trace := corpus.Path(t, "traces/sglang-qwen3-8b-decode-mi300x.json.gz")
	for _, tt := range []struct {
		name                             string
		parts                            Part
		decode, prefill, compat, invento bool
	}{
		{"summary only", Summary, false, false, false, false},
		{"layers", Layers, true, false, false, false},
		{"inventory", Inventory, false, false, false, true},
		{"all", 0, true, false, true, true},
		{"compat alone", Compat, false, false, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := Load(context.Background(), trace, Options{Parts: tt.parts, Anchor: "ll4mi"})
			require.NoError(t, err)
			require.Equal(t, tt.decode, res.Decode != nil, "decode table")
			require.Equal(t, tt.prefill, res.Prefill != nil, "prefill table")
			require.Equal(t, tt.compat, res.Compat != nil, "compat table")
			require.Equal(t, tt.invento, res.Inventory != nil, "inventory")
			require.Equal(t, res.Trace.DecodeBS, res.DecodeBS())
			require.Equal(t, res.Summary.Kernels, res.Trace.Summarize().Kernels)
		})
	}
}

func TestFallbackToProfilerSteps(t *testing.T) {
	t.Parallel()
	// A plain forward pass has no engine steps: its profiler steps are tabled.
	res, err := Load(context.Background(), corpus.Path(t, "traces/qwen1.5-0.5b-forward-h100.json.gz"), Options{Parts: Layers})
	require.NoError(t, err)
	require.NotEqual(t, "decode", res.Decode.StepKind)
	require.Greater(t, res.Decode.Steps, 0)
}

func TestWriteAndTraceFacts(t *testing.T) {
	t.Parallel()
	trace := corpus.Path(t, "traces/vllm-decode-fullgraph-mi300x.json.gz")
	res, err := Load(context.Background(), trace, Options{})
	require.NoError(t, err)
	require.Nil(t, res.Compat, "no pa_bf16 in a vLLM trace")
	require.True(t, diag.Has(res.Warnings, diag.CompatAnchor))
	dir := t.TempDir()
	files := results.InDir(dir, res.DecodeBS())
	wrote, err := res.Write(files)
	require.NoError(t, err)
	require.Contains(t, wrote, files.Layer)
	require.Contains(t, wrote, files.Kernels)
	require.Contains(t, wrote, files.Categories)
	for _, f := range wrote {
		require.Equal(t, dir, filepath.Dir(f))
		st, err := os.Stat(f)
		require.NoError(t, err)
		require.Positive(t, st.Size())
	}
	bs, warns, err := TraceFacts(context.Background(), 0, []string{trace})
	require.NoError(t, err)
	require.Equal(t, res.DecodeBS(), bs)
	require.ElementsMatch(t, res.Summary.Warnings, warns)

	_, _, err = TraceFacts(context.Background(), 0, []string{filepath.Join(dir, "missing.json.gz")})
	require.Error(t, err)
}

func TestWarningsOnce(t *testing.T) {
	t.Parallel()
	r := &Result{}
	w := diag.New(diag.NoSteps, "x")
	r.addWarnings([]diag.Warning{w, w})
	r.addWarnings([]diag.Warning{w, diag.New(diag.NoLayers, "y")})
	require.Len(t, r.Warnings, 2)
}
