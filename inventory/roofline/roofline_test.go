package roofline

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/internal/modelconfig"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/tracing"
)

const (
	dense = "Dense GEMM (BF16)"
	moe   = "MoE expert GEMM"
)

// The worked examples of docs/roofline.md: every figure below is computed
// by hand from the formulas there.
func TestWorkDenseGQA(t *testing.T) {
	// H 64, 4 heads, 2 KV heads, head dim 16, MLP 128; 2 tokens, context
	// 10, bf16 weights and KV cache.
	a := &modelconfig.Architecture{Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 16, Intermediate: 128, Attention: "GQA"}
	s := Step{Tokens: 2, Context: 10, Weights: "bf16", KVCache: "bf16"}
	for _, c := range []struct {
		role, category string
		flops, bytes   float64
	}{
		// QKV: N = (4 + 2·2)·16 = 128; 2·2·64·128; 64·128·2 + 2·64·2 + 2·128·2.
		{"QKV", dense, 32768, 17152},
		// O-proj: 64 → 64; 2·2·64·64; 64·64·2 + 2·64·2 + 2·64·2.
		{"O-proj", dense, 16384, 8704},
		// attention: 4·2·4·16·10; 2·2·10·2·16·2 (K and V) + 2·2·4·16·2 (q in, out).
		{"attention", "Paged attention (decode)", 5120, 3072},
		// gate_up: 64 → 256; 2·2·64·256; 64·256·2 + 2·64·2 + 2·256·2.
		{"gate_up", dense, 65536, 34048},
		// down: 128 → 64; 2·2·128·64; 128·64·2 + 2·128·2 + 2·64·2.
		{"down", dense, 32768, 17152},
		// KV cache write: 2 tokens · K and V · 2 heads · 16 · (2 read + 2 written).
		{"KV cache write", "KV cache", 0, 512},
		// input norm: 5·2·64; 4·2·64·2 + 64·2.
		{"input norm", "RMSNorm / LayerNorm", 640, 1152},
		// RoPE: n = 2·(4+2)·16 = 192; 3n; 2n·2.
		{"RoPE", "RoPE", 576, 768},
		// q_norm: n = 2·4·16 = 128; 4n; 2n·2. k_norm: n = 64.
		{"q_norm", "RMSNorm / LayerNorm", 512, 512},
		{"k_norm", "RMSNorm / LayerNorm", 256, 256},
		// before QKV (quant): 2·64 = 128 elements; 2·128; 128·(2 + 1).
		{"before QKV", "Activation quant", 256, 384},
	} {
		w, ok := Of(c.role, c.category, a, s)
		if !ok || w.FLOPs != c.flops || w.Bytes != c.bytes {
			t.Errorf("%s: %v FLOPs, %v bytes (ok %v); want %v, %v", c.role, w.FLOPs, w.Bytes, ok, c.flops, c.bytes)
		}
	}
	if w, _ := Of("QKV", dense, a, s); w.M != 2 || w.K != 64 || w.N != 128 {
		t.Errorf("QKV shape %d×%d→%d, want 2×64→128", w.M, w.K, w.N)
	}
}

func TestWorkMoE(t *testing.T) {
	// H 64, 8 experts, top-2, expert intermediate 32; 4 tokens; fp8 weights.
	a := &modelconfig.Architecture{Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 16, MoE: true, Experts: 8, TopK: 2, ExpertIntermediate: 32}
	s := Step{Tokens: 4, Context: 10, Weights: "fp8", KVCache: "fp8"}
	// Experts touched: 8·(1 − (6/8)^4) = 8·0.68359375 = 5.46875.
	if u := ExpertsTouched(8, 2, 4); u != 5.46875 {
		t.Fatalf("experts touched %v, want 5.46875", u)
	}
	for _, c := range []struct {
		role, category string
		flops, bytes   float64
	}{
		// gate_up: 2·(4·2)·64·64; 5.46875·64·64·1 + 4·64·2 + 8·64·2.
		{"gate_up", moe, 65536, 23936},
		// down: 2·8·32·64; 5.46875·32·64·1 + 8·32·2 + 8·64·2.
		{"down", moe, 32768, 12736},
		// experts (fused): the sum.
		{"experts (fused)", moe, 98304, 36672},
		// router (bf16 weights): 2·4·64·8; 64·8·2 + 4·64·2 + 4·8·2.
		{"router", dense, 4096, 1600},
		// before down (quant): 4·2·32 = 256 elements; 2·256; 256·3.
		{"before down", "Activation quant", 512, 768},
		// before experts (fused): the tokens' hidden states, 4·64 = 256.
		{"before experts (fused)", "Activation quant", 512, 768},
	} {
		w, ok := Of(c.role, c.category, a, s)
		if !ok || w.FLOPs != c.flops || w.Bytes != c.bytes {
			t.Errorf("%s: %v FLOPs, %v bytes (ok %v); want %v, %v", c.role, w.FLOPs, w.Bytes, ok, c.flops, c.bytes)
		}
	}
	// A role whose work is not modelled, and MLA attention, give none.
	if _, ok := Of("sort", "MoE sort / align", a, s); ok {
		t.Error("sort: work modelled")
	}
	mla := *a
	mla.Attention = "MLA"
	if _, ok := Of("QKV", dense, &mla, s); ok {
		t.Error("MLA QKV: work modelled")
	}
}

func TestPoint(t *testing.T) {
	// gate_up of the dense example: 65536 FLOPs, 34048 bytes, at 10^9
	// FLOP/s and 10^9 B/s: 65.536 µs of compute, 34.048 µs of memory:
	// compute-bound; measured 131.072 µs is 50% of the roof.
	p := Peak{GPU: "toy", BF16: 0.001, Vector: 0.001, HBM: 0.001}
	a := &modelconfig.Architecture{Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 16, Intermediate: 128}
	tab := &inventory.LayerTable{Positions: []inventory.Position{{Pos: 3, ShortName: "GEMM", Category: dense, Role: "gate_up", AvgUS: 131.072},
		{Pos: 4, ShortName: "sort", Category: "MoE sort / align", Role: "sort", AvgUS: 5}}}
	r := Compute(tab, a, Step{Tokens: 2, Context: 10, Weights: "bf16", KVCache: "bf16"}, p)
	if len(r.Points) != 1 || len(r.Missing) != 1 || !strings.Contains(r.Missing[0], "pos 4") {
		t.Fatalf("points %+v, missing %q", r.Points, r.Missing)
	}
	pt := r.Points[0]
	near := func(x, y float64) bool { return math.Abs(x-y) < 1e-9*math.Max(1, math.Abs(y)) }
	if pt.Bound != "compute" || !near(pt.PctRoof, 50) || !near(pt.GainUS, 65.536) || !near(pt.TFLOPS, 0.0005) || !near(pt.Intensity, 65536.0/34048) {
		t.Errorf("point %+v", pt)
	}
	if best, ok := r.MostToGain(); !ok || best.Pos != 3 {
		t.Errorf("most to gain %+v", best)
	}
}

func TestPeaks(t *testing.T) {
	ps := DefaultPeaks()
	for _, c := range []struct{ device, gpu string }{
		{"AMD Instinct MI300X", "MI300X"}, {"AMD Instinct MI300X VF", "MI300X"}, {"AMD Instinct MI325X", "MI325X"},
		{"AMD Instinct MI355X", "MI355X"}, {"NVIDIA H100 80GB HBM3", "H100"}, {"NVIDIA H100 PCIe", "H100 PCIe"},
		{"NVIDIA H200", "H200"}, {"NVIDIA B200", "B200"},
	} {
		p, ok := ps.Find(c.device)
		if !ok || p.GPU != c.gpu || p.Source == "" || p.Kind != "spec" {
			t.Errorf("%s: %+v (found %v), want %s with a source", c.device, p, ok, c.gpu)
		}
	}
	if _, ok := ps.Find("Tesla V100"); ok {
		t.Error("V100 found in a table that does not list it")
	}
	// FP8 weights use the FP8 peak, FP4 falls back to FP8 without FP4 units.
	mi300, _ := ps.Find("MI300X")
	if mi300.Matrix("fp8") != mi300.FP8 || mi300.Matrix("fp4") != mi300.FP8 || mi300.Matrix("bf16") != mi300.BF16 {
		t.Errorf("matrix peaks of %+v", mi300)
	}
	_, err := ParsePeaks(strings.NewReader("gpu,match,bf16_tflops,fp8_tflops,fp4_tflops,vector_tflops,hbm_tbs,memory_gb,kind,source\nX,X,fast,1,0,1,1,80,spec,me\n"), "p.csv")
	if err == nil || !strings.Contains(err.Error(), "p.csv:2") || !strings.Contains(err.Error(), "bf16_tflops") {
		t.Errorf("bad number: %v", err)
	}
}

// TestImpossiblePoints: a position measured faster than the peak allows
// (the config or batch is not what ran: 127% with more KV heads than
// heads, 2.2e7% once) or whose figures are not numbers gets no point, and
// Missing says why, instead of a percentage that would be believed.
func TestImpossiblePoints(t *testing.T) {
	p := Peak{GPU: "toy", BF16: 0.001, Vector: 0.001, HBM: 0.001}
	a := &modelconfig.Architecture{Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 16, Intermediate: 128}
	tab := &inventory.LayerTable{Positions: []inventory.Position{
		{Pos: 3, ShortName: "GEMM", Category: dense, Role: "gate_up", AvgUS: 131.072}, // 50%
		{Pos: 5, ShortName: "GEMM", Category: dense, Role: "down", AvgUS: 16.384},     // 32.768 µs of compute: 200%
	}}
	r := Compute(tab, a, Step{Tokens: 2, Context: 10, Weights: "bf16", KVCache: "bf16"}, p)
	if len(r.Points) != 1 || r.Points[0].Pos != 3 || len(r.Refused) != 1 {
		t.Fatalf("points %+v, refused %q", r.Points, r.Refused)
	}
	if m := r.Refused[0]; !strings.Contains(m, "pos 5") || !strings.Contains(m, "200% of the roof") || !strings.Contains(m, "faster than toy's peak") {
		t.Errorf("refused %q", m)
	}
	// MoE expert GEMMs are estimated (uniform routing): above 100% they
	// stay, as the report explains; beyond 1000% no skew explains them.
	moeTab := &inventory.LayerTable{Positions: []inventory.Position{{Pos: 7, ShortName: "GEMM", Category: moe, Role: "gate_up", AvgUS: 10}}}
	moeArch := &modelconfig.Architecture{Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 16, MoE: true, Experts: 8, TopK: 2, ExpertIntermediate: 32}
	moeStep := Step{Tokens: 4, Context: 10, Weights: "fp8", KVCache: "fp8"}
	if r := Compute(moeTab, moeArch, moeStep, p); len(r.Points) != 1 || r.Points[0].PctRoof <= 100 {
		t.Errorf("MoE at %v µs: points %+v, refused %q", moeTab.Positions[0].AvgUS, r.Points, r.Refused)
	}
	moeTab.Positions[0].AvgUS = 1
	if r := Compute(moeTab, moeArch, moeStep, p); len(r.Points) != 0 || len(r.Refused) != 1 {
		t.Errorf("MoE at 1 µs: points %+v, refused %q", r.Points, r.Refused)
	}
	nan := p
	nan.HBM = math.NaN()
	r = Compute(tab, a, Step{Tokens: 2, Context: 10, Weights: "bf16", KVCache: "bf16"}, nan)
	if len(r.Points) != 0 || len(r.Refused) != 2 || !strings.Contains(r.Refused[0], "not a number") {
		t.Errorf("NaN peak: points %+v, refused %q", r.Points, r.Refused)
	}
}

// TestPeaksMalformed: a peaks file that is not CSV, or holds numbers no
// GPU has, is an error naming the file and line, never a panic (an
// unterminated quote once panicked in csv.Reader.FieldPos).
func TestPeaksMalformed(t *testing.T) {
	head := strings.Join(peakHeader, ",") + "\n"
	for name, c := range map[string]struct{ doc, want string }{
		"unterminated quote":                  {head + "\"X,X,1,1,0,1,1,80,spec,me\n", "line 2"},
		"unterminated quote in a later field": {head + "X,\"X,1,1,0,1,1,80,spec,me\n", "line 2"},
		"quote in a field":                    {head + "X,X\"y,1,1,0,1,1,80,spec,me\n", "line 2"},
		"NaN peak":                            {head + "X,X,NaN,1,0,1,1,80,spec,me\n", "p.csv:2: column bf16_tflops"},
		"infinite bandwidth":                  {head + "X,X,1,1,0,1,+Inf,80,spec,me\n", "p.csv:2: column hbm_tbs"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParsePeaks(strings.NewReader(c.doc), "p.csv")
			if err == nil || !strings.Contains(err.Error(), "p.csv") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error with p.csv and %q", err, c.want)
			}
		})
	}
}

// TestCaptureDimsMatch: on the SGLang Qwen3-8B decode trace with its
// capture trace (input dims recorded), the analytical shape of every GEMM
// position equals the captured one.
func TestCaptureDimsMatch(t *testing.T) {
	ctx := context.Background()
	tr, err := tracing.Load(ctx, corpus.Path(t, "traces/sglang-qwen3-8b-decode-mi300x.json.gz"), tracing.Options{Ops: true})
	if err != nil {
		t.Fatal(err)
	}
	lt, err := inventory.DecodeLayers(ctx, tr, inventory.LayerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := tracing.LoadCapture(ctx, corpus.Path(t, "traces/sglang-capture-bs32-mi300x.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	lt.AddCapture(c)
	cfg, err := modelconfig.Load("../../fixtures/models/qwen3-8b/config.json")
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Architecture()
	lt.AssignRoles(&a)
	s := Step{Tokens: float64(tr.DecodeBS), Context: 1024, Weights: WeightType(&a), KVCache: "bf16"}
	checked := 0
	for _, p := range lt.Positions {
		w, ok := Of(p.Role, p.Category, &a, s)
		if !ok || w.K == 0 {
			continue
		}
		k, n, ok := gemmDims(p.InputDims)
		if !ok {
			t.Errorf("pos %d %s: no GEMM dims in %q", p.Pos, p.Role, p.InputDims)
			continue
		}
		if k != w.K || n != w.N {
			t.Errorf("pos %d %s: captured %d→%d, analytical %d→%d", p.Pos, p.Role, k, n, w.K, w.N)
		}
		checked++
	}
	if checked != 4 {
		t.Errorf("%d GEMM positions checked, want 4 (QKV, O-proj, gate_up, down)", checked)
	}
	if ws := CheckDims(lt, &a, s); len(ws) != 0 {
		t.Errorf("warnings on matching dims: %v", ws)
	}
	// A config that is not the model's: the mismatch names the position.
	wrong := a
	wrong.Intermediate = 11008
	ws := CheckDims(lt, &wrong, s)
	if len(ws) == 0 || !strings.Contains(ws[0].Message, "gate_up") {
		t.Errorf("mismatch warnings %v", ws)
	}
}

func TestMemoryOf(t *testing.T) {
	// 8 B parameters in bf16 on 2 ranks: 8 GB each. KV: 4 sequences of
	// 1000 tokens, 32 layers, 8 KV heads split over 2 ranks = 4, head dim
	// 128, fp8: 4000·32·2·4·128·1 = 131,072,000 B.
	a := &modelconfig.Architecture{Params: 8e9, Layers: 32, KVHeads: 8, HeadDim: 128, Attention: "GQA"}
	m := MemoryOf(a, 2, "fp8", 4, 1000)
	if m.WeightsGB != 8 || m.KVGB != 0.131072 || m.Tokens != 4000 {
		t.Errorf("memory %+v", m)
	}
}

// TestWorkPrefill: the dense example's model in a prefill step of 8
// prompt tokens from 2 sequences (4 each), bf16 weights, fp8 KV cache.
func TestWorkPrefill(t *testing.T) {
	a := &modelconfig.Architecture{Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 16, Intermediate: 128, Attention: "GQA",
		MoE: true, Experts: 8, TopK: 2, ExpertIntermediate: 32}
	fresh := Step{Tokens: 8, Seqs: 2, Prefill: true, Weights: "bf16", KVCache: "fp8"}
	// 6 earlier tokens each: context 10 after the step.
	chunked := fresh
	chunked.Context = 10
	for _, c := range []struct {
		name, role, category string
		s                    Step
		flops, bytes         float64
	}{
		// Causal pairs: 2·(4·0 + 4·5/2) = 20. FLOPs 4·4·16·20; bytes: q in
		// and out 2·8·4·16·2 = 2048, the new K and V 2·2·2·16·(4·2) = 1024.
		{"fresh", "attention", "Flash attention", fresh, 5120, 3072},
		// Pairs 2·(4·6 + 4·5/2) = 68: 4·4·16·68; 2048 + 2·2·2·16·(4·2 + 6·1) = 2048 + 1792.
		{"chunked", "attention", "Flash attention", chunked, 17408, 3840},
		// QKV at M = 8: 2·8·64·128; 64·128·2 + 8·64·2 + 8·128·2.
		{"fresh", "QKV", dense, fresh, 131072, 19456},
		// KV cache write: 8 tokens · 2 · 2 heads · 16 · (2 + 1).
		{"fresh", "KV cache write", "KV cache", fresh, 0, 1536},
		// MoE gate_up: U = 8·(1 − 0.75^8) = 7.1990966796875 experts;
		// 2·16·64·64; 7.1990966796875·64·64·2 = 58975 + 8·64·2 + 16·64·2.
		{"fresh", "gate_up", moe, fresh, 131072, 62047},
	} {
		w, ok := Of(c.role, c.category, a, c.s)
		if !ok || w.FLOPs != c.flops || w.Bytes != c.bytes {
			t.Errorf("%s %s: %v FLOPs, %v bytes (ok %v); want %v, %v", c.name, c.role, w.FLOPs, w.Bytes, ok, c.flops, c.bytes)
		}
	}
}

// TestWorkMLA: a small latent-attention model. H 64, 4 heads, query
// latent 32, KV latent 16, no-RoPE 8, RoPE 4, value 8; 2 tokens, context
// 10, bf16 weights and cache.
func TestWorkMLA(t *testing.T) {
	a := &modelconfig.Architecture{Hidden: 64, Heads: 4, KVHeads: 4, HeadDim: 12, Attention: "MLA",
		QLoraRank: 32, KVLoraRank: 16, QKNopeHeadDim: 8, QKRopeHeadDim: 4, VHeadDim: 8}
	s := Step{Tokens: 2, Context: 10, Weights: "bf16", KVCache: "bf16"}
	pre := Step{Tokens: 8, Seqs: 2, Prefill: true, Weights: "bf16", KVCache: "bf16"}
	for _, c := range []struct {
		role         string
		s            Step
		flops, bytes float64
	}{
		// Fused down projections: 64 → 32 + 16 + 4 = 52; 2·2·64·52; 64·52·2 + 2·64·2 + 2·52·2.
		{"qkv_a_proj", s, 13312, 7120},
		// 64 → 32: 2·2·64·32; 4096 + 256 + 128.
		{"q_a_proj", s, 8192, 4480},
		// 64 → 16 + 4: 2·2·64·20; 2560 + 256 + 80.
		{"kv_a_proj", s, 5120, 2896},
		// 32 → 4·(8 + 4) = 48: 2·2·32·48; 32·48·2 + 2·32·2 + 2·48·2.
		{"q_b_proj", s, 6144, 3392},
		// W_UK per head 8 → 16: 2·2·4·8·16; 4·8·16·2 + 2·4·8·2 + 2·4·16·2.
		{"W_UK", s, 2048, 1408},
		// Absorbed attention: 2·2·4·10·(2·16 + 4); the latent cache
		// 2·10·20·2 = 800, queries 2·4·20·2 = 320, outputs 2·4·16·2 = 256.
		{"attention", s, 5760, 1376},
		// W_UV per head 16 → 8: 2·2·4·16·8; 4·16·8·2 + 2·4·16·2 + 2·4·8·2.
		{"W_UV", s, 2048, 1408},
		// O-proj 4·8 = 32 → 64: 2·2·32·64; 4096 + 128 + 256.
		{"O-proj", s, 8192, 4480},
		// KV write: 2·20·(2 + 2).
		{"KV cache write", s, 0, 160},
		// RoPE: n = 2·(4 + 1)·4 = 40: 3n, 2n·2.
		{"RoPE", s, 120, 160},
		// Latent norms: n = 2·32 (q), 2·16 (kv): 4n, 2n·2.
		{"q_a norm", s, 256, 256},
		{"kv_a norm", s, 128, 128},
		// Prefill, expanded: pairs 2·(4·5/2) = 20; 2·4·20·(12 + 8);
		// q 8·4·12·2 = 768, out 8·4·8·2 = 512, K and V 2·4·4·20·2 = 1280.
		{"attention", pre, 3200, 2560},
		// kv_b_proj over the 8 context tokens: 16 → 4·(8 + 8) = 64;
		// 2·8·16·64; 16·64·2 + 8·16·2 + 8·64·2.
		{"kv_b_proj", pre, 16384, 3328},
	} {
		w, ok := Of(c.role, "", a, c.s)
		if !ok || w.FLOPs != c.flops || w.Bytes != c.bytes {
			t.Errorf("%s (prefill %v): %v FLOPs, %v bytes (ok %v); want %v, %v", c.role, c.s.Prefill, w.FLOPs, w.Bytes, ok, c.flops, c.bytes)
		}
	}
	// Decode has no kv_b_proj (absorbed), prefill no W_UK; a GQA role is
	// not MLA's.
	for _, c := range []struct {
		role string
		s    Step
	}{{"kv_b_proj", s}, {"W_UK", pre}, {"QKV", s}, {"q_norm", s}} {
		if _, ok := Of(c.role, "", a, c.s); ok {
			t.Errorf("%s (prefill %v): work modelled", c.role, c.s.Prefill)
		}
	}
	// The structure's guess at QKV and O-proj is not trusted in an MLA
	// layer; a capture's name is.
	tab := &inventory.LayerTable{Positions: []inventory.Position{
		{Pos: 0, ShortName: "GEMM", Category: dense, Role: "QKV", RoleSource: inventory.RoleFromInferred, AvgUS: 5},
		{Pos: 1, ShortName: "GEMM", Category: dense, Role: "O-proj", RoleSource: inventory.RoleFromCapture, AvgUS: 5}}}
	r := Compute(tab, a, s, Peak{BF16: 1, Vector: 1, HBM: 1})
	if len(r.Points) != 1 || r.Points[0].Pos != 1 || len(r.Missing) != 1 || !strings.Contains(r.Missing[0], "MLA") {
		t.Errorf("points %+v, missing %q", r.Points, r.Missing)
	}
}

// The DeepSeek-V3 config gives the MLA sizes the work needs.
func TestMLAConfig(t *testing.T) {
	cfg, err := modelconfig.Load("../../fixtures/models/deepseek-v3/config.json")
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Architecture()
	if a.Attention != "MLA" || a.QLoraRank != 1536 || a.KVLoraRank != 512 || a.QKNopeHeadDim != 128 || a.QKRopeHeadDim != 64 || a.VHeadDim != 128 {
		t.Fatalf("MLA sizes %+v", a)
	}
	// One token at context 1000 over 128 heads (TP 1): the latent cache
	// 1000·576·1 bytes (fp8) dominates the attention's bytes.
	w, ok := Of("attention", "", &a, Step{Tokens: 1, Context: 1000, Weights: "fp8", KVCache: "fp8"})
	if !ok || w.FLOPs != 2*128*1000*(2*512+64) || w.Bytes != 1000*576+128*576*2+128*512*2 {
		t.Errorf("DeepSeek-V3 attention %v FLOPs, %v bytes (ok %v)", w.FLOPs, w.Bytes, ok)
	}
}

func TestAnnotate(t *testing.T) {
	a := &modelconfig.Architecture{Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 16, Intermediate: 128}
	lt := &inventory.LayerTable{Mode: inventory.ModeRobust, Positions: []inventory.Position{
		{Pos: 0, ShortName: "GEMM", Kernel: "k0", Category: dense, Role: "gate_up", AvgUS: 0.131072, Count: 2},
		{Pos: 1, ShortName: "sort", Kernel: "k1", Category: "MoE sort / align", Role: "sort", AvgUS: 5, Count: 2}}}
	r := Compute(lt, a, Step{Tokens: 2, Context: 10, Weights: "bf16", KVCache: "bf16"}, Peak{BF16: 1, Vector: 1, HBM: 1})
	r.Annotate(lt)
	if lt.Positions[0].Roof == nil || lt.Positions[0].Roof.Bound != "compute" || lt.Positions[1].Roof != nil {
		t.Fatalf("roofs %+v %+v", lt.Positions[0].Roof, lt.Positions[1].Roof)
	}
	// 65536 FLOPs over 0.131072 µs = 0.5 TFLOP/s; 34048 B = 0.2598 TB/s;
	// intensity 65536/34048 = 1.92; at 1 TFLOP/s, 50% of the roof.
	lines := strings.Split(string(lt.CSV()), "\n")
	if !strings.HasSuffix(lines[0], ",role,achieved_tbs,achieved_tflops,intensity,bound,pct_roofline") ||
		!strings.HasSuffix(lines[1], ",gate_up,0.260,0.500,1.92,compute,50.0") || !strings.HasSuffix(lines[2], ",sort,,,,,") {
		t.Errorf("CSV:\n%s", lt.CSV())
	}
	rows, err := inventory.ParseLayerCSV(strings.NewReader(string(lt.CSV())))
	if err != nil || rows[0].Roof == nil || rows[0].Roof.PctRoof != 50 || rows[1].Roof != nil {
		t.Errorf("read back: %+v, %v", rows, err)
	}
	// A compatible table stays the script's, roofline or not.
	lt.Mode = inventory.ModeCompat
	if strings.Contains(string(lt.CSV()), "roofline") {
		t.Error("compat CSV has roofline columns")
	}
}

// A peaks file may end with a price per GPU-hour, for the report's cost.
func TestPeaksPrice(t *testing.T) {
	head := "gpu,match,bf16_tflops,fp8_tflops,fp4_tflops,vector_tflops,hbm_tbs,memory_gb,kind,source"
	ps, err := ParsePeaks(strings.NewReader(head+",usd_per_gpu_hour\nMI355X,MI355X,2500,5000,10000,157,8,288,spec,me,3.25\nH200,H200,989,1979,0,67,4.8,141,spec,me,\n"), "p.csv")
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := ps.Find("AMD Instinct MI355X"); p.USDPerHour != 3.25 {
		t.Errorf("MI355X price %v, want 3.25", p.USDPerHour)
	}
	if p, _ := ps.Find("NVIDIA H200"); p.USDPerHour != 0 {
		t.Errorf("H200 price %v, want none", p.USDPerHour)
	}
	_, err = ParsePeaks(strings.NewReader(head+",usd_per_gpu_hour\nX,X,1,1,0,1,1,80,spec,me,cheap\n"), "p.csv")
	if err == nil || !strings.Contains(err.Error(), "p.csv:2: column usd_per_gpu_hour") {
		t.Errorf("bad price: %v", err)
	}
	// With the link bandwidth too, in either order.
	for _, cols := range []string{",link_gbs,usd_per_gpu_hour", ",usd_per_gpu_hour,link_gbs"} {
		row := "\nMI355X,MI355X,2500,5000,10000,157,8,288,spec,me,"
		if strings.HasPrefix(cols, ",link") {
			row += "400,3.25\n"
		} else {
			row += "3.25,400\n"
		}
		ps, err := ParsePeaks(strings.NewReader(head+cols+row), "p.csv")
		if err != nil {
			t.Fatal(err)
		}
		if p := ps[0]; p.USDPerHour != 3.25 || p.Link != 400 {
			t.Errorf("%s: price %v and link %v, want 3.25 and 400", cols, p.USDPerHour, p.Link)
		}
	}
	_, err = ParsePeaks(strings.NewReader(head+",price\n"), "p.csv")
	if err == nil || !strings.Contains(err.Error(), "optionally ,usd_per_gpu_hour") {
		t.Errorf("bad header: %v", err)
	}
}
