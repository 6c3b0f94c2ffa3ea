package inventory

import (
	"context"
	"testing"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/tracing"
	"github.com/stretchr/testify/require"
)

const (
	convKernel      = "igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x256x32_wt32x32x8_ws1x2_wr2x2_ta1x8x2x1_1x4x1x64_tb1x8x2x1_1x4x1x64"
	groupNormKernel = "void (anonymous namespace)::groupnorm_kernel_dispatch_down<__hip_bfloat16, 1024u>(unsigned int, unsigned int, long, float, bool, __hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16 const*, float*, float*, __hip_bfloat16*)"
	layerNormKernel = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)"
)

// diffusionStep is one denoising-and-decode step of a diffusion
// transformer: short transformer blocks (layer norm, attention, GEMMs,
// GELU) and then a VAE decoder of long convolutions and group norms that
// takes most of the GPU time.
func diffusionStep(blocks int) []k {
	block := []string{layerNormKernel, "Cijk_Alik_Bljk_BBS_BH_MT64x96x128", "attn_fwd", "Cijk_Alik_Bljk_BBS_BH_MT64x64x64", layerNormKernel,
		"Cijk_Alik_Bljk_BBS_BH_MT256x224x64", "triton_poi_fused_gelu_0", "Cijk_Alik_Bljk_BBS_BH_MT320x224x64"}
	var ks []k
	for b := range blocks {
		ks = append(ks, layer(block, b)...)
	}
	for i := range 40 { // the VAE: ms-long convolutions
		ks = append(ks, k{name: groupNormKernel, dur: 200_000}, k{name: convKernel, dur: int64(2_000_000 + i)})
	}
	return ks
}

// TestLayersDiffusionWarned: a diffusion-like trace's layer table covers
// a small part of its steps' GPU time and is not a language model's: both
// warnings, with their stable codes.
func TestLayersDiffusionWarned(t *testing.T) {
	t.Parallel()
	tr := makeTrace(tracing.StepProfiler, diffusionStep(24), diffusionStep(24))
	lt, err := StepLayers(context.Background(), tr, []tracing.StepKind{tracing.StepProfiler}, LayerOptions{})
	require.NoError(t, err)
	require.Equal(t, 24, lt.Layers)
	require.True(t, diag.Has(lt.Warnings, diag.LayerCoverage), "warnings %v", lt.Warnings)
	require.True(t, diag.Has(lt.Warnings, diag.NotLLM), "warnings %v", lt.Warnings)
}

// TestLayersLLMNotWarned: the decode layers of language models (dense
// split-K, hybrid) carry neither warning.
func TestLayersLLMNotWarned(t *testing.T) {
	t.Parallel()
	dense := []string{nvNorm, nvGEMMSplit, nvSplitKRed, nvRoPE, nvKV, nvFA, nvFACombine, nvGEMMSplO, nvSplitKRed, nvNorm, nvGEMM, nvAct, nvGEMMSplit, nvSplitKRed}
	gdn, full := qwenNextKinds(qwenNextTritonMoE)
	for _, tr := range []*tracing.Trace{
		makeTrace(tracing.StepDecode, step(32, dense), step(32, dense)),
		makeTrace(tracing.StepDecode, step(48, gdn, gdn, gdn, full), step(48, gdn, gdn, gdn, full)),
	} {
		lt, err := DecodeLayers(context.Background(), tr, LayerOptions{})
		require.NoError(t, err)
		require.False(t, diag.Has(lt.Warnings, diag.LayerCoverage), "warnings %v", lt.Warnings)
		require.False(t, diag.Has(lt.Warnings, diag.NotLLM), "warnings %v", lt.Warnings)
	}
}

// TestLayersCorpusNotLLM: the corpus's diffusion transformer (xDiT
// SD3.5) and video transformer (TimeSformer) are warned as not a language
// model's layers; its language model traces are not.
func TestLayersCorpusNotLLM(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		file   string
		notLLM bool
	}{
		{"xdit-sd3.5-mi300x.json.gz", true},
		{"timesformer-base-mi300x.json.gz", true},
		{"sglang-qwen3-8b-decode-mi300x.json.gz", false},
		{"vllm-decode-fullgraph-mi300x.json.gz", false},
		{"qwen1.5-0.5b-forward-h100.json.gz", false},
	} {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			tr, err := tracing.Load(context.Background(), corpus.Path(t, "traces/"+tt.file), tracing.Options{Ops: true})
			require.NoError(t, err)
			lt, err := DecodeLayers(context.Background(), tr, LayerOptions{})
			require.NoError(t, err)
			if lt.Steps == 0 {
				lt, err = StepLayers(context.Background(), tr, []tracing.StepKind{tracing.StepProfiler, tracing.StepGraph}, LayerOptions{})
				require.NoError(t, err)
			}
			require.Equal(t, tt.notLLM, diag.Has(lt.Warnings, diag.NotLLM), "warnings %v", lt.Warnings)
			require.False(t, diag.Has(lt.Warnings, diag.LayerCoverage), "warnings %v", lt.Warnings)
		})
	}
}
