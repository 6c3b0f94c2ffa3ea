package analysis

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/modelconfig"
	"github.com/profile-model/profile-model/tracing"
)

// TestAnalyzeHybridWithConfig: the model config's layer kinds reach the
// layer finder through the analysis options (as --config and a run's
// config give them): a Qwen3-Next-like decode step, one kernel name per
// part, reads as 48 layers named by the config's kinds.
func TestAnalyzeHybridWithConfig(t *testing.T) {
	t.Parallel()
	cfg, err := modelconfig.Load(filepath.Join("..", "..", "fixtures", "models", "qwen3-next-80b-a3b-instruct", "config.json"))
	require.NoError(t, err)
	arch := cfg.Architecture()
	moe := []string{"rms_norm_kernel", "router_gemm_nvjet", "topkGatingSoftmax", "moe_align_block_size_kernel", "fused_moe_kernel", "act_and_mul_kernel", "fused_moe_kernel", "moe_sum_kernel"}
	gdn := append([]string{"rms_norm_kernel", "in_proj_qkvz_nvjet", "in_proj_ba_nvjet", "_causal_conv1d_update_kernel", "fused_recurrent_gated_delta_rule_fwd_kernel", "out_proj_nvjet"}, moe...)
	full := append([]string{"rms_norm_kernel", "qkv_proj_nvjet", "rotary_embedding_kernel", "reshape_and_cache_flash_kernel", "flash_fwd_splitkv_kernel", "o_proj_nvjet"}, moe...)
	tr := &tracing.Trace{}
	var now int64
	for range 2 {
		st := tracing.Step{Kind: tracing.StepDecode, Start: now}
		add := func(name string) {
			st.Kernels = append(st.Kernels, int32(len(tr.Kernels)))
			tr.AddKernel(name, tracing.Kernel{Start: now, Dur: 2000, Step: int32(len(tr.Steps)), Graph: -1})
			now += 3000
		}
		add("embedding")
		for l := range arch.Layers {
			names := gdn
			if arch.LayerKinds[l] == "full_attention" {
				names = full
			}
			for _, n := range names {
				add(n)
			}
		}
		add("final_norm")
		add("lm_head")
		st.End = now
		tr.Steps = append(tr.Steps, st)
	}
	res, err := Analyze(context.Background(), tr, Options{Parts: Layers, NumLayers: arch.Layers, Arch: &arch})
	require.NoError(t, err)
	require.Equal(t, 48, res.Decode.Layers)
	require.Equal(t, []string{"linear_attention", "full_attention"}, res.Decode.KindNames)
	require.Equal(t, []int{36, 12}, res.Decode.KindLayers)
	require.False(t, diag.Has(res.Warnings, diag.LayerCount), "warnings %v", res.Warnings)
	require.False(t, diag.Has(res.Warnings, diag.LayerKinds), "warnings %v", res.Warnings)
}
