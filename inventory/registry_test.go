package inventory

import (
	"regexp"
	"strings"
	"testing"

	"github.com/profile-model/profile-model/tracing"
	"github.com/stretchr/testify/require"
)

// registryCase is one kernel as its library writes it (the names are
// written from the templates and format strings of the source the rule
// cites), the trace it is seen in, and what the registry must say.
type registryCase struct {
	family, kernel string
	vendor, engine string // the trace's GPU vendor and engine, "" unknown
	decode         bool   // runs mostly in decode steps
	op             string // the op that launched it, "" none (graph replay)
	category       string
	provider       string
	short          string // "" does not check it
	reason         string
}

// classifierFor is a classifier of names with what a trace would tell it.
func classifierFor(tc registryCase) *Classifier {
	c := NewClassifier(nil, nil)
	c.vendor, c.engine, c.engineWhy = tc.vendor, tc.engine, "test"
	if tc.decode {
		c.decode[tc.kernel] = true
	}
	if tc.op != "" {
		c.ops[tc.kernel] = tc.op
	}
	return c
}

func TestRegistryFamilies(t *testing.T) {
	t.Parallel()
	const (
		nv  = "nvidia"
		amd = "amd"
	)
	tests := []registryCase{
		// FlashInfer
		{family: "flashinfer sampling", kernel: "void flashinfer::sampling::TopKTopPSamplingFromProbKernel<1024u, (cub::CUB_300001_SM_900::BlockScanAlgorithm)0, (cub::CUB_300001_SM_900::BlockReduceAlgorithm)2, 4u, false, float, int>(float*, int*, int*, float*, int*, float*, unsigned long, unsigned long, unsigned int, unsigned long, unsigned long)",
			vendor: nv, category: "Sampling", provider: "FlashInfer", short: "Sampling (flashinfer)", reason: "flashinfer::sampling (sampling.cuh): top-k/top-p sampling"},
		{family: "flashinfer radix top-k renorm", kernel: "void flashinfer::sampling::RadixTopKRenormProbKernel_MultiCTA<1024u, 8u, float, int>(float*, float*, int*, unsigned int, unsigned int, unsigned int, unsigned int)",
			vendor: nv, category: "Sampling", provider: "FlashInfer", reason: "topk.cuh puts its sampler's top-k in flashinfer::sampling, not a generic sort"},
		{family: "flashinfer norm", kernel: "void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, float, float)",
			vendor: nv, category: "RMSNorm / LayerNorm", provider: "FlashInfer", short: "RMSNorm (flashinfer)", reason: "flashinfer::norm (norm.cuh)"},
		{family: "flashinfer qk norm", kernel: "void flashinfer::norm::QKRMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, float, float)",
			vendor: nv, category: "RMSNorm / LayerNorm", provider: "FlashInfer", reason: "a q/k norm is a norm, not elementwise"},
		{family: "flashinfer CuTe-DSL norm", kernel: "kernel_cutlass_kernel_flashinfernormkernelsrmsnormRMSNormKernel_object_at__tensorptrbf16gmemalign16o1024101_tensorptrbf16gmemalign16o1024_tensorptrbf16gmemalign16o1024101_0",
			vendor: nv, op: "flashinfer::rmsnorm", category: "RMSNorm / LayerNorm", provider: "FlashInfer", short: "RMSNorm (flashinfer CuTe)", reason: "CuTe-DSL names the kernel after the module flashinfer.norm.kernels.rmsnorm: FlashInfer's, not PyTorch's or CUTLASS's"},
		{family: "flashinfer CuTe-DSL add-rmsnorm-fp4", kernel: "kernel_cutlass_kernel_flashinfercute_dsladd_rmsnorm_fp4quantAddRMSNormFP4QuantKernel_object_at__tensorptrbf16gmemalign16o40961_0",
			vendor: nv, category: "RMSNorm / LayerNorm", provider: "FlashInfer", reason: "flashinfer.cute_dsl.add_rmsnorm_fp4quant"},
		{family: "flashinfer rope", kernel: "void flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheKernel<true, 128u, 8u, 16u, __nv_bfloat16, long>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, float*, long*, unsigned int, unsigned int, unsigned int, unsigned int, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long)",
			vendor: nv, category: "RoPE", provider: "FlashInfer", reason: "pos_enc.cuh"},
		{family: "flashinfer append kv", kernel: "void flashinfer::AppendPagedKVCacheKernel<8u, 16u, __nv_bfloat16, int>(flashinfer::paged_kv_t<__nv_bfloat16, int>, __nv_bfloat16*, __nv_bfloat16*, int*, int*, unsigned int, unsigned long, unsigned long, unsigned long, unsigned long)",
			vendor: nv, category: "KV cache", provider: "FlashInfer", reason: "page.cuh"},
		{family: "flashinfer decode", kernel: "void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, 2u, 4u, 8u, 16u, 1u, 8u, flashinfer::DefaultAttention<false, false, false, false>, flashinfer::BatchDecodeParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int> >(flashinfer::BatchDecodeParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>)",
			vendor: nv, decode: true, category: "Paged attention (decode)", provider: "FlashInfer", reason: "attention/decode.cuh"},
		// TensorRT-LLM: trtllm-gen and the MoE runner
		{family: "trtllm-gen fmha context", kernel: "fmhaSm100fKernel_QkvBfloat16OBfloat16HQk128HV128HVPerCta128PagedKvCausalP64VarSeqQ128Kv128PersistentContext",
			vendor: nv, op: "vllm::unified_attention_with_output", category: "Flash attention (prefill)", provider: "TensorRT-LLM", short: "FMHA (trtllm-gen)", reason: "a trtllm-gen cubin (fmhaKernels.h): TensorRT-LLM's, whatever vLLM op launched it"},
		{family: "trtllm-gen fmha generation", kernel: "fmhaSm100fKernel_QBfloat16KvBfloat16OBfloat16HQk128HV128PagedKvDenseP32VarSeqLenTileSizeQ8TileSizeKv128StaticSwapsMmaAbForGeneration",
			vendor: nv, category: "Paged attention (decode)", provider: "TensorRT-LLM", reason: "…ForGeneration: the decode kernel"},
		{family: "trtllm-gen fmha reduction", kernel: "tensorrt_llm::kernels::fmhaReductionKernel(tensorrt_llm::kernels::KernelParams, bool, bool, bool, int, int, int, int)",
			vendor: nv, category: "Attention reduce", provider: "TensorRT-LLM", reason: "FlashInfer's csrc/fmhaReduction.cu keeps TensorRT-LLM's namespace"},
		{family: "trtllm-gen bmm", kernel: "bmm_Bfloat16_E4m3E4m3_Fp32_t128x8x128u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_transOut_schedS_bN_dynBatch_sm100f",
			vendor: nv, category: "Dense GEMM (FP8/FP4)", provider: "TensorRT-LLM", short: "BMM (trtllm-gen)", reason: "trtllm-gen batched GEMM, E4m3 inputs"},
		{family: "trtllm-gen bmm routed", kernel: "bmm_E2m1_E2m1E2m1_Fp32_Ab16_Bb16_Cb16_t128x32x512u2_s5_et128x32_m256x32x64_c2x1x1_rM_TN_transOut_schedS_biasFp32M_bN_tma_tmaSf_rgTma_clmp_swiGlu_dynB_sm100f",
			vendor: nv, category: "MoE expert GEMM", provider: "TensorRT-LLM", reason: "rgTma: the GEMM gathers tokens by the MoE routing"},
		{family: "trtllm routing main", kernel: "void moe::dev::routing::routingDeepSeek::routingMainKernel<moe::dev::routing::routingDeepSeek::KernelParams<float, float, 256, 8, true> >(moe::dev::routing::routingDeepSeek::KernelParams<float, float, 256, 8, true>)",
			vendor: nv, category: "MoE gate", provider: "TensorRT-LLM", reason: "DeepSeek routing's top-k of groups"},
		{family: "trtllm routing indices", kernel: "void moe::dev::routing::routingIndicesClusterKernel<moe::dev::routing::routingRenormalize::KernelParams<float, __nv_bfloat16, 128, 8, false> >(moe::dev::routing::routingRenormalize::KernelParams<float, __nv_bfloat16, 128, 8, false>)",
			vendor: nv, category: "MoE sort / align", provider: "TensorRT-LLM", reason: "expert offsets and token indices"},
		{family: "trtllm finalize", kernel: "void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<cutlass::bfloat16_t, cutlass::bfloat16_t, false> >(moe::dev::finalize::KernelParams<cutlass::bfloat16_t, cutlass::bfloat16_t, false>)",
			vendor: nv, op: "vllm::moe_forward", category: "MoE finalize / combine", provider: "TensorRT-LLM", reason: "moe::dev::finalize: not vLLM's though a vLLM op launched it"},
		{family: "trtllm cutlass moe finalize", kernel: "void tensorrt_llm::kernels::cutlass_kernels::finalizeMoeRoutingKernel<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, (tensorrt_llm::kernels::cutlass_kernels::ScaleMode)1, false>(__nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16 const*, float const*, float const*, int const*, int const*, long, long, long, int, long const*, int, bool)",
			vendor: nv, category: "MoE finalize / combine", provider: "TensorRT-LLM", reason: "moe_kernels.cu"},
		{family: "trtllm allreduce fusion", kernel: "void tensorrt_llm::kernels::ar_fusion::allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, 8, 4, true, false>(tensorrt_llm::kernels::ar_fusion::AllReduceFusionParams<__nv_bfloat16>)",
			vendor: nv, category: "All-reduce / collectives", provider: "TensorRT-LLM", reason: "allReduceFusionKernels.cu"},
		{family: "trtllm fused qk-norm rope", kernel: "void tensorrt_llm::kernels::fusedQKNormRopeKernel<128, true>(__nv_bfloat16*, int, int, int, float, __nv_bfloat16 const*, __nv_bfloat16 const*, float, int const*, int)",
			vendor: nv, category: "RMSNorm / LayerNorm", provider: "TensorRT-LLM", short: "QK_norm+RoPE", reason: "the name says norm: a norm first, not elementwise or RoPE"},
		// FlashAttention 2/3/4
		{family: "FA2 (vLLM's build)", kernel: "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)",
			vendor: nv, decode: true, category: "Paged attention (decode)", provider: "FlashAttention", reason: "flash:: kernels; runs in decode steps"},
		{family: "FA2 combine", kernel: "void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, 4, 1, true>(flash::Flash_fwd_params)",
			vendor: nv, category: "Attention reduce", provider: "FlashAttention", reason: "split-KV combine"},
		{family: "FA3", kernel: "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<112>, cute::C<128> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, true, true, false, false, true, true, true, false, false>, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<128>, cute::C<128>, cute::C<112> >, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, true, true, false, false>, flash::VarlenDynamicPersistentTileScheduler<128, 176, 128, false, true, true> > > >(flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> > > >::Params)",
			vendor: nv, category: "Flash attention (prefill)", provider: "FlashAttention", short: "FlashAttn (FA3)", reason: "FA3 enters through cutlass::device_kernel, but flash:: is its code: not CUTLASS"},
		{family: "FA3 combine", kernel: "void cutlass::device_kernel<flash::FlashAttnFwdCombine<cute::tuple<cute::C<8>, cute::C<128> >, 7, 256, 1, false, true, cutlass::bfloat16_t, float, cutlass::arch::Sm90> >(flash::FlashAttnFwdCombine<cute::tuple<cute::C<8>, cute::C<128> >, 7, 256, 1, false, true, cutlass::bfloat16_t, float, cutlass::arch::Sm90>::Params)",
			vendor: nv, category: "Attention reduce", provider: "FlashAttention", reason: "hopper/flash_fwd_combine_launch_template.h"},
		{family: "FA4", kernel: "kernel_cutlass_kernel_flash_attncuteflash_fwd_sm100FlashAttentionForwardSm100_object_at__tensorptrbf16gmemalign16o128110_tensorptrbf16gmemalign16o128110_0",
			vendor: nv, category: "Flash attention (prefill)", provider: "FlashAttention", short: "FlashAttn (FA4)", reason: "CuTe-DSL kernel of flash_attn.cute.flash_fwd_sm100"},
		// vLLM csrc, and the kernels sgl-kernel carries too
		{family: "custom all-reduce on vLLM", kernel: "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
			vendor: nv, engine: EngineVLLM, category: "All-reduce / collectives", provider: "vLLM custom ops", reason: "csrc/custom_all_reduce.cuh"},
		{family: "custom all-reduce on SGLang", kernel: "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
			vendor: nv, engine: EngineSGLang, category: "All-reduce / collectives", provider: "SGLang custom ops", reason: "sgl-kernel's copy keeps namespace vllm: the engine decides"},
		{family: "custom all-reduce on ATOM", kernel: "void cross_device_reduce_2stage<__hip_bfloat16, 8>(RankData*, RankSignals, Signal*, __hip_bfloat16*, int, int)",
			vendor: amd, engine: EngineATOM, category: "All-reduce / collectives", provider: "aiter", reason: "ATOM runs aiter's build"},
		{family: "marlin", kernel: "void marlin::Marlin<__nv_bfloat16, (vllm::ScalarTypeId)4, 256, 1, 8, 8, false, true, 4, false>(int4 const*, int4 const*, int4*, int4*, int4 const*, int4 const*, int const*, int, int, int, int, int*, bool, bool, int)",
			vendor: nv, category: "Dense GEMM (FP8/FP4)", provider: "vLLM custom ops", short: "GEMM (Marlin)", reason: "Marlin: int4 weights (4-bit inputs), vLLM's csrc"},
		{family: "marlin moe", kernel: "void marlin_moe_wna16::Marlin<__nv_bfloat16, (vllm::ScalarTypeId)4, 256, 1, 8, 8, false, 4, 8, 8, false>(int4 const*, int4 const*, int4*, int4*, int4 const*, int4 const*, int const*, int const*, int const*, int const*, float const*, int, bool, int, int, int, int, int*, bool, bool, bool, int)",
			vendor: nv, engine: EngineVLLM, category: "MoE expert GEMM", provider: "vLLM custom ops", short: "MoE_GEMM (Marlin)", reason: "marlin_moe_wna16: the experts' GEMM"},
		{family: "lora shrink (vLLM triton)", kernel: "_lora_shrink_kernel",
			vendor: nv, category: "Dense GEMM (BF16)", provider: "Triton", short: "LoRA_shrink", reason: "vllm/lora/ops/triton_ops/lora_shrink_op.py"},
		{family: "lora expand (vLLM triton)", kernel: "_lora_expand_kernel",
			vendor: nv, category: "Dense GEMM (BF16)", provider: "Triton", short: "LoRA_expand", reason: "lora_expand_op.py"},
		{family: "lora punica CUDA", kernel: "void bgmv_shrink_kernel<16, 4, 8, 32, 4, __nv_bfloat16, __nv_bfloat16, float>(float*, __nv_bfloat16 const*, __nv_bfloat16 const*, long const*, long, long, long, long, long, float)",
			vendor: nv, category: "Dense GEMM (BF16)", provider: "vLLM custom ops", short: "LoRA_shrink", reason: "csrc/punica/bgmv"},
		{family: "lora (SGLang triton)", kernel: "_qkv_lora_b_kernel",
			vendor: nv, category: "Dense GEMM (BF16)", provider: "Triton", short: "LoRA_expand", reason: "sglang/srt/lora/triton_ops"},
		{family: "lora segmented GEMM (SGLang triton)", kernel: "_sgemm_lora_a_kernel",
			vendor: nv, category: "Dense GEMM (BF16)", provider: "Triton", short: "LoRA_shrink", reason: "sgemm is SGLang's segmented GEMM, not an fp32 one"},
		{family: "moe count and sort", kernel: "void vllm::moe::count_and_sort_expert_tokens_kernel<int>(int const*, int*, int*, unsigned long, int)",
			vendor: nv, engine: EngineVLLM, category: "MoE sort / align", provider: "vLLM custom ops", short: "MoE_sort", reason: "moe and expert outrank sort"},
		{family: "moe count and sort (sgl-kernel)", kernel: "void count_and_sort_expert_tokens_kernel<int>(int const*, int*, int*, unsigned long, int)",
			vendor: nv, engine: EngineSGLang, category: "MoE sort / align", provider: "SGLang custom ops", reason: "sgl-kernel's moe_align_kernel.cu"},
		{family: "moe align", kernel: "void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, int, unsigned long, int*, int)",
			vendor: nv, category: "MoE sort / align", provider: "vLLM custom ops", reason: "no engine: the namespace says vLLM"},
		{family: "moe sum", kernel: "void vllm::moe::moe_sum_kernel<c10::BFloat16, 2>(c10::BFloat16*, c10::BFloat16 const*, int)",
			vendor: nv, category: "MoE finalize / combine", provider: "vLLM custom ops", short: "MoE_sum", reason: "the sum over top-k is the MoE finalize, not a reduction"},
		{family: "topk softmax", kernel: "void vllm::moe::topkGatingSoftmax<8, 128, 4, 16, 32, int, float>(float const*, bool const*, float*, int, int*, int, int, int, bool)",
			vendor: nv, category: "MoE gate", provider: "vLLM custom ops", reason: "csrc/moe/topk_softmax_kernels.cu"},
		{family: "fused qk-norm rope (vLLM)", kernel: "void vllm::fusedQKNormRopeKernel<c10::BFloat16, c10::BFloat16, 128, true>(void*, int, int, int, float, void const*, void const*, void const*, long const*, int)",
			vendor: nv, engine: EngineVLLM, category: "RMSNorm / LayerNorm", provider: "vLLM custom ops", reason: "norm outranks rope and elementwise"},
		{family: "rotary", kernel: "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)",
			vendor: nv, category: "RoPE", provider: "vLLM custom ops", reason: "csrc/pos_encoding_kernels.cu"},
		{family: "reshape and cache", kernel: "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, long, long, long, long, int, int, int, float const*, float const*)",
			vendor: nv, category: "KV cache", provider: "vLLM custom ops", reason: "csrc/cache_kernels.cu"},
		{family: "sampler penalties", kernel: "void vllm::apply_repetition_penalties_kernel<c10::BFloat16>(c10::BFloat16*, bool const*, bool const*, c10::BFloat16 const*, int, int, int)",
			vendor: nv, category: "Sampling", provider: "vLLM custom ops", reason: "csrc/sampler.cu"},
		// SGLang JIT kernels
		{family: "sglang store kvcache", kernel: "void (anonymous namespace)::store_kvcache<256l, 1, false, long>((anonymous namespace)::StoreKVCacheParams)",
			vendor: nv, category: "KV cache", provider: "SGLang custom ops", reason: "jit_kernel/csrc/elementwise/kvcache.cuh"},
		// DeepGEMM
		{family: "deepgemm grouped", kernel: "void deep_gemm::sm90_fp8_gemm_1d2d_impl<(cute::UMMA::Major)0, 0u, 4096u, 7168u, 1u, 128u, 128u, 128u, 1u, 4u, 3u, 128u, 128u, 1u, false, (deep_gemm::GemmType)1, false, (deep_gemm::KernelType)1, float, cutlass::bfloat16_t>(float*, int*, unsigned int, unsigned int, unsigned int, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st)",
			vendor: nv, category: "MoE expert GEMM", provider: "DeepGEMM", short: "MoE_GEMM (DeepGEMM)", reason: "GemmType 1: M-grouped contiguous, the experts' GEMM"},
		{family: "deepgemm dense", kernel: "void deep_gemm::sm90_fp8_gemm_1d2d_impl<(cute::UMMA::Major)0, 0u, 4096u, 7168u, 1u, 128u, 128u, 128u, 1u, 4u, 3u, 128u, 128u, 1u, false, (deep_gemm::GemmType)0, false, (deep_gemm::KernelType)1, float, cutlass::bfloat16_t>(float*, int*, unsigned int, unsigned int, unsigned int, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st)",
			vendor: nv, category: "Dense GEMM (FP8/FP4)", provider: "DeepGEMM", reason: "GemmType 0: a dense FP8 GEMM"},
		// DeepSeek's DeepEP and FlashMLA
		{family: "deepep dispatch", kernel: "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*, float*, int*, int*, int4 const*, float const*, long const*, float const*, bool const*, int const*, int, int, int, int, int, int, int, void**, int, int, int, int)",
			vendor: nv, category: "All-reduce / collectives", provider: "DeepEP", reason: "expert-parallel all-to-all (csrc/kernels/intranode.cu)"},
		{family: "flashmla decode", kernel: "void flash::flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512>, true, SharedStorageMLA<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512> > >(Flash_fwd_mla_params)",
			vendor: nv, category: "Paged attention (decode)", provider: "FlashMLA", reason: "FlashMLA keeps FlashAttention's flash:: namespace; _mla says whose"},
		// PyTorch ATen and c10d
		{family: "aten sort", kernel: "void at::native::bitonicSortKVInPlace<2, -1, 16, 16, float, long, at::native::LTOp<float, true>, unsigned int>(at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int, unsigned int, unsigned int, at::cuda::detail::TensorInfo<long, unsigned int>, unsigned int, at::native::LTOp<float, true>)",
			vendor: nv, category: "Reduction / scan / sort", provider: "PyTorch", short: "sort", reason: "Sort.cu; a sampler's sort is Sampling by its place (TestLayerEvidence)"},
		{family: "aten cumsum", kernel: "void at::native::tensor_kernel_scan_innermost_dim<float, std::plus<float> >(float*, float const*, unsigned int, unsigned int, unsigned int, float, std::plus<float>)",
			vendor: nv, category: "Reduction / scan / sort", provider: "PyTorch", short: "cumsum", reason: "ScanUtils.cuh"},
		{family: "aten softmax", kernel: "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
			vendor: nv, category: "Softmax", provider: "PyTorch", reason: "SoftMax.cu"},
		{family: "aten reduce in moe_sum", kernel: "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<c10::BFloat16, at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, c10::BFloat16, 4, 4> >(at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<c10::BFloat16, at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, c10::BFloat16, 4, 4>)",
			vendor: nv, op: "_moe_C::moe_sum", category: "MoE finalize / combine", provider: "PyTorch", reason: "ATen's sum is PyTorch's code, but moe_sum says what it computes (topk > 4 falls back to at::sum_out)"},
		{family: "c10d symmetric memory", kernel: "void c10d::symmetric_memory::one_shot_all_reduce_kernel<__nv_bfloat16, 16, 8>(__nv_bfloat16**, unsigned long, unsigned long, unsigned long, __nv_bfloat16*, unsigned long, unsigned int**, unsigned long, unsigned long)",
			vendor: nv, engine: EngineVLLM, op: "vllm::all_reduce", category: "All-reduce / collectives", provider: "PyTorch", reason: "c10d's symmetric memory: PyTorch's, though vLLM launched it"},
		// NCCL/RCCL
		{family: "nccl", kernel: "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
			vendor: nv, category: "All-reduce / collectives", provider: "NCCL", reason: "src/device/generate.py names"},
		{family: "rccl keeps nccl names", kernel: "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)",
			vendor: amd, category: "All-reduce / collectives", provider: "RCCL", reason: "RCCL's kernels keep NCCL's names"},
		// Triton-based libraries
		{family: "vllm fused moe triton", kernel: "fused_moe_kernel",
			vendor: nv, category: "MoE expert GEMM", provider: "Triton", reason: "fused_moe.py"},
		{family: "gated deltanet chunk", kernel: "chunk_gated_delta_rule_fwd_kernel_h_blockdim64",
			vendor: nv, category: "Flash attention (prefill)", provider: "Triton", reason: "linear attention over a prompt"},
		{family: "gated deltanet recurrent", kernel: "fused_recurrent_gated_delta_rule_fwd_kernel",
			vendor: nv, decode: true, category: "Paged attention (decode)", provider: "Triton", reason: "runs in decode steps"},
		{family: "causal conv1d", kernel: "_causal_conv1d_update_kernel",
			vendor: nv, category: "Convolution", provider: "Triton", reason: "mamba/ops/causal_conv1d.py"},
		// cuBLAS / cuBLASLt, hipBLASLt
		{family: "nvjet", kernel: "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_NNT",
			vendor: nv, category: "Dense GEMM (BF16)", provider: "cuBLAS / cuBLASLt", reason: "cuBLASLt's nvjet"},
		{family: "cublas xmma", kernel: "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
			vendor: nv, category: "Dense GEMM (BF16)", provider: "cuBLAS / cuBLASLt", reason: "sm90_xmma"},
		{family: "cublas cutlass Kernel2", kernel: "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8::Params)",
			vendor: nv, op: "aten::mm", category: "Dense GEMM (BF16)", provider: "cuBLAS / cuBLASLt", reason: "cuBLAS's CUTLASS-generated GEMM, not the CUTLASS library's"},
		{family: "cutlass library Kernel", kernel: "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x4_nn_align1>(cutlass_80_tensorop_s1688gemm_64x64_32x4_nn_align1::Params)",
			vendor: nv, category: "Dense GEMM (FP32/TF32)", provider: "CUTLASS", reason: "CUTLASS's own entry point"},
		{family: "hipblaslt", kernel: "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_MI16x16x1_SN_LDSB1_AFC1",
			vendor: amd, category: "Dense GEMM (BF16)", provider: "rocBLAS / hipBLASLt", reason: "Tensile naming, BBS = bf16"},
		// the vendor bounds the rules
		{family: "fmha on NVIDIA", kernel: "my_fmha_decode_kernel",
			vendor: nv, category: "Paged attention (decode)", provider: Unknown, reason: "ck_tile cannot run on an NVIDIA GPU: the name decides, no library named"},
		{family: "fmha on AMD", kernel: "my_fmha_decode_kernel",
			vendor: amd, decode: true, category: "Paged attention (decode)", provider: "ck_tile", reason: "on AMD the ck_tile rule applies"},
		{family: "kv indices (ATOM triton)", kernel: "kv_indices_generate_kernel",
			vendor: amd, engine: EngineATOM, category: "KV cache", provider: "Triton", reason: "ATOM's atom/utils/block_convert.py is Triton"},
	}
	for _, tc := range tests {
		t.Run(tc.family+"/"+tc.vendor, func(t *testing.T) {
			t.Parallel()
			cl := classifierFor(tc).Classify(tc.kernel)
			require.Equal(t, tc.category, cl.Category, "%s: %s", tc.reason, tc.kernel)
			require.Equal(t, tc.provider, cl.Provider, "%s: %s", tc.reason, tc.kernel)
			if tc.short != "" {
				require.Equal(t, tc.short, cl.ShortName, tc.reason)
			}
		})
	}
}

// Every built-in rule says where its kernels are defined: one or more
// "owner/repo@commit:path", or for a closed-source library its name and
// the open code that calls it.
func TestRulesCiteSources(t *testing.T) {
	t.Parallel()
	cite := regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+@[0-9a-f]{40}:[^\s:]+$`)
	closed := regexp.MustCompile(`^closed-source:\S+$`)
	rs := DefaultRules()
	require.Greater(t, rs.Len(), 100)
	for _, r := range rs.rules {
		toks := strings.Fields(r.Cite)
		require.NotEmpty(t, toks, "rules.csv:%d %q cites no source", r.Line, r.Pattern)
		repos := 0
		for i, tok := range toks {
			switch {
			case cite.MatchString(tok):
				repos++
			case i == 0 && closed.MatchString(tok):
			default:
				t.Errorf("rules.csv:%d %q: source %q is not owner/repo@commit:path", r.Line, r.Pattern, tok)
			}
		}
		require.Positive(t, repos, "rules.csv:%d %q: no repository cited", r.Line, r.Pattern)
	}
}

// A user's table without the source column still parses; a wrong number of
// fields names the header's columns.
func TestParseRulesSourceColumn(t *testing.T) {
	t.Parallel()
	rs, err := ParseRules(strings.NewReader("priority,pattern,category,provider,short_name\n10,foo,GEMM,x,\n"), "old.csv")
	require.NoError(t, err)
	require.Equal(t, "", rs.rules[0].Cite)
	rs, err = ParseRules(strings.NewReader("priority,pattern,category,provider,short_name,source\n10,foo,GEMM,x,,a/b@0123456789012345678901234567890123456789:f.cu\n"), "new.csv")
	require.NoError(t, err)
	require.Equal(t, "a/b@0123456789012345678901234567890123456789:f.cu", rs.rules[0].Cite)
	_, err = ParseRules(strings.NewReader("priority,pattern,category,provider,short_name,source\n10,foo,GEMM,x,\n"), "new.csv")
	require.ErrorContains(t, err, "new.csv:2: 5 fields, want 6 (priority,pattern,category,provider,short_name,source)")
}

// --explain prints the rule and where its kernels are defined.
func TestExplainCitesSource(t *testing.T) {
	t.Parallel()
	c := NewClassifier(nil, nil)
	_, why := c.Explain("void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, float, float)")
	text := strings.Join(why, "\n")
	require.Contains(t, text, `"flashinfer::norm::"`)
	require.Contains(t, text, "defined in flashinfer-ai/flashinfer@")
	require.Contains(t, text, ":include/flashinfer/norm.cuh")
}

func TestTraceEngine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, want string
		tr         tracing.Trace
		ops        map[int64]string
	}{
		{name: "python step function", want: EngineSGLang, tr: tracing.Trace{Engine: "sglang", Steps: []tracing.Step{{Label: "execute_32_context_0(sq0)_generation_32(sq32)"}}}},
		{name: "sgl_kernel op before a vLLM-style label", want: EngineSGLang, tr: tracing.Trace{Steps: []tracing.Step{{Label: "execute_32_context_0(sq0)_generation_32(sq32)"}}}, ops: map[int64]string{1: "sgl_kernel::silu_and_mul"}},
		{name: "SGLang step label", want: EngineSGLang, tr: tracing.Trace{Steps: []tracing.Step{{Label: "step[DECODE bs=8]"}}}},
		{name: "ATOM step label", want: EngineATOM, tr: tracing.Trace{Steps: []tracing.Step{{Label: "decode[bs=8 tok=8]"}}}},
		{name: "vLLM step label", want: EngineVLLM, tr: tracing.Trace{Steps: []tracing.Step{{Label: "execute_8_context_0(sq0)_generation_8(sq8)"}}}, ops: map[int64]string{1: "aten::mm"}},
		{name: "vLLM op only", want: EngineVLLM, ops: map[int64]string{1: "_C::rms_norm"}},
		{name: "nothing", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := tc.tr
			if tc.ops != nil {
				// the trace keeps the ops that launched a kernel
				tr.Kernels = []tracing.Kernel{{External: 1, Kind: tracing.KindKernel}}
				tr.SetOps(tc.ops)
			}
			got, why := traceEngine(&tr)
			require.Equal(t, tc.want, got, why)
			require.Equal(t, tc.want == "", why == "")
		})
	}
}

// Layer evidence: a batched GEMM between a MoE layer's routing and its
// finalize is the experts' GEMM (graph replay leaves no op to say so), and
// a sampler's kernels after the last layer are Sampling.
func TestLayerEvidence(t *testing.T) {
	t.Parallel()
	const (
		routing  = "void moe::dev::routing::routingDeepSeek::routingMainKernel<moe::dev::routing::routingDeepSeek::KernelParams<float, float, 256, 8, true> >(moe::dev::routing::routingDeepSeek::KernelParams<float, float, 256, 8, true>)"
		gateUp   = "bmm_E4m3_E4m3E4m3_Fp32_t128x8x128u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_transOut_schedS_bN_dynBatch_sm100f"
		down     = "bmm_Bfloat16_E4m3E4m3_Fp32_t128x8x128u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_transOut_schedS_bN_dynBatch_sm100f"
		finalize = "void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<cutlass::bfloat16_t, cutlass::bfloat16_t, false> >(moe::dev::finalize::KernelParams<cutlass::bfloat16_t, cutlass::bfloat16_t, false>)"
		// a batched GEMM outside the MoE part (an MLA absorb bmm) stays dense
		absorb   = "bmm_Bfloat16_Bfloat16Bfloat16_Fp32_t128x16x128_s4_et128x16_m128x16x16_cga1x1x1_16dp256b_TN_schedS_sm100f"
		sortK    = "void at::native::bitonicSortKVInPlace<2, -1, 16, 16, float, long, at::native::LTOp<float, true>, unsigned int>(x)"
		softmaxK = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)"
		divK     = "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::DivFunctor<float> >, std::array<char*, 3ul> >(int, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::DivFunctor<float> >, std::array<char*, 3ul>)"
		copyK    = "void at::native::vectorized_elementwise_kernel<4, at::native::bfloat16tofloat32_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, x, std::array<char*, 2ul>)"
	)
	c := NewClassifier(nil, nil)
	c.vendor = "nvidia"
	for _, k := range []string{gateUp, down, absorb} {
		require.True(t, strings.HasPrefix(c.Classify(k).Category, "Dense GEMM"), "before: the name says only a batched GEMM: %s", k)
	}
	require.Equal(t, "Softmax", c.Classify(softmaxK).Category)
	table := &LayerTable{StepKind: "decode"}
	for i, k := range []string{absorb, routing, gateUp, down, finalize} {
		table.Positions = append(table.Positions, Position{Pos: i, Kernel: k})
	}
	c.epilogue = []epilogueKernel{
		{"decode", sortK, "aten::sort"}, {"decode", softmaxK, "aten::softmax"}, {"decode", divK, "aten::div_"},
		{"decode", copyK, "aten::copy_"}, {"prefill", "void at::native::tensor_kernel_scan_innermost_dim<float, std::plus<float> >(x)", "aten::cumsum"},
	}
	c.Learn(table)
	for _, k := range []string{gateUp, down} {
		got := c.Classify(k)
		require.Equal(t, "MoE expert GEMM", got.Category, k)
		require.Equal(t, SourcePosition, got.Source)
		require.Equal(t, "TensorRT-LLM", got.Provider)
	}
	require.Equal(t, "MoE expert GEMM", table.Positions[2].Category, "Learn relabels the table")
	require.Equal(t, "Dense GEMM (BF16)", c.Classify(absorb).Category, "before the routing: not the experts'")
	for _, k := range []string{sortK, softmaxK, divK} {
		require.Equal(t, "Sampling", c.Classify(k).Category, k)
	}
	require.Equal(t, "Elementwise / copy", c.Classify(copyK).Category, "a copy is no sampler op")
	require.Equal(t, "Reduction / scan / sort", c.Classify("void at::native::tensor_kernel_scan_innermost_dim<float, std::plus<float> >(x)").Category, "another step kind's epilogue")
	_, why := c.Explain(sortK)
	require.Contains(t, strings.Join(why, "\n"), "after the last layer")
}

// A kernel the layers run too is not the sampler's alone.
func TestSamplerSkipsLayerKernels(t *testing.T) {
	t.Parallel()
	const softmaxK = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)"
	c := NewClassifier(nil, nil)
	table := &LayerTable{StepKind: "decode", Positions: []Position{{Kernel: softmaxK}}}
	c.epilogue = []epilogueKernel{{"decode", softmaxK, "aten::softmax"}}
	c.Learn(table)
	require.Equal(t, "Softmax", c.Classify(softmaxK).Category)
}

// A name word that says what a kernel computes (moe/expert, lora, norm,
// rope, attention, sampling, allreduce) outranks one that says how (sort,
// reduce, copy, kernel), with no rule at all.
func TestNameWordsOutrankGeneric(t *testing.T) {
	t.Parallel()
	none := DefaultRules().Filter(func(Rule) bool { return false })
	tests := []struct{ kernel, want, why string }{
		{"void count_and_sort_expert_tokens_kernel<int>(int const*, int*, int*, unsigned long, int)", "MoE sort / align", "sort … expert: MoE routing, not a sort"},
		{"void moe_sum_reduce_kernel<__nv_bfloat16, 8>(__nv_bfloat16 const*, __nv_bfloat16*, int, int, float)", MoEFinalize, "moe sum, not a reduction"},
		{"void expert_sum_kernel<float>(float*)", MoEFinalize, "expert sum"},
		{"void (anonymous namespace)::fused_qknorm_rope_kernel<128, true>(__nv_bfloat16*)", "RMSNorm / LayerNorm", "qknorm before rope and elementwise"},
		{"void (anonymous namespace)::qknorm_kernel<128>(__nv_bfloat16*)", "RMSNorm / LayerNorm", "a q/k norm"},
		{"_sgemm_lora_b_kernel", "Dense GEMM (BF16)", "lora: the adapter's GEMM"},
		{"void bgmv_expand_kernel<16, 4, 8>(float*)", "Dense GEMM (BF16)", "punica bgmv"},
		{"void sampling_top_k_renorm_sort_kernel<float>(float*)", "Sampling", "sampling before sort"},
		{"void one_shot_allreduce_kernel<float>(float*)", "All-reduce / collectives", "allreduce before reduce"},
		{"void my_rotary_copy_kernel<float>(float*)", "RoPE", "rotary before copy"},
	}
	for _, tc := range tests {
		got := none.Classify(tc.kernel)
		require.Equal(t, tc.want, got.Category, "%s: %s", tc.why, tc.kernel)
		require.Equal(t, SourceName, got.Source, tc.kernel)
	}
}
