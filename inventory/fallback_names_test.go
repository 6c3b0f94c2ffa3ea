package inventory

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Kernel names from engines, vendors and releases the rule table does not
// name: the name fallback alone (an empty rule table) categorises them.
func TestClassifyByNameUnseenKernels(t *testing.T) {
	t.Parallel()
	none := DefaultRules().Filter(func(Rule) bool { return false })
	tests := []struct{ name, want string }{
		{"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm100TmaUmmaWarpSpecialized<4, 2, 2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> > > > > >(void)", "Dense GEMM (BF16)"},
		{"bmm_E4m3_E4m3E4m3_Fp32_t128x8x512u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_transOut_schedS_bN_sm100f", "Dense GEMM (FP8/FP4)"},
		{"nvjet_sm100_tst_128x256_64x4_2x1_v_bz_coopA_NNT", "Dense GEMM (BF16)"},
		{"sm100_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1", "Dense GEMM (BF16)"},
		{"_w8a8_block_fp8_matmul", "Dense GEMM (FP8/FP4)"},
		{"triton_tem_fused_addmm_0", "Dense GEMM (BF16)"},
		{"wvSplitK_hf_sml_", "Dense GEMM (BF16)"},
		{"fmhaSm100fKernel_QkvE4m3OBfloat16HQk128HV128HVPerCta128PagedKvDenseP64MultiCtasKvCgaVarSeqQ64Kv128PersistentSwapsAbForGen", "Paged attention (decode)"},
		{"void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<>, flashinfer::PagedParams>(flashinfer::PagedParams)", "Flash attention (prefill)"},
		{"_fwd_grouped_kernel_stage1", "Paged attention (decode)"},
		{"_fwd_kernel_stage2", "Attention reduce"},
		{"kernel_paged_attention_2d", "Paged attention (decode)"},
		{"void sageattn::qk_int8_sv_f8_attn_kernel<128, 64>(int8_t*)", "Flash attention (prefill)"},
		{"void sageattn::quant_per_block_int8_kernel<64, 128>(int8_t*)", "Activation quant"},
		{"void flashinfer::mla_q_quant_fp8_kernel<__nv_bfloat16>(void)", "Activation quant"},
		{"void tensorrt_llm::kernels::moe::finalizeMoeRoutingKernel<__nv_bfloat16, float>(void)", "MoE finalize / combine"},
		{"void tensorrt_llm::kernels::expandInputRowsKernel<__nv_bfloat16>(void)", "MoE sort / align"},
		{"moe_align_block_size_kernel", "MoE sort / align"},
		{"void vllm::moe::topkGatingSoftmax<4, 128, 4, 16, int>(float const*, bool const*, float*, int, int*, int*, int, int, int)", "MoE gate"},
		{"void tensorrt_llm::kernels::ar_fusion::allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, 8>(void)", "All-reduce / collectives"},
		{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "All-reduce / collectives"},
		{"void vllm::cross_device_reduce_2stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)", "All-reduce / collectives"},
		{"void (anonymous namespace)::groupnorm_kernel_dispatch_down<__hip_bfloat16, 1024u>(unsigned int)", "GroupNorm"},
		{"igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x256x32_wt32x32x8", "Convolution"},
		{"sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc", "Convolution"},
		{"batched_transpose_32x32_half", "Transpose"},
		{"per_token_group_quant_8bit_kernel", "Activation quant"},
		{"void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>(void)", "RMSNorm / LayerNorm"},
		{"void flashinfer::sampling::TopKTopPSamplingFromProbKernel<1024u>(void)", "Sampling"},
		{"void sgl_kernel::apply_rope_pos_ids_cos_sin_cache<64>(void)", "RoPE"},
		{"void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, 0>(void)", "KV cache"},
		{"void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(void)", "Activation (SiLU/GELU and mul)"},
		{"triton_red_fused_add_native_group_norm_3", "GroupNorm"},
		{"triton_poi_fused_cat_clone_2", "Elementwise / copy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := none.Classify(tt.name)
			require.Equal(t, tt.want, c.Category)
			require.Equal(t, SourceName, c.Source)
		})
	}
	require.Equal(t, SourceNone, none.Classify("zq_kernel_7").Source, "a name that says nothing stays Other")
}

func TestNameWords(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"fmhaSm100Kernel_QkvE4m3":      "_fmha_sm100_kernel_qkv_e4m3_",
		"ck_tile::MoeSortingKernel<2>": "_ck_tile_moe_sorting_kernel_2_",
		"Cijk_Alik_Bljk_BBS":           "_cijk_alik_bljk_bbs_",
		"":                             "_",
	} {
		require.Equal(t, want, nameWords(in), in)
	}
}
