package kernelmodel

import (
	"strconv"
	"strings"
)

// The modules of the model: which nn.Module launches each kernel of a
// forward pass, the op it calls and the shapes of that op's inputs, as a
// capture trace records them. The built-in model is MiniMax-M2.5 (hidden
// 3072, 48 query and 8 KV heads of 128, 256 experts of intermediate 1536,
// top-8, vocabulary 200064); a model read from per-layer CSVs gets the
// same names by short name, which is what its tables share.

// Dimensions of the built-in model, for shapes.
const (
	hidden     = 3072
	qHeads     = 48
	kvHeads    = 8
	headDim    = 128
	experts    = 256
	topK       = 8
	moeInter   = 1536
	vocab      = 200064
	blockScale = 128 // fp8 block-scale group
)

// Module is where a kernel sits in the model and what launched it.
type Module struct {
	Path       string    // module path, e.g. model.layers.3.mlp.experts
	Op         string    // the CPU op that launches the kernel
	InputDims  [][]int64 // the op's input shapes
	InputTypes []string  // the op's input dtypes, one per shape
}

const (
	bf16 = "c10::BFloat16"
	fp8  = "c10::Float8_e4m3fn"
	f32  = "float"
	i32  = "int"
)

// Modules returns the module of each run of a forward pass (DecodeStep's
// or PrefillStep's runs; the eager prep and sampling kernels get none) for
// a pass over rows tokens.
func Modules(runs []KernelRun, rows int) []Module {
	out := make([]Module, len(runs))
	t := int64(max(rows, 1))
	seenLayer := false
	for i := 0; i < len(runs); {
		r := &runs[i]
		if r.Section == SectionPrep || r.Section == SectionSample {
			i++
			continue
		}
		if r.Layer < 0 {
			if seenLayer {
				out[i] = epilogueModule(r, t)
			} else {
				out[i] = prologueModule(r, t)
			}
			i++
			continue
		}
		seenLayer = true
		j := i
		for j < len(runs) && runs[j].Layer == r.Layer && runs[j].Section != SectionPrep && runs[j].Section != SectionSample {
			j++
		}
		layerModules(runs[i:j], out[i:j], r.Layer, t)
		i = j
	}
	return out
}

func prologueModule(r *KernelRun, t int64) Module {
	if r.ShortName == "Embedding" {
		return Module{"model.embed_tokens", "aten::embedding", [][]int64{{vocab, hidden}, {t}}, []string{bf16, "long int"}}
	}
	return Module{"model", opFor(r.ShortName), [][]int64{{t, hidden}}, []string{bf16}}
}

func epilogueModule(r *KernelRun, t int64) Module {
	switch {
	case strings.HasPrefix(r.ShortName, "RMSNorm"):
		return Module{"model.norm", "aiter::add_rmsnorm_quant", [][]int64{{t, hidden}, {t, hidden}, {hidden}}, []string{bf16, bf16, bf16}}
	case strings.HasPrefix(r.ShortName, "GEMM"):
		return Module{"lm_head", "aten::mm", [][]int64{{t, hidden}, {hidden, vocab}}, []string{bf16, bf16}}
	}
	return Module{"model", opFor(r.ShortName), [][]int64{{t, hidden}}, []string{bf16}}
}

// layerModules names the kernels of one layer by their short names and
// order: the first dense FP8 GEMM is the output projection, the second the
// QKV projection; the first fused norm is post_attention_layernorm, the
// second the input_layernorm the next kernels need; an FP8 quant belongs
// to the GEMM that follows it.
func layerModules(runs []KernelRun, out []Module, layer int, t int64) {
	pre := "model.layers." + strconv.Itoa(layer) + "."
	var nGEMM, nNorm, nQNorm, nMoE int
	qkvOut := int64((qHeads + 2*kvHeads) * headDim)
	attnOut := int64(qHeads * headDim)
	for i := range runs {
		r := &runs[i]
		var m Module
		switch r.ShortName {
		case "PA (paged_attn)":
			m = Module{"self_attn.attn", "aiter::pa_fwd_asm", [][]int64{{t, qHeads, headDim}, {t}}, []string{bf16, i32}}
		case "FlashAttn":
			m = Module{"self_attn.attn", "aiter::mha_varlen_fwd", [][]int64{{t, qHeads, headDim}, {t, kvHeads, headDim}, {t, kvHeads, headDim}}, []string{bf16, bf16, bf16}}
		case "KV_cache_quant":
			m = Module{"self_attn.attn", "aiter::reshape_and_cache_with_pertoken_quant", [][]int64{{t, kvHeads, headDim}, {t, kvHeads, headDim}, {t}}, []string{bf16, bf16, "long int"}}
		case "RoPE":
			m = Module{"self_attn.rotary_emb", "aiter::rope_cached_positions_2c_fwd_inplace", [][]int64{{t, qHeads, headDim}, {t, kvHeads, headDim}, {t}}, []string{bf16, bf16, "long int"}}
		case "RMSNorm_triton":
			m = Module{"self_attn.q_norm", "triton_red_fused_rmsnorm", [][]int64{{t, attnOut}, {attnOut}}, []string{bf16, bf16}}
			if nQNorm > 0 {
				m = Module{"self_attn.k_norm", "triton_red_fused_rmsnorm", [][]int64{{t, kvHeads * headDim}, {kvHeads * headDim}}, []string{bf16, bf16}}
			}
			nQNorm++
		case "GEMM_FP8 (CK dense)":
			m = Module{"self_attn.o_proj", "aiter::gemm_a8w8_blockscale", [][]int64{{t, attnOut}, {hidden, attnOut}}, []string{fp8, fp8}}
			if nGEMM > 0 {
				m = Module{"self_attn.qkv_proj", "aiter::gemm_a8w8_blockscale", [][]int64{{t, hidden}, {qkvOut, hidden}}, []string{fp8, fp8}}
			}
			nGEMM++
		case "RMSNorm+Quant":
			m = Module{"post_attention_layernorm", "aiter::add_rmsnorm_quant", [][]int64{{t, hidden}, {t, hidden}, {hidden}}, []string{bf16, bf16, bf16}}
			if nNorm > 0 {
				m.Path = "input_layernorm"
			}
			nNorm++
		case "Triton_copy":
			m = Module{"mlp.gate", "triton_poi_fused__to_copy", [][]int64{{t, hidden}}, []string{bf16}}
		case "GEMM_BF16 (rocBLAS)":
			m = Module{"mlp.gate", "aten::mm", [][]int64{{t, hidden}, {hidden, experts}}, []string{f32, f32}}
		case "MoE_gate (topk)":
			m = Module{"mlp.experts", "aiter::grouped_topk", [][]int64{{t, experts}, {experts}}, []string{f32, f32}}
		case "MoE_sort", "MoE_sort_P0", "MoE_sort_P23":
			m = Module{"mlp.experts", "aiter::moe_sorting_fwd", [][]int64{{t, topK}, {t, topK}}, []string{i32, f32}}
		case "MoE_GEMM (CK)":
			m = Module{"mlp.experts", "aiter::ck_moe_stage1", [][]int64{{t, hidden}, {experts, 2 * moeInter, hidden}}, []string{fp8, fp8}}
			if nMoE > 0 {
				m = Module{"mlp.experts", "aiter::ck_moe_stage2", [][]int64{{t, topK, moeInter}, {experts, hidden, moeInter}}, []string{fp8, fp8}}
			}
			nMoE++
		case "MoE_GEMM_fused (ASM)":
			m = Module{"mlp.experts", "aiter::fmoe_fp8_blockscale_g1u1", [][]int64{{t, hidden}, {experts, 2 * moeInter, hidden}, {experts, hidden, moeInter}}, []string{fp8, fp8, fp8}}
		case "FP8_quant":
			// Quantises the input of the GEMM that follows: set below.
		default:
			m = Module{"", opFor(r.ShortName), [][]int64{{t, hidden}}, []string{bf16}}
		}
		out[i] = m
	}
	for i := len(runs) - 1; i >= 0; i-- {
		if runs[i].ShortName != "FP8_quant" {
			continue
		}
		k := int64(hidden)
		path := ""
		for j := i + 1; j < len(runs); j++ {
			if n := out[j]; len(n.InputDims) > 0 && len(n.InputDims[0]) >= 2 && len(n.InputTypes) > 0 && n.InputTypes[0] == fp8 {
				path, k = n.Path, n.InputDims[0][len(n.InputDims[0])-1]
				break
			}
		}
		out[i] = Module{path, "aiter::dynamic_per_group_scaled_quant", [][]int64{{t, k}, {t, k / blockScale}}, []string{bf16, f32}}
	}
	for i := range out {
		if out[i].Path == "" {
			out[i].Path = strings.TrimSuffix(pre, ".")
		} else {
			out[i].Path = pre + out[i].Path
		}
	}
}

// opFor names the op of a kernel the table above does not know.
func opFor(short string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(short) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	s := strings.Trim(b.String(), "_")
	if s == "" {
		s = "custom_op"
	}
	return "aiter::" + s
}
