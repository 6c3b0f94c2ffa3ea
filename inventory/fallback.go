package inventory

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The fallbacks after the rule table. The rule table names kernels seen
// before; these read what any kernel name says about itself, so that a
// kernel from another engine, vendor or release still lands in a category:
// the words of its name (split at '_', '::', digits and camel case) and the
// library family its spelling gives away.

// nameWords is a kernel name as a string of lower-case words, each between
// underscores ("_fmha_sm100_kernel_"), so that patterns can anchor on word
// boundaries with '_'.
func nameWords(name string) string {
	var b strings.Builder
	b.Grow(len(name) + 8)
	b.WriteByte('_')
	prevLower, prevDigit, prevSep := false, false, true
	for i := 0; i < len(name); {
		r, size := rune(name[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(name[i:])
		}
		i += size
		switch {
		case 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r >= utf8.RuneSelf && unicode.IsLetter(r):
			upper := 'A' <= r && r <= 'Z' || r >= utf8.RuneSelf && unicode.IsUpper(r)
			if upper && (prevLower || prevDigit) && !prevSep {
				b.WriteByte('_')
			}
			if r < utf8.RuneSelf {
				b.WriteByte(byte(unicode.ToLower(r))) // ASCII: one byte, as the rune
			} else {
				b.WriteRune(unicode.ToLower(r))
			}
			prevLower, prevDigit, prevSep = !upper, false, false
		case '0' <= r && r <= '9' || r >= utf8.RuneSelf && unicode.IsDigit(r):
			b.WriteRune(r)
			prevLower, prevDigit, prevSep = false, true, false
		default:
			if !prevSep {
				b.WriteByte('_')
			}
			prevLower, prevDigit, prevSep = false, false, true
		}
	}
	if !prevSep {
		b.WriteByte('_')
	}
	return b.String()
}

// family is one fallback: a pattern on the words of a kernel name and what
// it says. Families are tried in order; the first match wins, so a narrower
// family (a convolution written as an implicit GEMM, a MoE GEMM) comes
// before a wider one (GEMM).
type family struct {
	re       *lazyRegexp
	category string
	// refine picks a narrower category from the words (FP8 GEMMs, decode
	// attention); nil keeps category.
	refine func(words string) string
}

func fam(expr, category string, refine func(string) string) family {
	return family{re: lazyRE(expr), category: category, refine: refine}
}

var (
	lowPrecision = lazyRE(`_(fp8|f8|e4m3|e5m2|e4m3fn|e4m3fnuz|f8f8|fp4|f4|e2m1|mxfp4|nvfp4|mxf4|w8a8|a8w8|w4a8|w4a16|a8w4|int8|i8|int4|i4|fnuz|blockscale|blockscaled)(_|$)|f8_|e4m3|e2m1|fp8|fp4|int8|blockscale`)
	fp32GEMM     = lazyRE(`_(sgemm|s1688gemm|s884gemm|s1688|sgemv|f32f32f32|tf32|s\d+gemm)`)
	// attention kernels that run one query token per sequence (decode).
	decodeAttn = lazyRE(`_(pa|paged|decode|decoding|xqa|splitkv|split_kv|flash_decoding|mla_decode|mqa|gqa\d*|ll4mi|page|kv_?split)_|paged|decode`)
	// attention reduce: the merge of split-KV partial results.
	attnReduce = lazyRE(`_(combine|merge|reduce|reduction|merge_states|merge_attn|lse)_`)
	// attention kernels for prompts (prefill, extend, ragged batches).
	attnPrefill = lazyRE(`_(prefill|context|extend|varlen|ragged|prompt|chunked_prefill|causal)_|prefill`)
)

func gemmPrecision(w string) string {
	switch {
	case lowPrecision.MatchString(w):
		return "Dense GEMM (FP8/FP4)"
	case fp32GEMM.MatchString(w) && !segmentedLoRA(w):
		return "Dense GEMM (FP32/TF32)"
	}
	return "Dense GEMM (BF16)"
}

// segmentedLoRA tells SGLang's LoRA kernels (_sgemm_lora_a_kernel), whose
// "sgemm" is a segmented GEMM, not a single-precision one.
func segmentedLoRA(w string) bool { return strings.Contains(w, "_lora_") }

func attentionKind(w string) string {
	switch {
	case strings.Contains(w, "_stage2_") || attnReduce.MatchString(w):
		return "Attention reduce"
	case strings.Contains(w, "_stage1_"):
		return "Paged attention (decode)"
	case attnPrefill.MatchString(w):
		return "Flash attention (prefill)"
	case decodeAttn.MatchString(w):
		return "Paged attention (decode)"
	}
	return attentionUnknown
}

// attentionUnknown is the category the name fallback gives an attention
// kernel whose name says neither prefill nor decode; a trace's Classifier
// decides by where the kernel runs (decode steps or not), else prefill.
const attentionUnknown = "Flash attention (prefill)?"

// families, most specific first.
var families = []family{
	// Inductor's Triton fusions list the ops they fused ("addmm" is a bias
	// epilogue, not the GEMM): norms and softmax by their reductions, the
	// rest elementwise.
	fam(`^_triton_(poi|per|red)_fused_`, "Elementwise / copy", tritonFused),
	// cuDNN: convolutions, unless it says batch norm.
	fam(`_(cudnn|scudnn)\w*_(bn|batch_?norm|batchnorm|bn_fw\w*|bn_bw\w*)_`, "BatchNorm", nil),
	fam(`_(cudnn|scudnn|cask_cudnn)_|scudnn|_xmma_(fprop|dgrad|wgrad)`, "Convolution", nil),
	// FBGEMM's embedding-bag kernels (before GEMM: fbgemm says "gemm").
	fam(`_(adam|adamw|sgd|lamb|adagrad|optimizer|fused_adam\w*|multi_tensor_adam\w*|adam_functor|sgd_functor)_|adagrad|adam_functor`, "Optimizer", nil),
	fam(`_fbgemm_gpu_|_split_embedding|_embs_|_pooled_embs|bounds_check_indices|linearize_index`, "Embedding", nil),
	// Communication: NCCL/RCCL, custom all-reduce kernels of the engines
	// (one-shot/two-shot, quick reduce, Lamport, symmetric memory).
	fam(`_(nccl|rccl|mscclpp|msccl|allreduce|all_reduce|allgather|all_gather|reducescatter|reduce_scatter|alltoall|all_to_all|all2all|alltoallv|cross_device_reduce\w*|custom_ar|custom_all_reduce|quick_?reduce|qr|one_?shot|two_?shot|lamport|multimem|symm_mem|broadcast|send_recv|sendrecv)_|allreduce|allgather|reducescatter|alltoall|ncclkernel|ncclDevKernel`, "All-reduce / collectives", nil),
	// Convolutions (before GEMM: implicit-GEMM convolutions say "gemm").
	fam(`_(conv|convolution|conv\d?d|convolve|igemm_(fwd|bwd|wrw)|fprop|dgrad|wgrad|im2col|col2im|im\d?d\d?col\w*|winograd|naive_conv\w*|grouped_conv\w*|depthwise|dwconv)_|conv_fwd|conv_bwd|convolution|implicit_convolve|im2col|im2d2_?col|igemm_(fwd|bwd|wrw)`, "Convolution", nil),
	// MoE: expert GEMMs (grouped, or gathering/scattering tokens), routing
	// (sort/align/permute/finalize), the gate.
	fam(`_(finalize_moe\w*|moe_finalize\w*|moe_combine|moe_unpermute|moe_sum|finalize_matmul\w*|combine_experts?|moe_reduce\w*)_|_(moe|expert|experts)_(sum|reduce|combine)_|finalize_moe|moe_finalize|finalize_matmul`, MoEFinalize, nil),
	fam(`_(moe|fused_moe|expert|experts)_.*_(gemm|mm|matmul|bmm|mlp|gemm\d|flatmm)_|_(fused_moe|fmoe|moe_gemm|moe_mlp|grouped_gemm|groupedgemm|gemm_grouped|matmul_ogs|moe_flatmm|moeflatmm|ck_moe|batched_gemm_moe|ogs)_|_(matmul|gemm|mm)_(scatter|gather)_|_(gather|scatter)_(matmul|gemm|mm)_|fused_moe|moe_gemm|moegemm|grouped_gemm`, "MoE expert GEMM", nil),
	fam(`_(moe|expert|experts|routing|router|topk)_.*_(sort|sorting|align|permute|scatter|gather|expand|histogram|count|offsets|indices)_|_(sort|sorting|align|count|histogram|permute)_(\w*_)?(moe|expert|experts)_|_(moe_align\w*|moe_sort\w*|moesorting\w*|permute_rows|expand_input_rows|moe_permute|moe_dispatch|routing)_|expand_input_rows`, "MoE sort / align", nil),
	fam(`_(moe|expert|experts|router)_.*_(gate|gating|topk|softmax|sigmoid)_|_(topk_gating\w*|topkgating\w*|grouped_topk|topk_softmax|topk_sigmoid|noaux_tc|biased_grouped_topk|moe_gate|moe_topk|router_gemm)_|topkgating|grouped_topk`, "MoE gate", nil),
	// KV cache writes (before attention: reshape_and_cache_flash writes
	// the cache of a flash-attention backend).
	fam(`_(reshape_and_cache\w*|store_kv\w*|store_kvcache|set_kv_buffer|write_kv\w*|concat_and_cache\w*|append_paged_kv_cache|copy_blocks|swap_blocks)_|reshape_and_cache|store_kvcache|concat_and_cache`, "KV cache", nil),
	// LoRA adapters' shrink (x·A) and expand (·B) GEMMs: "lora" says what
	// they compute, "sgmv"/"bgmv" (punica) how.
	fam(`_(lora|sgmv|bgmv|punica)_`, "Dense GEMM (BF16)", gemmPrecision),
	// Quantisation that prepares attention's inputs (SageAttention's
	// per-block Q/K quant, an MLA query quant) is quantisation, not
	// attention, though its name says both.
	fam(`_(quant|quantize|quantization|dequant|dequantize)_(\w*_)?(attn|attention|sage|sageattn|mla|mha|fmha|qk)_|_(attn|attention|sage|sageattn|mla|mha|fmha|qk)_(\w*_)?(quant|quantize|quantization|dequant|dequantize)_`, "Activation quant", nil),
	// Triton attention in the lightllm/SGLang/vLLM convention: _fwd_kernel
	// (prefill), _fwd_[grouped_]kernel_stage1 (decode) and _stage2 (its
	// reduce).
	fam(`^_fwd_(grouped_)?kernel(_stage[12])?_$`, "Flash attention (prefill)", attentionKind),
	// Attention in any spelling: flash, fmha, mha, paged, sage, MLA, XQA,
	// Triton and cuDNN SDPA kernels.
	fam(`_(flash|flashattn|flash_attn|fmha|mha|mqa|gqa|mla|attn|attention|sdpa|sage|sageattn|paged_attention|pa|xqa|unified_attention|lightning_attn|prefill_attention|decode_attention|context_attention|fwd_attn|bwd_attn)_|attention|flashattn|fmha|sdpa|flash_fwd|flash_bwd|_with_(paged|ragged)_kv|_single_(prefill|decode)_`, "Flash attention (prefill)", attentionKind),
	// GEMM and GEMV in any vendor's spelling: Tensile Cijk, hipBLASLt,
	// skinny GEMMs, cuBLAS/cuBLASLt (xmma, nvjet, gemv2T), CUTLASS,
	// trtllm-gen and FlashInfer batched GEMMs, Triton and inductor matmuls,
	// ATen's own.
	fam(`_(cijk|gemm|gemv|gemmk1|gemm_sn|bmm|mm|addmm|baddbmm|matmul|matmul_kernel|mma|xmma|nvjet|hgemm|sgemm|dgemm|igemm|wmma|wgmma|skinny|llgemm\d*|wvsplitk\w*|wv_splitk\w*|splitk|split_k|split_?k_?reduce|tensorop|scaled_mm|w8a8|a8w8|gemm_universal|gemmuniversal|flatmm|hipblaslt|cublas|cublaslt|tensile)_|gemm|gemv|matmul|nvjet|xmma|cijk_|_mm_`, "Dense GEMM (BF16)", gemmPrecision),
	// Normalisation: RMS/layer norm, group and instance norm, batch norm.
	fam(`_(group_?norm|groupnorm\w*|instance_?norm|instancenorm)_|groupnorm|group_norm|instance_norm`, "GroupNorm", nil),
	fam(`_(batch_?norm|batchnorm|bn|bn_fw\w*|bn_bw\w*|bn_fwd|bn_bwd|syncbn)_|batch_norm|batchnorm`, "BatchNorm", nil),
	fam(`_(rms|rmsnorm\w*|rms_norm|layernorm\w*|layer_norm|ln|norm|norm\d*d|l2norm|qk_norm|qknorm\w*|fused_add_rms\w*|add_rms\w*|skip_layernorm|rmsnorm2d|layernorm2d)_|rmsnorm|layernorm|rms_norm|layer_norm|qknorm`, "RMSNorm / LayerNorm", nil),
	// Rotary position embedding.
	fam(`_(rope|rotary|rotary_emb|rotary_embedding|pos_encoding|mrope|apply_rotary)_|rotary|_rope`, "RoPE", nil),
	// KV cache, the kernels that only say "kv cache" (after attention:
	// attention kernels read a paged KV cache too).
	fam(`_(kv_cache|kvcache|cache_kv|kv_indices|kv_idx)_|kv_cache|kvcache`, "KV cache", nil),
	// Quantise and dequantise activations.
	fam(`_(quant|quantize|quantization|dequant|dequantize|scaled_quant|fp8_quant|fp4_quant|cvt_fp16_to_fp4|cvt_\w*fp4|cast_to_fp8|to_fp8|act_quant|per_token_quant|per_group_quant|mxfp4_quant|nvfp4_quant)_|quant|dequant`, "Activation quant", nil),
	// Sampling and logits processing.
	fam(`_(sample|sampling|sampler|top_k_top_p|topk_topp|top_p|top_k|topp|min_p|gumbel|multinomial|penalty|penalties|apply_penalties|argmax|logits|logit|exponential)_|sampling|sampler|top_k_top_p|topktopp`, "Sampling", nil),
	// Activations (SiLU/GELU and mul).
	fam(`_(silu|gelu|swiglu|geglu|act_and_mul|silu_and_mul|gelu_and_mul|relu|relu2|squared_relu|swish|mish|quick_gelu|gelu_tanh|tanh|sigmoid|activation|act)_|silu|gelu|swiglu|act_and_mul`, "Activation (SiLU/GELU and mul)", nil),
	// Embedding lookups.
	fam(`_(embedding|embeddings|embed|index_select|indexselect\w*|vocab_parallel_embedding|embedding_bag)_|embedding|index_select`, "Embedding", nil),
	fam(`_(softmax|log_softmax|softmax\w*)_|softmax`, "Softmax", nil),
	// Transposes and layout changes.
	fam(`_(transpose|transposed|batched_transpose\w*|permute|nchw_to_nhwc|nhwc_to_nchw|nchwtonhwc|nhwctonchw|layout|relayout|shuffle|interleave)_|transpose|nchwtonhwc|nhwctonchw|nchw_to_nhwc|nhwc_to_nchw`, "Transpose", nil),
	// Reductions, scans, sorts.
	fam(`_(reduce|reduction|reduce_kernel|scan|sort|radix|radix_sort|segmented|cumsum|topk|histogram|argsort|cub|rocprim|hipcub|device_reduce|device_scan)_|radix|rocprim|hipcub|cub_`, "Reduction / scan / sort", nil),
	// Optimiser and loss (training traces).
	fam(`_(nll|cross_entropy|loss|mse)_`, "Loss", nil),
	fam(`_(pool|pooling|max_pool\w*|avg_pool\w*|maxpool\w*|avgpool\w*|adaptive_avg_pool\w*|adaptive_max_pool\w*|mlo_pooling\w*)_`, "Pooling", nil),
	// Everything elementwise: copies, casts, fills, pointwise arithmetic,
	// Triton pointwise fusions, MIOpen tensor ops.
	fam(`_(elementwise|element_wise|pointwise|vectorized|unrolled|copy|copies|cast|convert|fill|memset|memcpy|zero|zeros|set|add|sub|mul|div|scale|scaled|bias|clamp|where|masked|neg|exp|pow|sqrt|rsqrt|abs|fused|poi|per|red|triton|index|gather|scatter|cat|concat|split|pad|slice|arange|iota|tensor_op|tensorop|op_tensor|sub_tensor_op\w*|op1d\w*|op2d\w*|op3d\w*|unary|binary|ternary|apply|distribution|random|philox|dropout|randn|rand|uniform|normal|bernoulli|upsample\w*|interpolate|resize|grid_sample|position|positions|ids|token_ids|offsets|indices|mask|seq_lens|prepare|update|compute)_`, "Elementwise / copy", nil),
}

// providers says which library wrote a kernel, from its spelling. First
// match wins.
var providers = []struct {
	re       *lazyRegexp
	provider string
}{
	{lazyRE(`_(rccl|msccl|mscclpp)`), "RCCL"},
	{lazyRE(`_nccl`), "NCCL"},
	{lazyRE(`_cijk_|_tensile_|_hipblaslt_`), "rocBLAS / hipBLASLt"},
	{lazyRE(`_(xmma|nvjet|cublas|cublaslt|gemv2[nt]|gemvx|gemmk1|gemm_sn|splitkreduce)_|_sm\d+_xmma|_(ampere|volta|turing|hopper|blackwell)_`), "cuBLAS / cuBLASLt"},
	{lazyRE(`_cutlass`), "CUTLASS"},
	{lazyRE(`_(trtllm|tensorrt_llm|tllm|xqa)_|trtllm`), "TensorRT-LLM"},
	{lazyRE(`_flashinfer_|flashinfer`), "FlashInfer"},
	{lazyRE(`_(flash|flash_attn|pytorch_flash)_`), "FlashAttention"},
	{lazyRE(`_cudnn|_cask_|_xmma_(fprop|dgrad|wgrad)`), "cuDNN"},
	{lazyRE(`_(miopen|igemm_(fwd|bwd|wrw)_gtc\w*|naive_conv\w*|batched_transpose|sub_tensor_op|op_tensor|op1d_tensor)|miopen|igemm_(fwd|bwd|wrw)|subtensorop|im2d2_?col`), "MIOpen"},
	{lazyRE(`_ck_tile_`), "ck_tile"},
	{lazyRE(`_ck_|_xdl_|_cshuffle|_device_gemm`), "CK"},
	{lazyRE(`_aiter_`), "aiter"},
	{lazyRE(`_(vllm|_c)_`), "vLLM custom ops"},
	{lazyRE(`_(sglang|sgl|sgl_kernel)_`), "SGLang custom ops"},
	{lazyRE(`^_triton_|_triton_(poi|per|red|tem)_|^_(attn|matmul|fused)\w*_kernel_$`), "Triton"},
	{lazyRE(`_cub_`), "CUB"},
	{lazyRE(`_(rocprim|hipcub)_`), "rocPRIM"},
	{lazyRE(`_at_native_|_at_|_c10_`), "PyTorch"},
}

// classifyByName is the name fallback: the first family whose pattern
// matches the words of the short name, then of the whole demangled name
// (template arguments say what a generic kernel computes), the elementwise
// family last of all. ok is false when no family matches.
func classifyByName(name string) (Class, bool) {
	c, strength := nameClass(name)
	return c, strength > nameNone
}

// How much a name says: nothing, only that it is elementwise (the last
// family, the fallback of generic words), or what it computes.
const (
	nameNone = iota
	nameWeak
	nameStrong
)

func nameClass(name string) (Class, int) {
	name = matchText(name)
	short := ShortName(name)
	full := readableName(name)
	ws, wf := nameWords(short), nameWords(full)
	last := len(families) - 1 // the elementwise family
	try := func(w string, lo, hi int) string {
		for i := lo; i < hi; i++ {
			f := &families[i]
			if f.re.MatchString(w) {
				if f.refine != nil {
					return f.refine(wf)
				}
				return f.category
			}
		}
		return ""
	}
	strength := nameStrong
	cat := try(ws, 0, last)
	if cat == "" {
		cat = try(wf, 0, last)
	}
	if cat == "" {
		strength = nameWeak
		cat = try(ws, last, last+1)
	}
	if cat == "" {
		cat = try(wf, last, last+1)
	}
	if cat == "" {
		return Class{}, nameNone
	}
	if cat == "Elementwise / copy" {
		// An inductor fusion with nothing but pointwise ops says only that.
		strength = nameWeak
	}
	if strings.HasPrefix(ws, "_triton_") {
		// Inductor's op list is the kernel's own word: the op that launched
		// it is the kernel.
		strength = nameStrong
	}
	return Class{Category: cat, Provider: providerOf(full), ShortName: short, Source: SourceName}, strength
}

var (
	fusedNorm       = lazyRE(`_(native_layer_norm|layer_norm|rms_norm|group_norm|native_group_norm|native_batch_norm\w*|batch_norm|rsqrt|var_mean)_`)
	fusedActivation = lazyRE(`_(gelu|silu|relu|sigmoid|tanh|mish|hardswish|hardsigmoid|softplus|elu|leaky_relu|threshold|swiglu)_`)
	fusedReduction  = lazyRE(`_(sum|mean|amax|amin|max|min|argmax|argmin|prod|cumsum|any|all)_`)
)

// tritonFused names an inductor fusion by its dominant op: the op list of
// its name, the reductions (norms, softmax) before an embedding lookup
// before an activation before plain arithmetic (an "addmm" in the list is a
// GEMM's bias epilogue, the GEMM ran elsewhere).
func tritonFused(w string) string {
	red := strings.HasPrefix(w, "_triton_red_") || strings.HasPrefix(w, "_triton_per_")
	switch {
	case red && fusedNorm.MatchString(w):
		switch {
		case strings.Contains(w, "_group_norm_"):
			return "GroupNorm"
		case strings.Contains(w, "_batch_norm"):
			return "BatchNorm"
		}
		return "RMSNorm / LayerNorm"
	case red && strings.Contains(w, "_softmax_") || strings.Contains(w, "_amax_") && strings.Contains(w, "_exp_"):
		return "Softmax"
	case strings.Contains(w, "_embedding_"):
		return "Embedding"
	case strings.Contains(w, "_moe_"):
		// A fusion around a MoE op is its routing (padding the logits).
		return "MoE gate"
	case fusedActivation.MatchString(w):
		return "Activation (SiLU/GELU and mul)"
	case red && fusedReduction.MatchString(w):
		return "Reduction / scan / sort"
	}
	return "Elementwise / copy"
}

// providerOf names the library of a kernel from its spelling, "" when
// nothing says.
func providerOf(demangled string) string {
	w := nameWords(demangled)
	for _, p := range providers {
		if p.re.MatchString(w) {
			return p.provider
		}
	}
	return ""
}
