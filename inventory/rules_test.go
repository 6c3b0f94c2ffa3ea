package inventory

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefaultRulesParse(t *testing.T) {
	t.Parallel()
	rs, err := ParseRules(strings.NewReader(string(defaultRulesCSV)), "rules.csv")
	require.NoError(t, err)
	require.Greater(t, rs.Len(), 50)
	require.Equal(t, rs.Len(), DefaultRules().Len())
}

// The hand-run workflow's category template (corpus README), one example name per
// row, and NVIDIA/AMD kernels seen in the corpus traces.
func TestClassify(t *testing.T) {
	t.Parallel()
	rs := DefaultRules()
	tests := []struct{ name, kernel, category, provider string }{
		{"embedding (PyTorch)", "void at::native::(anonymous namespace)::indexSelectSmallIndex<c10::BFloat16, long, unsigned int, 2, 2, -2>(x)", "Embedding", "PyTorch"},
		{"embedding (Triton)", "triton_poi_fused_embedding_0", "Embedding", "Triton"},
		{"rmsnorm quant", "aiter::add_rmsnorm_quant_kernel<std::bfloat16_t, std::bfloat16_t, 256, 16, true, false, true, 1>(x)", "RMSNorm / LayerNorm", "aiter"},
		{"rope", "aiter::kn_entry_2c_sbhd_cached_indirect_inplace<aiter::OpCachedFwd, 0>(x)", "RoPE", "aiter"},
		{"kv cache mangled", "_ZN5aiter45reshape_and_cache_with_per_token_quant_kernelIDF16bDB8_fLb1ELi64EEEvPKT_S4_PT0_S6_PT1_S8_PKliiiiiiii", "KV cache", "aiter"},
		{"flash attention", "aiter::fmha_fwd_hd128_bf16_causal_group", "Flash attention (prefill)", "aiter ASM"},
		{"paged attention", "aiter::pa_bf16_pertokenFp8_gqa8_2tg_4w", "Paged attention (decode)", "aiter ASM"},
		{"pa reduce", "wv_splitk_small_fp16_bf16_kernel<4>", "Attention reduce", "aiter"},
		{"tensile", "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x256", "Dense GEMM (BF16)", "rocBLAS / hipBLASLt"},
		{"ck fp8 gemm", "ck::kernel_gemm_xdl_cshuffle_v3_multi_d_blockscale_b_preshuffle<x>(y)", "Dense GEMM (FP8/FP4)", "CK"},
		{"fp8 quant mangled", "_ZN5aiter37dynamic_per_group_scaled_quant_kernelIDF16bDB8_Li32EEEvPT0_PfPKT_PKfiliibPKii", "Activation quant", "aiter"},
		{"topk gating", "void vllm::moe::topkGatingSoftmax<8, 128>(x)", "MoE gate", "vLLM custom ops"},
		{"grouped topk", "aiter::grouped_topk_kernel<float, float __vector(4), 1, true, true, false>(x)", "MoE gate", "aiter"},
		{"moe sort", "ck_tile::kentry<2, ck_tile::MoeSortingKernel<x>, y>(z)", "MoE sort / align", "ck_tile"},
		{"moe sort multiphase", "ck_tile::kentry<2, ck_tile::MoeSortingMultiPhaseKernel_P23<x>, y>(z)", "MoE sort / align", "ck_tile"},
		{"moe gemm ck", "ck::kernel_moe_gemm<ck::GridwiseMoeGemmBlockScale<x>>(y)", "MoE expert GEMM", "CK"},
		{"moe gemm asm", "aiter::fmoe_bf16_blockscaleFp8_g1u1_vs_silu_32x384", "MoE expert GEMM", "aiter ASM"},
		{"sampling", "aiter::mix_sample_outer_exponential_kernel<std::bfloat16_t, 1024, 64, 4, true>(x)", "Sampling", "aiter"},
		{"cublas sm90", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", "Dense GEMM (BF16)", "cuBLAS / cuBLASLt"},
		{"nvjet", "nvjet_tst_128x64_64x4_1x2_h_bz_coopA_NTN", "Dense GEMM (BF16)", "cuBLAS / cuBLASLt"},
		{"flash fwd", "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128>>(x)", "Flash attention (prefill)", "FlashAttention"},
		{"nccl", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "All-reduce / collectives", "NCCL"},
		{"cutlass bf16", "void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x128_32x3_nn_align8>(x)", "Dense GEMM (BF16)", "CUTLASS"},
		{"cutlass tf32", "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(x)", "Dense GEMM (FP32/TF32)", "CUTLASS"},
		{"volta sgemm", "volta_sgemm_64x64_nt", "Dense GEMM (FP32/TF32)", "cuBLAS / cuBLASLt"},
		{"cudnn conv", "cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1", "Convolution", "cuDNN"},
		{"aten elementwise", "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(x)", "Elementwise / copy", "PyTorch"},
		{"memcpy", "Memcpy HtoD (Pinned -> Device)", "Memcpy / memset", "runtime"},
		{"unknown", "my_custom_kernel", Other, "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := rs.Classify(tt.kernel)
			require.Equal(t, tt.category, c.Category, tt.kernel)
			require.Equal(t, tt.provider, c.Provider, tt.kernel)
			require.NotEmpty(t, c.ShortName)
		})
	}
}

func TestParseRulesErrors(t *testing.T) {
	t.Parallel()
	const header = "priority,pattern,category,provider,short_name\n"
	tests := []struct{ name, text, want string }{
		{"no header", "# only a comment\n", "user.csv: no header"},
		{"wrong header", "prio,pattern\n", "user.csv:1: header is"},
		{"bad priority", header + "high,foo,GEMM,x,\n", "user.csv:2: priority \"high\""},
		{"too few fields", header + "# c\n10,foo,GEMM\n", "user.csv:3: 3 fields"},
		{"bad regexp", header + "10,re:foo(,GEMM,x,\n", "user.csv:2: bad regular expression"},
		{"empty category", header + "10,foo,,x,\n", "user.csv:2: empty category"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseRules(strings.NewReader(tt.text), "user.csv")
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestRulePriority(t *testing.T) {
	t.Parallel()
	rs, err := ParseRules(strings.NewReader("priority,pattern,category,provider,short_name\n"+
		"10,gemm,Low,a,\n20,re:^my_gemm,High,b,mine\n20,my_,Later,c,\n"), "t.csv")
	require.NoError(t, err)
	c := rs.Classify("my_gemm_kernel")
	require.Equal(t, Class{Category: "High", Provider: "b", ShortName: "mine", Source: SourceRule}, c, "highest priority, earlier line on a tie")
	require.Equal(t, "Low", rs.Classify("other_gemm").Category)
}

// A hostile name (megabytes long) is classified by its first 16 KiB, as
// fast as a real one: the rule that matches there wins, and a pattern past
// the limit is not seen.
func TestClassifyGiantName(t *testing.T) {
	t.Parallel()
	rules := DefaultRules()
	pad := strings.Repeat("x", 10<<20)
	cases := []struct {
		name, kernel string
	}{
		{"rule match at the start", "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x3_tn" + pad},
		{"name words at the start", "triton_poi_fused_add_mul_0" + pad},
		{"nothing to match", pad},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := rules.Classify(c.kernel)
			want := rules.Classify(c.kernel[:maxMatchName])
			require.Equal(t, want.Category, got.Category)
			require.Equal(t, want.Source, got.Source)
		})
	}
	// Past the limit: a GEMM word 20 KiB into the name is not read.
	late := strings.Repeat("x", 20<<10) + "_gemm_bf16"
	require.Equal(t, rules.Classify(strings.Repeat("x", 20<<10)).Category, rules.Classify(late).Category)
	require.NotEqual(t, rules.Classify("_gemm_bf16").Category, rules.Classify(late).Category)
}

// docs/traces.md states the rules file's columns in the order the parser
// wants them.
func TestDocumentedRulesColumns(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "docs", "traces.md"))
	require.NoError(t, err)
	m := regexp.MustCompile("`inventory/rules.csv`, columns `([^`]+)`").FindSubmatch(readme)
	require.NotNil(t, m, "docs/traces.md names the columns of inventory/rules.csv")
	stated := string(m[1])
	_, err = ParseRules(strings.NewReader(stated+"\n5,mykernel,GEMM,me,MyGEMM\n"), "stated.csv")
	require.NoError(t, err, "a rules file with the documented header parses")
	_, err = ParseRules(strings.NewReader("pattern,category,provider,short_name,priority\n"), "other.csv")
	require.Error(t, err, "another order is refused")
}

// TestRequiredLiterals: the literals that filter names before a regular
// expression runs are ones every match contains; a name without them is no
// match, with or without the filter, and names the filter exists for (a
// GEMM that states no precision) are ruled out before the expression runs.
func TestRequiredLiterals(t *testing.T) {
	t.Parallel()
	ck := "void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_0000123, 256, 128>(ck::Argument)"
	for _, c := range []struct {
		expr             string
		matched, refused []string // refused: ruled out by the filter alone
	}{
		{`kernel_gemm_xdl_cshuffle_v3.*(blockscale|f8|fp8)`, []string{"kernel_gemm_xdl_cshuffle_v3<f8>", "kernel_gemm_xdl_cshuffle_v3_fp8"}, []string{ck, "f8 kernel_gemm_xdl_cshuffle_v3"[3:]}},
		{`^Cijk_A[a-z]+_B[a-z]+_(F8|B8)`, []string{"Cijk_Ailk_Bljk_F8"}, []string{"Cijk_Ailk_Bljk_BBS", "Cijk_A_F8"}},
		{`[Ff]mha`, []string{"fmha_fwd", "Fmha"}, []string{"mh_a"}},
		{`flash_fwd|flash::|pytorch_flash|flash_attn`, []string{"flash::x", "pytorch_flash_y"}, []string{"flash_bwd"}},
		{`sm\d+_xmma_gemm`, []string{"sm90_xmma_gemm_bf16"}, []string{"sm_xmma_gemm", "xmma_gemm"}},
		{`_(sgemm|s1688gemm|tf32|s\d+gemm)`, []string{"_s884gemm", "_tf32"}, []string{strings.ToLower(ck), "_sgem"}},
		{`bf16|half|_h\d{3,5}gemm`, []string{"_h1688gemm", "x_bf16"}, []string{strings.ToLower(ck)}},
	} {
		f := requiredLiterals(c.expr)
		re := regexp.MustCompile(c.expr)
		for _, s := range c.matched {
			require.True(t, re.MatchString(s), "%s matches %q", c.expr, s)
			require.True(t, f.admits(s), "%s: the filter admits its match %q", c.expr, s)
		}
		for _, s := range c.refused {
			require.False(t, re.MatchString(s), "%s does not match %q", c.expr, s)
			require.False(t, f.admits(s), "%s: the filter rules out %q", c.expr, s)
		}
	}
	for _, expr := range []string{`(?i)gemm`, `a*`, `x|y*`, `\w+`} {
		require.Nil(t, requiredLiterals(expr), "%s has no literal every match holds", expr)
	}
	rs, err := ParseRules(strings.NewReader("priority,pattern,category,provider,short_name\n90,re:sm\\d+_xmma_gemm,G,P,\n"), "t.csv")
	require.NoError(t, err)
	for name, want := range map[string]bool{"sm90_xmma_gemm_bf16": true, "sm_xmma_gemm": false, "xmma_gemm": false} {
		require.Equal(t, want, rs.Match(name) != nil, name)
	}
}
