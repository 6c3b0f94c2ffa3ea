package inventory

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/modelconfig"
	"github.com/profile-model/profile-model/tracing"
	"github.com/stretchr/testify/require"
)

// Qwen3-Next decode layers as vLLM runs them: Gated DeltaNet (linear
// attention) layers and gated full-attention layers, 3:1, each followed by
// the same sparse MoE block. Two MoE variants: vLLM's Triton fused MoE
// with a shared expert (a long block shared by both kinds), and
// TensorRT-LLM's routing, batched expert GEMMs and finalize as FlashInfer
// runs them on Blackwell (a short one: the kinds then look unalike).
var (
	qwenNextTritonMoE = []string{nvNorm, "nvjet_tst_32x8_64x16_1x1_v_bz_TNT", nvTopK, nvAlign, tritonMoE, nvAct, tritonMoE, nvMoESum,
		"nvjet_tst_64x8_64x16_2x1_v_bz_TNT", nvAct, "nvjet_tst_64x8_64x16_1x1_v_bz_TNN", "triton_poi_fused_add_mul_sigmoid_0"}
	qwenNextTRTMoE = []string{nvNorm, "nvjet_tst_32x8_64x16_1x1_v_bz_TNT",
		"void moe::dev::routing::routingRenormalize::routingIndicesClusterKernel<moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16, __nv_bfloat16, 10, false> >(moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16, __nv_bfloat16, 10, false>)",
		"bmm_E4m3_E4m3E4m3_Fp32_t128x8x128u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_transOut_schedS_sm100a",
		"bmm_Bfloat16_E4m3E4m3_Fp32_t128x8x128u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_transOut_schedS_sm100a",
		"void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<__nv_bfloat16, float> >(moe::dev::finalize::KernelParams<__nv_bfloat16, float>)"}
	qwenNextGDN = []string{nvNorm, "nvjet_tst_128x8_64x12_2x1_v_bz_TNT", "nvjet_tst_64x8_64x16_1x1_v_bz_TNT",
		"fused_qkvzba_split_reshape_cat_kernel", "_causal_conv1d_update_kernel", "fused_sigmoid_gating_delta_rule_update_kernel",
		"_layer_norm_fwd_1pass_kernel", "nvjet_tst_64x8_64x16_4x1_v_bz_TNN"}
	qwenNextFull = []string{nvNorm, "nvjet_tst_128x8_64x12_4x1_v_bz_TNT",
		"void vllm::rms_norm_kernel<c10::BFloat16, 8, 1>(c10::BFloat16*, c10::BFloat16 const*, long, c10::BFloat16 const*, float, int, int)",
		"void vllm::rms_norm_kernel<c10::BFloat16, 8, 1>(c10::BFloat16*, c10::BFloat16 const*, long, c10::BFloat16 const*, float, int, int)",
		nvRoPE, nvKV, nvFA, nvFACombine, "triton_poi_fused_mul_sigmoid_1", nvGEMMSplO, nvSplitKRed}
)

func qwenNextKinds(moe []string) (gdn, full []string) {
	return append(slices.Clone(qwenNextGDN), moe...), append(slices.Clone(qwenNextFull), moe...)
}

// TestLayersHybridDecode: the decode steps of a hybrid model read as its
// 48 layers of two kinds (36 linear attention, 12 full attention), with or
// without the model config, whichever MoE kernels the layers share; each
// kind starts with its own part (the token mixer's) and ends with the MLP.
func TestLayersHybridDecode(t *testing.T) {
	t.Parallel()
	cfg, err := modelconfig.Load(filepath.Join("..", "fixtures", "models", "qwen3-next-80b-a3b-instruct", "config.json"))
	require.NoError(t, err)
	arch := cfg.Architecture()
	for _, moe := range []struct {
		name    string
		kernels []string
	}{{"Triton MoE", qwenNextTritonMoE}, {"TensorRT-LLM MoE", qwenNextTRTMoE}} {
		gdn, full := qwenNextKinds(moe.kernels)
		tr := makeTrace(tracing.StepDecode, step(48, gdn, gdn, gdn, full), step(48, gdn, gdn, gdn, full), step(48, gdn, gdn, gdn, full))
		for _, withConfig := range []bool{false, true} {
			opt := LayerOptions{}
			if withConfig {
				opt = LayerOptions{NumLayers: arch.Layers, LayerKinds: arch.LayerKinds}
			}
			lt, err := DecodeLayers(context.Background(), tr, opt)
			require.NoError(t, err)
			require.Equal(t, 48, lt.Layers, "%s, config %v", moe.name, withConfig)
			require.Equal(t, []int{len(gdn), len(full)}, lt.KernelsPerLayer, moe.name)
			require.Equal(t, []string{"linear_attention", "full_attention"}, lt.KindNames)
			require.Equal(t, []int{36, 12}, lt.KindLayers)
			require.Empty(t, lt.Warnings)
			for _, irr := range lt.Irregular {
				require.Equal(t, 47, irr.Layer, "only the last layer differs (it ends with the final norm): %+v", irr)
			}
			require.Equal(t, gdn[1], lt.Positions[0].Kernel, "kind 0 starts at the linear attention's input projection")
			if moe.name != "Triton MoE" {
				// TensorRT-LLM's bmm_ expert GEMMs read as dense GEMMs
				// under today's rules: the MLP's roles wait on their labels.
				continue
			}
			lt.AssignRoles(&arch)
			byKind := map[int][]string{}
			for _, p := range lt.Positions {
				byKind[p.LayerKind] = append(byKind[p.LayerKind], p.Role)
			}
			for _, r := range []string{"in_proj 1", "in_proj 2", RoleAttention, RoleOutProj, RolePostNorm, RoleRouter, RoleInNorm} {
				require.Contains(t, byKind[0], r, "%s linear attention kind: %q", moe.name, byKind[0])
			}
			for _, r := range []string{RoleQKV, RoleQNorm, RoleKNorm, RoleRoPE, RoleKVWrite, RoleAttention, RoleOProj, "O-proj reduce", RoleRouter} {
				require.Contains(t, byKind[1], r, "%s full attention kind: %q", moe.name, byKind[1])
			}
		}
	}
}

// TestLayersHybridConfigDisagrees: a config whose layer kinds do not
// group the layers as the kernels do is warned about.
func TestLayersHybridConfigDisagrees(t *testing.T) {
	t.Parallel()
	gdn, full := qwenNextKinds(qwenNextTritonMoE)
	tr := makeTrace(tracing.StepDecode, step(48, gdn, gdn, gdn, full))
	kinds := make([]string, 48)
	for i := range kinds {
		kinds[i] = "linear_attention"
		if i%2 == 1 { // every other layer: not what the trace runs
			kinds[i] = "full_attention"
		}
	}
	lt, err := DecodeLayers(context.Background(), tr, LayerOptions{NumLayers: 48, LayerKinds: kinds})
	require.NoError(t, err)
	require.Equal(t, 48, lt.Layers)
	require.True(t, diag.Has(lt.Warnings, diag.LayerKinds), "warnings %v", lt.Warnings)
}

// TestLayersFirstDenseFromConfig: a DeepSeek-V3-like decode step, three
// dense layers before 58 MoE ones. Without the config the first dense
// layer looks like no MoE layer and is left in the prologue (60 layers);
// with it (first_k_dense_replace: 3) the step has its 61 layers, of two
// named kinds.
func TestLayersFirstDenseFromConfig(t *testing.T) {
	t.Parallel()
	cfg, err := modelconfig.Load(filepath.Join("..", "fixtures", "models", "deepseek-v3", "config.json"))
	require.NoError(t, err)
	arch := cfg.Architecture()
	attn := []string{nvNorm, nvGEMM, nvRoPE, nvKV, nvFA, nvGEMMSplO, nvNorm}
	dense := append(slices.Clone(attn), "nvjet_tst_128x8_64x12_1x1_v_bz_TNT", nvAct, "nvjet_tst_64x8_64x16_3x1_v_bz_TNN")
	moe := append(slices.Clone(attn), "nvjet_tst_32x8_64x16_1x1_v_bz_TNT", nvTopK, nvAlign, tritonMoE, nvAct, tritonMoE, nvMoESum,
		"nvjet_tst_64x8_64x16_2x1_v_bz_TNT", nvAct, "nvjet_tst_64x8_64x16_1x1_v_bz_TNN")
	mk := func() []k {
		ks := []k{{name: "embedding", dur: 3000}}
		for li := range arch.Layers {
			if li < 3 {
				ks = append(ks, layer(dense, li)...)
			} else {
				ks = append(ks, layer(moe, li)...)
			}
		}
		return append(ks, k{name: "final_norm", dur: 2500}, k{name: "lm_head", dur: 9000})
	}
	tr := makeTrace(tracing.StepDecode, mk(), mk())
	lt, err := DecodeLayers(context.Background(), tr, LayerOptions{NumLayers: arch.Layers, LayerKinds: arch.LayerKinds, MTPLayers: arch.MTPLayers})
	require.NoError(t, err)
	require.Equal(t, 61, lt.Layers)
	require.Equal(t, []int{len(dense), len(moe)}, lt.KernelsPerLayer)
	require.Equal(t, []string{"dense MLP", "MoE MLP"}, lt.KindNames)
	require.Equal(t, []int{3, 58}, lt.KindLayers)
	require.False(t, diag.Has(lt.Warnings, diag.LayerCount), "warnings %v", lt.Warnings)
	require.False(t, diag.Has(lt.Warnings, diag.LayerKinds), "warnings %v", lt.Warnings)

	lt, err = DecodeLayers(context.Background(), tr, LayerOptions{})
	require.NoError(t, err)
	require.Equal(t, 60, lt.Layers, "without the config the first dense layer is taken for the prologue")
}
