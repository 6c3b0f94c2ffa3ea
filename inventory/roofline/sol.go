package roofline

import (
	"fmt"
	"math"
	"strconv"

	"github.com/profile-model/profile-model/internal/modelconfig"
)

// SpeedOfLight is the least time a decode step could take on one GPU (one
// tensor-parallel rank): every weight the step needs and every sequence's
// KV cache read once at the HBM bandwidth, every FLOP at the matrix peak,
// and the tensor-parallel all-reduces at the link bandwidth. Memory and
// compute overlap (the longer one counts); the all-reduces do not: each
// waits for its layer's output and the next layer waits for it.
//
// A level's figures are averages over its decode steps weighted by their
// batch (a step of b sequences yields b tokens), as the measured decode
// step (StepTime.StepUS) is; docs/roofline.md has the formulas.
type SpeedOfLight struct {
	Batch   float64 `json:"batch"`   // real decode batch, token-weighted mean
	Context float64 `json:"context"` // mean context of a sequence
	TP      int     `json:"tp"`
	// Per step on one rank.
	WeightBytes float64 `json:"weight_bytes"` // weights read: attention, dense MLP, routed experts touched, shared experts, router, LM head
	KVBytes     float64 `json:"kv_bytes"`     // KV cache read by attention
	FLOPs       float64 `json:"flops"`
	CommBytes   float64 `json:"comm_bytes"` // sent by one rank in the all-reduces (0 at TP 1)
	MemoryUS    float64 `json:"memory_us"`  // (WeightBytes + KVBytes) / HBM bandwidth
	ComputeUS   float64 `json:"compute_us"` // FLOPs at the matrix peaks
	CommUS      float64 `json:"comm_us"`    // CommBytes / link bandwidth
	StepUS      float64 `json:"step_us"`    // max(MemoryUS, ComputeUS) + CommUS
	Bound       string  `json:"bound"`      // "memory" or "compute"
	// MeasuredUS is the level's decode step (start to next start, the
	// StepTime's StepUS), Multiple = MeasuredUS / StepUS; 0 when the
	// trace timed no decode step.
	MeasuredUS float64  `json:"measured_us"`
	Multiple   float64  `json:"multiple"`
	Notes      []string `json:"notes,omitempty"`
}

// StepFloor is the speed of light of one decode step of s.Tokens
// sequences at s.Context on the GPU p; false when the config lacks the
// sizes it needs.
func StepFloor(a *modelconfig.Architecture, s Step, p Peak) (SpeedOfLight, bool) {
	if a == nil || a.Layers <= 0 || a.Hidden <= 0 || a.Heads <= 0 || s.Tokens <= 0 {
		return SpeedOfLight{}, false
	}
	d := dimsOf(a, s)
	if (a.MoE && !d.moeOK) || (denseLayers(a) > 0 && !d.denseMLPOK) || (!d.mla && d.d <= 0) {
		return SpeedOfLight{}, false
	}
	tp := float64(max(s.TP, 1))
	B, H, L := d.B, d.H, d.L
	aB := float64(actBytes)
	out := SpeedOfLight{Batch: B, Context: L, TP: max(s.TP, 1)}

	// Parameters of one layer on one rank by where they run: at the
	// weights' dtype (w) or bf16 (router, MLA's per-head products).
	var attnW, attnBF16, attnFLOPsPerTok, kvPerTok float64
	if d.mla {
		qk := d.dn + d.dR
		if d.qL > 0 {
			attnW = H*d.qL + d.qL*d.nh*qk
		} else {
			attnW = H * d.nh * qk
		}
		attnW += H*(d.r+d.dR) + d.nh*d.dv*H
		attnBF16 = d.r * d.nh * (d.dn + d.dv) // W_UK and W_UV
		attnFLOPsPerTok = 2 * d.nh * L * (2*d.r + d.dR)
		kvPerTok = L * (d.r + d.dR) * d.kvb // one latent for all heads, on every rank
	} else {
		attnW = H * d.d * (2*d.nh + 2*d.nkv)
		attnFLOPsPerTok = 4 * d.nh * d.d * L
		kvPerTok = L * 2 * d.nkv * d.d * d.kvb
	}
	layers := float64(a.Layers)
	dense, moe := float64(denseLayers(a)), float64(a.MoELayers)
	if !a.MoE {
		moe = 0
	}
	mlpDense := 3 * H * d.Id
	var routerP, sharedP, expertP, touched float64
	if a.MoE {
		routerP = H * d.E
		sharedP = 3 * H * d.Is
		expertP = 3 * H * d.I
		touched = ExpertsTouched(d.E, d.k, B)
	}
	lmHead := float64(a.Vocab) * H / tp // bf16: engines keep the LM head unquantised

	out.WeightBytes = layers*(attnW*d.wb+attnBF16*aB) + dense*mlpDense*d.wb +
		moe*(routerP*aB+sharedP*d.wb+touched*expertP*d.wb) + lmHead*aB
	out.KVBytes = layers * B * kvPerTok
	// FLOPs: 2 per parameter a token uses, each token its top-k experts;
	// attention over the context. At the weights' dtype peak the
	// projections and experts, at bf16 the rest.
	flopsW := 2 * B * (layers*attnW + dense*mlpDense + moe*(sharedP+d.k*expertP))
	flopsBF16 := 2*B*(layers*attnBF16+moe*routerP+lmHead) + layers*B*attnFLOPsPerTok
	out.FLOPs = flopsW + flopsBF16
	out.ComputeUS = 1e6 * (flopsW/(p.Matrix(s.Weights)*1e12) + flopsBF16/(p.BF16*1e12))
	out.MemoryUS = 1e6 * (out.WeightBytes + out.KVBytes) / (p.HBM * 1e12)
	if s.TP > 1 {
		// Two all-reduces of the hidden state a layer (after attention,
		// after the MLP); a ring sends 2·(TP−1)/TP of the data from each rank.
		out.CommBytes = layers * 2 * 2 * (tp - 1) / tp * B * H * aB
		if p.Link > 0 {
			out.CommUS = 1e6 * out.CommBytes / (p.Link * 1e9)
		} else {
			out.Notes = append(out.Notes, fmt.Sprintf("no link bandwidth for the %s in the peaks file (link_gbs): the all-reduces are not counted", p.GPU))
		}
	}
	out.Bound = "memory"
	if out.ComputeUS > out.MemoryUS {
		out.Bound = "compute"
	}
	out.StepUS = math.Max(out.MemoryUS, out.ComputeUS) + out.CommUS
	return out, true
}

// denseLayers is the number of layers with a dense MLP.
func denseLayers(a *modelconfig.Architecture) int {
	if !a.MoE {
		return a.Layers
	}
	return a.DenseLayers
}

// SpeedOfLight is the level's speed of light: the step floor averaged over
// the decode batch histogram (batch size → steps) weighted by each step's
// tokens, against the measured decode step measuredUS (0: unknown). The
// string says why there is none.
func (l Level) SpeedOfLight(hist map[string]int, measuredUS float64) (*SpeedOfLight, string) {
	switch {
	case l.Arch == nil:
		return nil, "no model config (config.json)"
	case len(hist) == 0:
		return nil, "no decode batch sizes in the trace"
	}
	p, kv, note := l.resolve(l.Decode)
	if note != "" {
		return nil, note
	}
	var sum SpeedOfLight
	var tokens float64
	var notes []string
	for k, c := range hist {
		b, err := strconv.Atoi(k)
		if err != nil || b <= 0 || c <= 0 {
			continue
		}
		f, ok := StepFloor(l.Arch, Step{Tokens: float64(b), Context: l.Context, TP: l.TP, Weights: WeightType(l.Arch), KVCache: kv}, p)
		if !ok {
			return nil, "the model config lacks the sizes of a layer (hidden size, heads, layers, MLP or expert sizes)"
		}
		w := float64(b * c)
		tokens += w
		sum.Batch += w * f.Batch
		sum.WeightBytes += w * f.WeightBytes
		sum.KVBytes += w * f.KVBytes
		sum.FLOPs += w * f.FLOPs
		sum.CommBytes += w * f.CommBytes
		sum.MemoryUS += w * f.MemoryUS
		sum.ComputeUS += w * f.ComputeUS
		sum.CommUS += w * f.CommUS
		sum.StepUS += w * f.StepUS
		notes = f.Notes
	}
	if tokens == 0 {
		return nil, "no decode batch sizes in the trace"
	}
	out := &SpeedOfLight{Batch: sum.Batch / tokens, Context: l.Context, TP: max(l.TP, 1),
		WeightBytes: sum.WeightBytes / tokens, KVBytes: sum.KVBytes / tokens, FLOPs: sum.FLOPs / tokens, CommBytes: sum.CommBytes / tokens,
		MemoryUS: sum.MemoryUS / tokens, ComputeUS: sum.ComputeUS / tokens, CommUS: sum.CommUS / tokens, StepUS: sum.StepUS / tokens, Notes: notes}
	out.Bound = "memory"
	if out.ComputeUS > out.MemoryUS {
		out.Bound = "compute"
	}
	if measuredUS > 0 && out.StepUS > 0 {
		out.MeasuredUS = measuredUS
		out.Multiple = measuredUS / out.StepUS
	}
	return out, ""
}
