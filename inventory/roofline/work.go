// Package roofline computes how far each position of a decode layer is
// from what the GPU can do: the FLOPs and bytes of its role, from the
// model's config.json, the step's batch and context and the dtypes, set
// against the GPU's peak matrix or vector throughput and HBM bandwidth
// (peaks.csv). docs/roofline.md gives every formula with a worked example.
package roofline

import (
	"math"
	"strings"

	"github.com/profile-model/profile-model/internal/modelconfig"
	"github.com/profile-model/profile-model/inventory"
)

// Step is what the work of an engine step depends on besides the model.
type Step struct {
	Tokens  float64 // tokens in the step: the decode batch size, or a prefill step's prompt tokens (means over the level's steps)
	Context float64 // mean context length of a sequence (tokens in its KV cache, this step's included)
	// Prefill marks a prefill step: Tokens are the new tokens of Seqs
	// sequences, and attention is causal over each one's context.
	Prefill bool    `json:"Prefill,omitempty"`
	Seqs    float64 `json:"Seqs,omitempty"`
	TP      int     // tensor-parallel ranks (1 when 0): heads, intermediate sizes and experts' intermediate split across them
	// Dtypes: the weights' ("bf16", "fp8", "fp4") and the KV cache's; the
	// activations are bf16.
	Weights string
	KVCache string
}

// Work is what one position moves and computes in one step.
type Work struct {
	FLOPs  float64 `json:"flops"`
	Bytes  float64 `json:"bytes"`
	Matrix bool    `json:"matrix"` // runs on the matrix units (GEMMs, attention)
	// M, K, N are a dense GEMM's shape (M tokens × K in → N out), 0 for
	// other work; the capture trace's input dims are checked against them.
	M, K, N int `json:"-"`
}

// Bytes per element of a dtype name: bf16/fp16 2, fp8/int8 1, fp4/int4
// 0.5, fp32 4.
func dtypeBytes(t string) float64 {
	t = strings.ToLower(t)
	switch {
	case strings.Contains(t, "fp4") || strings.Contains(t, "int4") || strings.Contains(t, "e2m1"):
		return 0.5
	case strings.Contains(t, "8"):
		return 1
	case strings.Contains(t, "32"):
		return 4
	}
	return 2
}

// WeightType is the weights' dtype from the model config: "fp8" or "fp4"
// for quantised weights, else "bf16".
func WeightType(a *modelconfig.Architecture) string {
	if q := a.Quantization; q != nil {
		s := strings.ToLower(q.Method + " " + q.Format)
		switch {
		case strings.Contains(s, "fp4") || strings.Contains(s, "e2m1") || q.Bits == 4:
			return "fp4"
		case strings.Contains(s, "fp8") || strings.Contains(s, "float8") || strings.Contains(s, "e4m3") || q.Bits == 8:
			return "fp8"
		}
	}
	return "bf16"
}

const actBytes = 2 // activations are bf16

// dims are the model's sizes on one tensor-parallel rank.
type dims struct {
	B, L                 float64 // tokens, context
	n, S, P              float64 // prefill: sequences, new tokens and earlier context of each
	H, nh, nkv, d        float64
	E, k, I, Id, Is      float64
	wb, kvb              float64
	moe, prefill         bool
	attnOK, moeOK        bool
	sharedOK, denseMLPOK bool
	// MLA: the query's and the KV's latent ranks, the no-RoPE and RoPE
	// parts of a query/key head and the value head.
	mla               bool
	qL, r, dn, dR, dv float64
}

func dimsOf(a *modelconfig.Architecture, s Step) dims {
	tp := float64(max(s.TP, 1))
	d := dims{B: s.Tokens, L: s.Context, H: float64(a.Hidden), nh: float64(a.Heads) / tp,
		nkv: math.Max(float64(a.KVHeads)/tp, 1), d: float64(a.HeadDim),
		E: float64(a.Experts), k: float64(a.TopK), I: float64(a.ExpertIntermediate) / tp, Id: float64(a.Intermediate) / tp,
		wb: dtypeBytes(s.Weights), kvb: dtypeBytes(s.KVCache), moe: a.MoE, prefill: s.Prefill}
	shared := float64(a.SharedIntermediate)
	if shared == 0 {
		shared = float64(a.SharedExperts * a.ExpertIntermediate)
	}
	d.Is = shared / tp
	d.mla = a.Attention == "MLA"
	d.attnOK = d.H > 0 && d.nh > 0 && d.d > 0 && !d.mla
	d.moeOK = a.MoE && d.E > 0 && d.k > 0 && d.I > 0
	d.denseMLPOK = d.Id > 0
	d.sharedOK = d.Is > 0
	if d.mla {
		d.qL, d.r = float64(a.QLoraRank), float64(a.KVLoraRank)
		d.dn, d.dR, d.dv = float64(a.QKNopeHeadDim), float64(a.QKRopeHeadDim), float64(a.VHeadDim)
	}
	if s.Prefill {
		// Each of n sequences brings S new tokens to P earlier ones; a
		// context the labels do not give is the prompt alone.
		d.n = math.Max(s.Seqs, 1)
		d.S = d.B / d.n
		d.P = math.Max(d.L-d.S, 0)
		d.L = d.S + d.P
	}
	return d
}

// causalPairs is the number of query–key pairs of a prefill step's causal
// attention: each of a sequence's S new tokens sees the P earlier ones,
// the new ones before it and itself: n·(S·P + S·(S+1)/2).
func (d dims) causalPairs() float64 {
	return d.n * (d.S*d.P + d.S*(d.S+1)/2)
}

// gemm is a dense GEMM of M tokens, K in, N out, weights of wb bytes:
// 2·M·K·N FLOPs; the weights read once, the input read and the output
// written once.
func gemm(m, k, n, wb float64) Work {
	return Work{FLOPs: 2 * m * k * n, Bytes: k*n*wb + m*k*actBytes + m*n*actBytes, Matrix: true, M: int(m), K: int(k), N: int(n)}
}

// ExpertsTouched is the expected number of distinct experts the step's
// tokens route to when each token picks k of E uniformly:
// E·(1 − (1 − k/E)^tokens).
func ExpertsTouched(experts, topK, tokens float64) float64 {
	if experts <= 0 {
		return 0
	}
	return experts * (1 - math.Pow(1-topK/experts, tokens))
}

// Of is the work of a position of the given role and category in one
// step; false when the role's work is not modelled (sorts, copies of
// unknown size) or the config lacks the sizes.
func Of(role, category string, a *modelconfig.Architecture, s Step) (Work, bool) {
	if a == nil || s.Tokens <= 0 || a.Hidden <= 0 {
		return Work{}, false
	}
	d := dimsOf(a, s)
	if d.mla {
		if w, ok, mine := mlaWork(role, d); mine {
			return w, ok && d.r > 0 && d.nh > 0
		}
	}
	expert := strings.Contains(category, "MoE")
	B, H := d.B, d.H
	qkvN := (d.nh + 2*d.nkv) * d.d
	switch role {
	case inventory.RoleQKV:
		return gemm(B, H, qkvN, d.wb), d.attnOK
	case "Q":
		return gemm(B, H, d.nh*d.d, d.wb), d.attnOK
	case "K", "V":
		return gemm(B, H, d.nkv*d.d, d.wb), d.attnOK
	case inventory.RoleOProj:
		return gemm(B, d.nh*d.d, H, d.wb), d.attnOK
	case inventory.RoleRouter:
		// The router's weights stay in bf16.
		return gemm(B, H, d.E, actBytes), d.moeOK
	case inventory.RoleAttention:
		if d.prefill {
			// Causal: Q·Kᵀ and P·V over each token's pairs; the new K and
			// V read as the projection wrote them (bf16), the earlier
			// context from the cache.
			return Work{FLOPs: 4 * d.nh * d.d * d.causalPairs(),
				Bytes: 2*B*d.nh*d.d*actBytes + d.n*2*d.nkv*d.d*(d.S*actBytes+d.P*d.kvb), Matrix: true}, d.attnOK
		}
		// Decode attention: Q·Kᵀ and P·V over the context, 4·B·heads·d·L
		// FLOPs; the K and V cache read once per sequence.
		return Work{FLOPs: 4 * B * d.nh * d.d * d.L, Bytes: 2*B*d.L*d.nkv*d.d*d.kvb + 2*B*d.nh*d.d*actBytes, Matrix: true}, d.attnOK && d.L > 0
	case inventory.RoleKVWrite:
		return Work{Bytes: B * 2 * d.nkv * d.d * (actBytes + d.kvb)}, d.attnOK
	case inventory.RoleRoPE:
		n := B * (d.nh + d.nkv) * d.d
		return Work{FLOPs: 3 * n, Bytes: 2 * n * actBytes}, d.attnOK
	case inventory.RoleQNorm, inventory.RoleKNorm, inventory.RoleQKNorm:
		heads := d.nh
		switch role {
		case inventory.RoleKNorm:
			heads = d.nkv
		case inventory.RoleQKNorm:
			heads = d.nh + d.nkv
		}
		n := B * heads * d.d
		return Work{FLOPs: 4 * n, Bytes: 2 * n * actBytes}, d.attnOK
	case inventory.RoleInNorm, inventory.RolePostNorm:
		// Residual add and RMSNorm: read x and the residual, write both.
		return Work{FLOPs: 5 * B * H, Bytes: 4*B*H*actBytes + H*actBytes}, true
	case inventory.RoleTopK:
		return Work{FLOPs: 2 * B * d.E, Bytes: B*d.E*4 + B*d.k*8}, d.moeOK
	}
	if expert || (d.moe && !strings.Contains(category, "Dense") && (role == inventory.RoleGateUp || role == inventory.RoleDown)) {
		if w, ok := moeWork(role, d); ok {
			return w, d.moeOK
		}
	}
	switch role {
	case inventory.RoleGateUp:
		return gemm(B, H, 2*d.Id, d.wb), d.denseMLPOK
	case "gate", "up":
		return gemm(B, H, d.Id, d.wb), d.denseMLPOK
	case inventory.RoleDown:
		return gemm(B, d.Id, H, d.wb), d.denseMLPOK
	case inventory.RoleSharedGU:
		return gemm(B, H, 2*d.Is, d.wb), d.sharedOK
	case inventory.RoleSharedDn:
		return gemm(B, d.Is, H, d.wb), d.sharedOK
	case inventory.RoleAct:
		n := B * d.Id
		if d.moe {
			n = B * d.k * d.I
		}
		return Work{FLOPs: 4 * n, Bytes: 3 * n * actBytes}, n > 0
	}
	if target, ok := strings.CutPrefix(role, "before "); ok {
		// Quantising (or copying) the input of the GEMM it feeds: read
		// bf16, write fp8 (a copy writes bf16).
		k := inputElems(target, d)
		out := 1.0
		if !strings.Contains(strings.ToLower(category), "quant") {
			out = actBytes
		}
		return Work{FLOPs: 2 * k, Bytes: k * (actBytes + out)}, k > 0
	}
	return Work{}, false
}

// moeWork is the routed experts' GEMMs: every token runs k experts, and
// each expert touched reads its weights once.
func moeWork(role string, d dims) (Work, bool) {
	u := ExpertsTouched(d.E, d.k, d.B)
	rows := d.B * d.k
	gu := Work{FLOPs: 2 * rows * d.H * 2 * d.I, Bytes: u*d.H*2*d.I*d.wb + d.B*d.H*actBytes + rows*2*d.I*actBytes, Matrix: true}
	dn := Work{FLOPs: 2 * rows * d.I * d.H, Bytes: u*d.I*d.H*d.wb + rows*d.I*actBytes + rows*d.H*actBytes, Matrix: true}
	switch role {
	case inventory.RoleGateUp:
		return gu, true
	case inventory.RoleDown:
		return dn, true
	case inventory.RoleExperts:
		return Work{FLOPs: gu.FLOPs + dn.FLOPs, Bytes: gu.Bytes + dn.Bytes, Matrix: true}, true
	}
	return Work{}, false
}

// inputElems is the number of input elements of the GEMM of a role in one
// step (what a quantisation before it reads).
func inputElems(role string, d dims) float64 {
	switch role {
	case inventory.RoleQKV, "Q", inventory.RoleRouter, inventory.RoleSharedGU:
		return d.B * d.H
	case inventory.RoleOProj:
		if d.mla {
			return d.B * d.nh * d.dv
		}
		return d.B * d.nh * d.d
	case inventory.RoleQB:
		return d.B * d.qL
	case inventory.RoleQA, inventory.RoleKVA, inventory.RoleQKVA:
		return d.B * d.H
	case inventory.RoleGateUp, inventory.RoleExperts:
		return d.B * d.H
	case inventory.RoleDown:
		if d.moe {
			return d.B * d.k * d.I
		}
		return d.B * d.Id
	case inventory.RoleSharedDn:
		return d.B * d.Is
	}
	return 0
}
