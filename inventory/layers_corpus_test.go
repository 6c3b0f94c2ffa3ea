package inventory

import (
	"context"
	"testing"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/tracing"
	"github.com/stretchr/testify/require"
)

// Robust mode on real decode traces, without being told the model.
func TestRobustLayersCorpus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file     string
		layers   int
		perLayer []int
		check    func(t *testing.T, lt *LayerTable)
	}{
		{
			// Qwen3-8B: 36 layers of 15 kernels; one layer runs an extra
			// elementwise kernel on a second stream, which must be reported.
			file: "sglang-qwen3-8b-decode-mi300x.json.gz", layers: 36, perLayer: []int{15},
			check: func(t *testing.T, lt *LayerTable) {
				require.Len(t, lt.Irregular, 1)
				irr := lt.Irregular[0]
				require.Equal(t, 16, irr.Kernels)
				require.Len(t, irr.Diffs, 1)
				require.Equal(t, "extra", irr.Diffs[0].Op)
				require.Contains(t, irr.Diffs[0].Kernel, "vectorized_elementwise_kernel")
				require.NotEqual(t, lt.Positions[0].Stream, irr.Diffs[0].Stream, "the extra kernel ran on another stream")
				for _, p := range lt.Positions {
					require.Equal(t, 36, p.Count, "every layer contributes to position %d", p.Pos)
				}
			},
		},
		{
			// 24 layers alternating sliding-window (17 kernels) and full
			// attention (18: a 3-D attention kernel plus a segment reduce).
			file: "vllm-decode-fullgraph-mi300x.json.gz", layers: 24, perLayer: []int{17, 18},
			check: func(t *testing.T, lt *LayerTable) {
				kinds := map[int][]string{}
				for _, p := range lt.Positions {
					kinds[p.LayerKind] = append(kinds[p.LayerKind], p.Kernel)
				}
				require.Contains(t, kinds[0], "kernel_unified_attention_2d")
				require.Contains(t, kinds[1], "kernel_unified_attention_3d")
				require.Contains(t, kinds[1], "reduce_segments")
				// Layer 0 has no residual copy before its attention: reported.
				require.Len(t, lt.Irregular, 1)
				require.Equal(t, 0, lt.Irregular[0].Layer)
				require.Equal(t, "missing", lt.Irregular[0].Diffs[0].Op)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			tr, err := tracing.Load(context.Background(), corpus.Path(t, "traces/"+tt.file), tracing.Options{})
			require.NoError(t, err)
			lt, err := DecodeLayers(context.Background(), tr, LayerOptions{})
			require.NoError(t, err)
			require.Equal(t, ModeRobust, lt.Mode)
			require.Equal(t, tt.layers, lt.Layers)
			require.Equal(t, tt.perLayer, lt.KernelsPerLayer)
			tt.check(t, lt)
			// With the model's layer count given, the same answer and no warning.
			lt2, err := DecodeLayers(context.Background(), tr, LayerOptions{NumLayers: tt.layers})
			require.NoError(t, err)
			require.Equal(t, lt.Positions, lt2.Positions)
			require.Empty(t, lt2.Warnings)
		})
	}
}

func TestPrefillLayersCorpus(t *testing.T) {
	t.Parallel()
	tr, err := tracing.Load(context.Background(), corpus.Path(t, "traces/sglang-qwen3-8b-prefilldecode-mi300x.json.gz"), tracing.Options{})
	require.NoError(t, err)
	lt, err := PrefillLayers(context.Background(), tr, LayerOptions{})
	require.NoError(t, err)
	require.Equal(t, 36, lt.Layers, "Qwen3-8B has 36 layers in prefill too")
	require.Len(t, lt.KernelsPerLayer, 1)
}

// A Hugging Face forward pass has no engine steps, only ProfilerStep#N; the
// layers of those steps are found all the same (Qwen1.5-0.5B: 24 layers).
func TestProfilerStepLayersCorpus(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"qwen1.5-0.5b-forward-mi300x.json.gz", "qwen1.5-0.5b-forward-h100.json.gz"} {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			tr, err := tracing.Load(context.Background(), corpus.Path(t, "traces/"+f), tracing.Options{})
			require.NoError(t, err)
			lt, err := StepLayers(context.Background(), tr, []tracing.StepKind{tracing.StepProfiler}, LayerOptions{})
			require.NoError(t, err)
			t.Logf("%s: %d steps, layers %v, kernels per layer %v, %d irregular, warnings %v", f, lt.Steps, lt.LayersHist, lt.KernelsPerLayer, len(lt.Irregular), lt.Warnings)
			require.Equal(t, 24, lt.Layers)
		})
	}
}
