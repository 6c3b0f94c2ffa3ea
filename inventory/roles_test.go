package inventory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/internal/modelconfig"
	"github.com/profile-model/profile-model/tracing"
)

// layerOf builds a one-kind table from "short name|category" pairs.
func layerOf(t *testing.T, spec ...string) *LayerTable {
	t.Helper()
	lt := &LayerTable{}
	for i, s := range spec {
		name, cat, ok := strings.Cut(s, "|")
		if !ok {
			t.Fatalf("bad spec %q", s)
		}
		lt.Positions = append(lt.Positions, Position{Pos: i, ShortName: name, Kernel: name, Category: cat})
	}
	return lt
}

func roles(lt *LayerTable) []string {
	out := make([]string, len(lt.Positions))
	for i, p := range lt.Positions {
		out[i] = p.Role
	}
	return out
}

const (
	cGEMM  = "Dense GEMM (BF16)"
	cFP8   = "Dense GEMM (FP8/FP4)"
	cMoE   = "MoE expert GEMM"
	cNorm  = "RMSNorm / LayerNorm"
	cQuant = "Activation quant"
	cPA    = "Paged attention (decode)"
	cRed   = "Attention reduce"
	cGate  = "MoE gate"
	cSort  = "MoE sort / align"
	cAct   = "Activation (SiLU/GELU and mul)"
	cRoPE  = "RoPE"
	cKV    = "KV cache"
	cAR    = "All-reduce / collectives"
)

func TestRolesDenseGQA(t *testing.T) {
	// A Llama-style dense layer as SGLang runs it, starting at the QKV GEMM.
	lt := layerOf(t, "GEMM|"+cGEMM, "RoPE|"+cRoPE, "KV|"+cKV, "PA|"+cPA, "PA_reduce|"+cRed,
		"GEMM|"+cGEMM, "AR|"+cAR, "RMSNorm|"+cNorm, "GEMM|"+cGEMM, "act_and_mul|"+cAct, "GEMM|"+cGEMM, "AR|"+cAR, "RMSNorm|"+cNorm)
	arch := &modelconfig.Architecture{Attention: "GQA", Heads: 32, KVHeads: 8}
	lt.AssignRoles(arch)
	want := []string{"QKV", "RoPE", "KV cache write", "attention", "attn reduce", "O-proj", "after O-proj", "post-attn norm",
		"gate_up", "activation", "down", "after MLP", "input norm"}
	if got := roles(lt); !slices.Equal(got, want) {
		t.Errorf("roles\n got %q\nwant %q", got, want)
	}
	for _, p := range lt.Positions {
		if p.RoleSource != RoleFromInferred {
			t.Errorf("pos %d: role source %q, want inferred", p.Pos, p.RoleSource)
		}
	}
}

func TestRolesMoENoShared(t *testing.T) {
	// The ATOM MiniMax layer (no shared expert), starting at attention.
	lt := layerOf(t, "PA (paged_attn)|"+cPA, "FP8_quant|"+cQuant, "GEMM_FP8 (CK dense)|"+cFP8, "RMSNorm+Quant|"+cNorm,
		"Triton_copy|Elementwise / copy", "GEMM_BF16 (rocBLAS)|"+cGEMM, "MoE_gate (topk)|"+cGate, "MoE_sort|"+cSort,
		"FP8_quant|"+cQuant, "MoE_GEMM (CK)|"+cMoE, "FP8_quant|"+cQuant, "MoE_GEMM (CK)|"+cMoE, "RMSNorm+Quant|"+cNorm,
		"FP8_quant|"+cQuant, "GEMM_FP8 (CK dense)|"+cFP8, "RMSNorm_triton|"+cNorm, "RMSNorm_triton|"+cNorm, "RoPE|"+cRoPE, "KV_cache_quant|"+cKV)
	lt.AssignRoles(&modelconfig.Architecture{MoE: true, Experts: 256, TopK: 8})
	want := []string{"attention", "before O-proj", "O-proj", "post-attn norm", "before router", "router", "top-k", "sort",
		"before gate_up", "gate_up", "before down", "down", "input norm", "before QKV", "QKV", "q_norm", "k_norm", "RoPE", "KV cache write"}
	if got := roles(lt); !slices.Equal(got, want) {
		t.Errorf("roles\n got %q\nwant %q", got, want)
	}
	labels := lt.Labels()
	for _, w := range []string{"MoE_GEMM (gate_up)", "MoE_GEMM (down)", "GEMM_FP8 (O-proj)", "GEMM_FP8 (QKV)", "FP8_quant (before QKV)"} {
		if !slices.Contains(labels, w) {
			t.Errorf("labels %q lack %q", labels, w)
		}
	}
	if dup := firstDuplicate(labels); dup != "" {
		t.Errorf("label %q repeats", dup)
	}
}

func TestRolesMoEShared(t *testing.T) {
	// A Qwen2-MoE / DeepSeek-style layer: router, top-k, routed experts
	// (fused gate_up and down) and a shared expert's two dense GEMMs.
	lt := layerOf(t, "GEMM|"+cGEMM, "RoPE|"+cRoPE, "KV|"+cKV, "FlashAttn|Flash attention (prefill)", "GEMM|"+cGEMM,
		"RMSNorm|"+cNorm, "GEMM|"+cGEMM, "topk_softmax|"+cGate, "align|"+cSort, "fused_moe|"+cMoE, "act|"+cAct,
		"fused_moe|"+cMoE, "GEMM|"+cGEMM, "act|"+cAct, "GEMM|"+cGEMM, "RMSNorm|"+cNorm)
	lt.AssignRoles(&modelconfig.Architecture{MoE: true, Experts: 64, TopK: 6, SharedExperts: 2})
	want := []string{"QKV", "RoPE", "KV cache write", "attention", "O-proj", "post-attn norm", "router", "top-k", "sort",
		"gate_up", "activation", "down", "shared gate_up", "activation", "shared down", "input norm"}
	if got := roles(lt); !slices.Equal(got, want) {
		t.Errorf("roles\n got %q\nwant %q", got, want)
	}
	// Without shared experts in the config the extra GEMMs are not
	// called shared.
	lt.AssignRoles(&modelconfig.Architecture{MoE: true, Experts: 64, TopK: 6})
	if r := lt.Positions[12].Role; strings.HasPrefix(r, "shared") {
		t.Errorf("pos 12 without shared experts: role %q", r)
	}
	// Two identical activation labels are told apart.
	labels := lt.Labels()
	if firstDuplicate(labels) != "" || !slices.Contains(labels, "act (activation) #2") {
		t.Errorf("labels not made unique: %q", labels)
	}
}

func TestRolesFromCapture(t *testing.T) {
	lt := layerOf(t, "GEMM|"+cGEMM, "PA|"+cPA, "GEMM|"+cGEMM, "RMSNorm|"+cNorm, "GEMM|"+cGEMM, "GEMM|"+cGEMM, "RMSNorm|"+cNorm)
	lt.Positions[0].Module = "model.layers.*.self_attn.qkv_proj"
	lt.Positions[5].Module = "model.layers.*.mlp.down_proj"
	lt.Positions[6].Module = "model.layers.*.input_layernorm"
	lt.AssignRoles(nil)
	for _, c := range []struct {
		pos        int
		role, from string
	}{{0, "QKV", RoleFromCapture}, {5, "down", RoleFromCapture}, {6, "input norm", RoleFromCapture}, {2, "O-proj", RoleFromInferred}} {
		if p := lt.Positions[c.pos]; p.Role != c.role || p.RoleSource != c.from {
			t.Errorf("pos %d: role %q from %q, want %q from %q", c.pos, p.Role, p.RoleSource, c.role, c.from)
		}
	}
}

func TestRolesFromSGLangClasses(t *testing.T) {
	// SGLang's capture names modules by class and instance.
	lt := layerOf(t, "GEMM|"+cGEMM, "copy|Elementwise / copy", "PA|"+cPA, "GEMM|"+cGEMM, "RMSNorm|"+cNorm, "GEMM|"+cGEMM, "act|"+cAct, "GEMM|"+cGEMM, "RMSNorm|"+cNorm)
	mods := []string{"Qwen3Model_0.Qwen3DecoderLayer_*.Qwen3Attention_*.QKVParallelLinear_*", "Qwen3Model_0.Qwen3DecoderLayer_*.Qwen3Attention_*",
		"Qwen3Model_0.Qwen3DecoderLayer_*.Qwen3Attention_*.RadixAttention_*", "Qwen3Model_0.Qwen3DecoderLayer_*.Qwen3Attention_*.RowParallelLinear_*",
		"Qwen3Model_0.Qwen3DecoderLayer_*.RMSNorm_*", "Qwen3Model_0.Qwen3DecoderLayer_*.Qwen2MLP_*.MergedColumnParallelLinear_*",
		"Qwen3Model_0.Qwen3DecoderLayer_*.Qwen2MLP_*.SiluAndMul_*", "Qwen3Model_0.Qwen3DecoderLayer_*.Qwen2MLP_*.RowParallelLinear_*", "Qwen3Model_0.Qwen3DecoderLayer_1.RMSNorm_4"}
	for i, m := range mods {
		lt.Positions[i].Module = m
	}
	lt.AssignRoles(nil)
	want := []string{"QKV", "before attention", "attention", "O-proj", "post-attn norm", "gate_up", "activation", "down", "input norm"}
	from := []string{RoleFromCapture, RoleFromInferred, RoleFromCapture, RoleFromCapture, RoleFromInferred, RoleFromCapture, RoleFromCapture, RoleFromCapture, RoleFromInferred}
	for i, p := range lt.Positions {
		if p.Role != want[i] || p.RoleSource != from[i] {
			t.Errorf("pos %d: %q from %q, want %q from %q", i, p.Role, p.RoleSource, want[i], from[i])
		}
	}
}

func TestRolesNoAttention(t *testing.T) {
	// A layer without attention (a vision block's MLP, say) has no anchor:
	// no roles, and labels fall back to the short names.
	lt := layerOf(t, "GEMM|"+cGEMM, "act|"+cAct, "GEMM|"+cGEMM)
	lt.AssignRoles(nil)
	for _, p := range lt.Positions {
		if p.Role != "" {
			t.Errorf("pos %d: role %q without attention in the layer", p.Pos, p.Role)
		}
	}
	if got := lt.Labels(); got[0] != "GEMM" || got[2] != "GEMM #2" {
		t.Errorf("labels %q", got)
	}
}

func firstDuplicate(s []string) string {
	seen := map[string]bool{}
	for _, x := range s {
		if seen[x] {
			return x
		}
		seen[x] = true
	}
	return ""
}

// TestRolesATOMCorpus names the positions of the real ATOM MiniMax layer
// tables, categorised by the built-in rules, at every concurrency: the MoE
// sort kernel splits into two at conc 32, and the roles follow.
func TestRolesATOMCorpus(t *testing.T) {
	rules := DefaultRules()
	for _, conc := range []int{4, 8, 16, 32} {
		rows, err := ReadLayerCSV(corpus.Path(t, fmt.Sprintf("atom-minimax-m2.5/conc%d_layer.csv", conc)))
		if err != nil {
			t.Fatal(err)
		}
		lt := &LayerTable{}
		for _, r := range rows {
			lt.Positions = append(lt.Positions, Position{Pos: r.Pos, ShortName: r.ShortName, Kernel: r.Kernel, Category: rules.Classify(r.Kernel).Category})
		}
		lt.AssignRoles(nil)
		byLabel := map[string]bool{}
		for _, l := range lt.Labels() {
			byLabel[l] = true
		}
		for _, w := range []string{"PA (attention)", "GEMM_FP8 (O-proj)", "GEMM_BF16 (router)", "MoE_gate (top-k)", "MoE_GEMM (gate_up)",
			"MoE_GEMM (down)", "GEMM_FP8 (QKV)", "FP8_quant (before QKV)", "FP8_quant (before gate_up)", "RMSNorm_triton (q_norm)", "KV_cache_quant (KV cache write)"} {
			if !byLabel[w] {
				t.Errorf("conc %d: no position %q in %q", conc, w, lt.Labels())
			}
		}
		if d := firstDuplicate(lt.Labels()); d != "" {
			t.Errorf("conc %d: label %q repeats", conc, d)
		}
	}
}

// TestRolesCorpusTraces checks the roles of real decode layers of a dense
// model (SGLang, Qwen3-8B) and a MoE model (vLLM, Triton MoE kernels).
func TestRolesCorpusTraces(t *testing.T) {
	for _, tt := range []struct {
		file string
		want []string
	}{
		{"sglang-qwen3-8b-decode-mi300x.json.gz", []string{"QKV", "q_norm", "k_norm", "RoPE", "KV cache write", "attention", "attn reduce", "O-proj", "post-attn norm", "gate_up", "activation", "down", "input norm"}},
		{"vllm-decode-fullgraph-mi300x.json.gz", []string{"QKV", "attention", "O-proj", "router", "top-k", "sort", "gate_up", "down", "finalize", "input norm"}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			tr, err := tracing.Load(context.Background(), corpus.Path(t, "traces/"+tt.file), tracing.Options{Ops: true})
			if err != nil {
				t.Fatal(err)
			}
			lt, err := DecodeLayers(context.Background(), tr, LayerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			lt.AssignRoles(nil)
			got := map[string]bool{}
			for _, p := range lt.Positions {
				got[p.Role] = true
			}
			for _, w := range tt.want {
				if !got[w] {
					t.Errorf("no position with role %q; roles %q", w, roles(lt))
				}
			}
			// Labels are unique within a layer kind (alternating kinds
			// are separate tables).
			labels := lt.Labels()
			for i := range labels {
				labels[i] = fmt.Sprint(lt.Positions[i].LayerKind, ":", labels[i])
			}
			if d := firstDuplicate(labels); d != "" {
				t.Errorf("label %q repeats", d)
			}
		})
	}
}
