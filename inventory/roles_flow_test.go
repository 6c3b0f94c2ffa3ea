package inventory

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/profile-model/profile-model/internal/modelconfig"
	"github.com/profile-model/profile-model/tracing"
	"github.com/stretchr/testify/require"
)

// Kernel names as the libraries write them in real decode traces (the
// libraries' own naming; arguments shortened where they do not matter).
const (
	nvNorm      = "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, c10::BFloat16*, c10::BFloat16 const*, float, int, int)"
	nvGEMMSplit = "nvjet_tst_64x8_64x16_4x1_v_bz_splitK_TNT"
	nvGEMMSplO  = "nvjet_tst_64x8_64x16_2x1_v_bz_splitK_TNN"
	nvGEMM      = "nvjet_tst_128x8_64x12_4x1_v_bz_TNT"
	nvSplitKRed = "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, true, false, false>(cublasLt::cublasSplitKParams<float>, float const*, __nv_bfloat16 const*, __nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, float const*, __nv_bfloat16*, void*, long, float*, int*)"
	nvRoPE      = "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)"
	nvKV        = "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, long, long, long, long, int, int, int, float const*, float const*)"
	nvFA        = "void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, false, false, false, false, true, true, false, false>(Flash_fwd_params)"
	nvFACombine = "void flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, 4, 2, false>(Flash_fwd_params)"
	nvAct       = "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)"
	cutGEMM     = "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)"
	cutSplitK   = "void cutlass::Kernel<cutlass::reduction::kernel::ReduceSplitK<cutlass::MatrixShape<4, 128>, cutlass::epilogue::thread::LinearCombination<cutlass::bfloat16_t, 8, float, float>, cutlass::reduction::thread::ReduceAdd<float, float, 4>, 4> >(cutlass::reduction::kernel::ReduceSplitK<cutlass::MatrixShape<4, 128>, cutlass::epilogue::thread::LinearCombination<cutlass::bfloat16_t, 8, float, float>, cutlass::reduction::thread::ReduceAdd<float, float, 4>, 4>::Params)"
	nvTopK      = "void vllm::moe::topkGatingSoftmax<8, 128, 4, 16, 32, int, float, (vllm::moe::ScoringFunc)0>(float const*, bool const*, float*, int, int*, int*, int, int, int, float const*)"
	nvAlign     = "void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, int, unsigned long, int*, int)"
	tritonMoE   = "fused_moe_kernel"
	nvMoESum    = "void vllm::moe::moe_sum_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, int)"

	// hipBLASLt (Tensile) GEMMs with global split-U and their reduction
	// (_PostGSU), paged attention and its reduce as vLLM/aiter run them.
	amdGEMMGSU = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x16x256_MI16x16x1_SN_LDSB1_AFC1_GRVWA8_GRVWB8_GSU8_GSUAMB_ISA942_IU1_K1_MIWT1_1_PGR2_PLR1_SS1_SVW8_VWA8_VWB1_WS64_WG16_4_4"
	amdGEMM    = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x32x64_MI16x16x1_SN_LDSB1_AFC1_GRVWA8_GRVWB8_GSU1_ISA942_IU1_K1_MIWT2_1_PGR2_PLR1_SS1_SVW8_VWA8_VWB1_WS64_WG32_8_1"
	amdPostGSU = "Cijk_SS_BiasS_HAS_ScaleAlphaVec_PostGSU16_VW1"
	amdPA      = "void paged_attention_ll4mi_QKV_mfma16_kernel<__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0, __hip_bfloat16, 256, 128, 256, true, 4>(__hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16 const*, int, float, int const*, int const*, int const*, int, float const*, int, int, int, float*, float*, __hip_bfloat16*, __hip_bfloat16*, int, float const*, float const*, float const*)"
	amdPARed   = "void paged_attention_ll4mi_reduce_kernel<__hip_bfloat16, __hip_bfloat16, 128, 128, 256, 1>(__hip_bfloat16*, float const*, float const*, __hip_bfloat16 const*, int const*, int const*, int, float const*)"
	amdKV      = "void vllm::reshape_and_cache_kernel<__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0>(__hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16*, __hip_bfloat16*, long const*, int, int, int, int, int, int, float const*, float const*)"

	// SGLang on MI300X: aiter's fused add-RMSNorm, sgl-kernel's
	// activation and KV store (names from the corpus's SGLang Qwen3-8B
	// trace), Triton fused MoE and SGLang's Triton sum-reduce.
	sglNorm   = "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib"
	sglAct    = "_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_RKS3_EXadL_Z4siluIS2_ES3_S5_EEEEvPS3_PS4_i"
	sglKV     = "void (anonymous namespace)::store_kvcache<2048l>(__hip_bfloat16*, __hip_bfloat16*, __hip_bfloat16 const*, __hip_bfloat16 const*, long const*, long, long, long, long)"
	sglMoESum = "_moe_sum_reduce_kernel"

	// Triton (SGLang's FP8 block GEMM and Triton attention backend).
	tritonFP8GEMM = "_w8a8_block_fp8_matmul"
	tritonAttn    = "kernel_unified_attention_2d"
	tritonAttnRed = "reduce_segments"
)

// classified builds a one-kind table of real kernel names, categorised by
// the built-in rules as the layers command does.
func classified(names ...string) *LayerTable {
	r := DefaultRules()
	lt := &LayerTable{}
	for i, n := range names {
		c := r.Classify(n)
		lt.Positions = append(lt.Positions, Position{Pos: i, ShortName: c.ShortName, Kernel: n, Category: c.Category})
	}
	return lt
}

// TestRolesDataFlow names the positions of decode layers of dense and MoE
// models as vLLM, SGLang and ATOM run them, on both vendors, with and
// without split-K GEMMs: a split-K reduce joins the GEMM it finishes and
// takes no GEMM role; the activation between two GEMMs makes them gate_up
// and down; QKV feeds attention, O-proj follows it.
func TestRolesDataFlow(t *testing.T) {
	t.Parallel()
	type pos struct{ name, role string }
	tests := []struct {
		name   string
		arch   *modelconfig.Architecture
		layers []pos
	}{
		{"vLLM dense, cuBLAS split-K (H100)", nil, []pos{
			{nvNorm, RoleInNorm}, {nvGEMMSplit, RoleQKV}, {nvSplitKRed, "QKV reduce"}, {nvRoPE, RoleRoPE}, {nvKV, RoleKVWrite},
			{nvFA, RoleAttention}, {nvFACombine, RoleAttnRed}, {nvGEMMSplO, RoleOProj}, {nvSplitKRed, "O-proj reduce"},
			{nvNorm, RolePostNorm}, {nvGEMM, RoleGateUp}, {nvAct, RoleAct}, {nvGEMMSplit, RoleDown}, {nvSplitKRed, "down reduce"}}},
		{"vLLM dense, split-K only on QKV and down", nil, []pos{
			{nvGEMMSplit, RoleQKV}, {nvSplitKRed, "QKV reduce"}, {nvRoPE, RoleRoPE}, {nvKV, RoleKVWrite},
			{nvFA, RoleAttention}, {nvFACombine, RoleAttnRed}, {nvGEMM, RoleOProj},
			{nvNorm, RolePostNorm}, {nvGEMM, RoleGateUp}, {nvAct, RoleAct}, {nvGEMMSplit, RoleDown}, {nvSplitKRed, "down reduce"}, {nvNorm, RoleInNorm}}},
		{"vLLM dense, no split-K", nil, []pos{
			{nvNorm, RoleInNorm}, {nvGEMM, RoleQKV}, {nvRoPE, RoleRoPE}, {nvKV, RoleKVWrite}, {nvFA, RoleAttention},
			{nvGEMM, RoleOProj}, {nvNorm, RolePostNorm}, {nvGEMM, RoleGateUp}, {nvAct, RoleAct}, {nvGEMM, RoleDown}}},
		{"CUTLASS split-K", nil, []pos{
			{nvNorm, RoleInNorm}, {cutGEMM, RoleQKV}, {cutSplitK, "QKV reduce"}, {nvRoPE, RoleRoPE}, {nvKV, RoleKVWrite}, {nvFA, RoleAttention},
			{cutGEMM, RoleOProj}, {cutSplitK, "O-proj reduce"}, {nvNorm, RolePostNorm}, {cutGEMM, RoleGateUp}, {nvAct, RoleAct}, {cutGEMM, RoleDown}, {cutSplitK, "down reduce"}}},
		{"vLLM dense on MI300X, hipBLASLt global split-U", nil, []pos{
			{nvNorm, RoleInNorm}, {amdGEMMGSU, RoleQKV}, {amdPostGSU, "QKV reduce"}, {nvRoPE, RoleRoPE}, {amdKV, RoleKVWrite},
			{amdPA, RoleAttention}, {amdPARed, RoleAttnRed}, {amdGEMM, RoleOProj}, {nvNorm, RolePostNorm},
			{amdGEMM, RoleGateUp}, {nvAct, RoleAct}, {amdGEMMGSU, RoleDown}, {amdPostGSU, "down reduce"}}},
		{"SGLang dense, Triton attention and FP8 GEMMs", nil, []pos{
			{tritonFP8GEMM, RoleQKV}, {nvRoPE, RoleRoPE}, {nvKV, RoleKVWrite}, {tritonAttn, RoleAttention}, {tritonAttnRed, RoleAttnRed},
			{tritonFP8GEMM, RoleOProj}, {nvNorm, RolePostNorm}, {tritonFP8GEMM, RoleGateUp}, {nvAct, RoleAct}, {tritonFP8GEMM, RoleDown}, {nvNorm, RoleInNorm}}},
		{"vLLM MoE, split-K router and shared expert", &modelconfig.Architecture{MoE: true, Experts: 128, TopK: 8, SharedIntermediate: 512}, []pos{
			{nvNorm, RoleInNorm}, {nvGEMMSplit, RoleQKV}, {nvSplitKRed, "QKV reduce"}, {nvRoPE, RoleRoPE}, {nvKV, RoleKVWrite}, {nvFA, RoleAttention},
			{nvGEMM, RoleOProj}, {nvNorm, RolePostNorm}, {nvGEMMSplit, RoleRouter}, {nvSplitKRed, "router reduce"}, {nvTopK, RoleTopK}, {nvAlign, RoleSort},
			{tritonMoE, RoleGateUp}, {nvAct, RoleAct}, {tritonMoE, RoleDown}, {nvMoESum, "finalize"},
			{nvGEMM, RoleSharedGU}, {nvAct, RoleAct}, {nvGEMMSplit, RoleSharedDn}, {nvSplitKRed, "shared down reduce"}}},
		{"SGLang MoE on MI300X, no split-K", &modelconfig.Architecture{MoE: true, Experts: 128, TopK: 8}, []pos{
			{amdGEMM, RoleQKV}, {sglNorm, RoleQNorm}, {sglNorm, RoleKNorm}, {nvRoPE, RoleRoPE}, {sglKV, RoleKVWrite}, {amdPA, RoleAttention}, {amdPARed, RoleAttnRed},
			{amdGEMM, RoleOProj}, {sglNorm, RolePostNorm}, {amdGEMM, RoleRouter}, {nvTopK, RoleTopK}, {nvAlign, RoleSort},
			{tritonMoE, RoleGateUp}, {sglAct, RoleAct}, {tritonMoE, RoleDown}, {sglMoESum, "finalize"}, {sglNorm, RoleInNorm}}},
		{"SGLang MoE on MI300X, PostGSU on QKV and router", &modelconfig.Architecture{MoE: true, Experts: 128, TopK: 8}, []pos{
			{amdGEMMGSU, RoleQKV}, {amdPostGSU, "QKV reduce"}, {sglNorm, RoleQNorm}, {sglNorm, RoleKNorm}, {nvRoPE, RoleRoPE}, {sglKV, RoleKVWrite}, {amdPA, RoleAttention}, {amdPARed, RoleAttnRed},
			{amdGEMM, RoleOProj}, {sglNorm, RolePostNorm}, {amdGEMMGSU, RoleRouter}, {amdPostGSU, "router reduce"}, {nvTopK, RoleTopK}, {nvAlign, RoleSort},
			{tritonMoE, RoleGateUp}, {sglAct, RoleAct}, {tritonMoE, RoleDown}, {sglMoESum, "finalize"}, {sglNorm, RoleInNorm}}},
		{"ATOM dense on MI355X, no split-K", nil, []pos{
			{amdPA, RoleAttention}, {amdGEMM, RoleOProj}, {sglNorm, RolePostNorm}, {amdGEMM, RoleGateUp}, {sglAct, RoleAct}, {amdGEMM, RoleDown},
			{sglNorm, RoleInNorm}, {amdGEMM, RoleQKV}, {nvRoPE, RoleRoPE}, {amdKV, RoleKVWrite}}},
		{"ATOM MoE on MI355X, PostGSU after the router", &modelconfig.Architecture{MoE: true, Experts: 256, TopK: 8}, []pos{
			{amdPA, RoleAttention}, {amdGEMM, RoleOProj}, {nvNorm, RolePostNorm}, {amdGEMMGSU, RoleRouter}, {amdPostGSU, "router reduce"},
			{nvTopK, RoleTopK}, {nvAlign, RoleSort}, {tritonMoE, RoleGateUp}, {tritonMoE, RoleDown}, {nvNorm, RoleInNorm},
			{amdGEMMGSU, RoleQKV}, {amdPostGSU, "QKV reduce"}, {nvRoPE, RoleRoPE}, {amdKV, RoleKVWrite}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			names := make([]string, len(tt.layers))
			want := make([]string, len(tt.layers))
			for i, p := range tt.layers {
				names[i], want[i] = p.name, p.role
			}
			// The table may start anywhere in the layer: every rotation
			// must give the same roles.
			for r := range names {
				lt := classified(append(slices.Clone(names[r:]), names[:r]...)...)
				lt.AssignRoles(tt.arch)
				got := roles(lt)
				got = append(got[len(got)-r:], got[:len(got)-r]...)
				require.Equal(t, want, got, "table starting at position %d", r)
			}
		})
	}
}

// TestRolesReduceNeverGEMM: whatever the layer, a kernel that finishes a
// GEMM never takes a projection's role, and labels stay unique.
func TestRolesReduceNeverGEMM(t *testing.T) {
	t.Parallel()
	lt := classified(nvNorm, nvGEMMSplit, nvSplitKRed, nvRoPE, nvKV, nvFA, nvGEMMSplO, nvSplitKRed, nvNorm, nvGEMMSplit, nvSplitKRed, nvAct, nvGEMMSplit, nvSplitKRed)
	lt.AssignRoles(nil)
	for _, p := range lt.Positions {
		if FinishesGEMM(p.Kernel) {
			require.True(t, strings.HasSuffix(p.Role, RoleReduceSuffix), "pos %d %s: role %q", p.Pos, p.ShortName, p.Role)
		}
	}
	require.Empty(t, firstDuplicate(lt.Labels()))
	require.Contains(t, lt.Labels(), "GEMM (gate_up)")
	require.Contains(t, lt.Labels(), "GEMV (QKV reduce)")
}

// TestLayersDenseSplitKDecode runs the layer finder and the roles on the
// decode steps of a dense split-K model (a Llama-3.1-8B-like layer: 32
// layers as vLLM runs them with cuBLAS split-K GEMMs): 32 layers of 14
// kernels, each projection named once.
func TestLayersDenseSplitKDecode(t *testing.T) {
	t.Parallel()
	layerNames := []string{nvNorm, nvGEMMSplit, nvSplitKRed, nvRoPE, nvKV, nvFA, nvFACombine, nvGEMMSplO, nvSplitKRed, nvNorm, nvGEMM, nvAct, nvGEMMSplit, nvSplitKRed}
	tr := makeTrace(tracing.StepDecode, step(32, layerNames), step(32, layerNames), step(32, layerNames))
	lt, err := DecodeLayers(context.Background(), tr, LayerOptions{NumLayers: 32})
	require.NoError(t, err)
	require.Equal(t, 32, lt.Layers)
	require.Equal(t, []int{14}, lt.KernelsPerLayer)
	require.Empty(t, lt.Warnings)
	lt.AssignRoles(nil)
	got := map[string]int{}
	for _, p := range lt.Positions {
		got[p.Role]++
	}
	for _, r := range []string{RoleQKV, RoleOProj, RoleGateUp, RoleDown, RoleAttention, "QKV reduce", "O-proj reduce", "down reduce"} {
		require.Equal(t, 1, got[r], "role %q in %q", r, roles(lt))
	}
}
