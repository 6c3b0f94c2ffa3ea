package roofline

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/modelconfig"
)

// The speed of light of docs/roofline.md's worked example, every figure
// computed by hand from the formulas there.
func TestStepFloorDense(t *testing.T) {
	// 2 layers, H 64, 4 heads, 2 KV heads, head dim 16, MLP 128,
	// vocabulary 100; 2 sequences at context 10; bf16 weights and cache.
	a := &modelconfig.Architecture{Layers: 2, Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 16, Intermediate: 128, Vocab: 100, Attention: "GQA"}
	// 1 GFLOP/s and 1 GB/s, so that µs read as thousands of units.
	p := Peak{GPU: "toy", BF16: 0.001, FP8: 0.002, HBM: 0.001, Link: 1}
	s := Step{Tokens: 2, Context: 10, TP: 1, Weights: "bf16", KVCache: "bf16"}
	f, ok := StepFloor(a, s, p)
	require.True(t, ok)
	// Weights: attention 64·16·(2·4 + 2·2) = 12288 a layer, MLP 3·64·128 =
	// 24576 a layer, LM head 100·64 = 6400, all 2 bytes:
	// 2·12288·2 + 2·24576·2 + 6400·2 = 49152 + 98304 + 12800.
	require.InDelta(t, 160256, f.WeightBytes, 1e-9)
	// KV: 2 layers · 2 sequences · 10 tokens · 2 (K, V) · 2 heads · 16 · 2 bytes.
	require.InDelta(t, 5120, f.KVBytes, 1e-9)
	// FLOPs: 2·2·(2·12288 + 2·24576) = 294912 in the projections and MLP,
	// 2·2·6400 = 25600 in the LM head, 2·2·(4·4·16·10) = 10240 in attention.
	require.InDelta(t, 330752, f.FLOPs, 1e-9)
	require.InDelta(t, 165.376, f.MemoryUS, 1e-9)  // 165376 B at 1 GB/s
	require.InDelta(t, 330.752, f.ComputeUS, 1e-9) // all at the bf16 peak
	require.Zero(t, f.CommUS)
	require.Equal(t, "compute", f.Bound)
	require.InDelta(t, 330.752, f.StepUS, 1e-9)

	// TP 2: 2 heads, 1 KV head, MLP 64 and half the LM head on a rank.
	s.TP = 2
	f, ok = StepFloor(a, s, p)
	require.True(t, ok)
	// 2·(64·16·(4 + 2))·2 + 2·(3·64·64)·2 + 3200·2 = 24576 + 49152 + 6400.
	require.InDelta(t, 80128, f.WeightBytes, 1e-9)
	require.InDelta(t, 2560, f.KVBytes, 1e-9) // 2·2·10·2·1·16·2
	// 2·2·(2·6144 + 2·12288) + 2·2·3200 + 2·2·(4·2·16·10).
	require.InDelta(t, 165376, f.FLOPs, 1e-9)
	// Two all-reduces a layer of 2·64 bf16 values, a ring sending
	// 2·(2−1)/2 of each: 2 layers · 2 · 1 · 256 = 1024 bytes at 1 GB/s.
	require.InDelta(t, 1024, f.CommBytes, 1e-9)
	require.InDelta(t, 1.024, f.CommUS, 1e-9)
	require.InDelta(t, 165.376+1.024, f.StepUS, 1e-9)

	// Without a link figure the all-reduces are left out, and a note says so.
	p.Link = 0
	f, _ = StepFloor(a, s, p)
	require.Zero(t, f.CommUS)
	require.Len(t, f.Notes, 1)
}

func TestStepFloorMoE(t *testing.T) {
	// One MoE layer: 8 experts of 32, top-2, fp8 weights; no LM head.
	a := &modelconfig.Architecture{Layers: 1, Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 16, Attention: "GQA",
		MoE: true, Experts: 8, TopK: 2, ExpertIntermediate: 32, MoELayers: 1}
	p := Peak{GPU: "toy", BF16: 0.001, FP8: 0.002, HBM: 0.001}
	f, ok := StepFloor(a, Step{Tokens: 4, Context: 10, Weights: "fp8", KVCache: "fp8"}, p)
	require.True(t, ok)
	// Attention 12288 fp8; router 64·8 bf16 = 1024; experts touched
	// 8·(1 − 0.75⁴) = 5.46875, each 3·64·32 = 6144 fp8: 33600.
	require.InDelta(t, 12288+1024+33600, f.WeightBytes, 1e-9)
	require.InDelta(t, 4*10*2*2*16, f.KVBytes, 1e-9) // fp8 cache
	// fp8 peak: 2·4·(12288 + 2·6144) = 196608 FLOPs at 2 GFLOP/s = 98.304 µs;
	// bf16: router 2·4·512 = 4096 and attention 4·4·4·16·10 = 10240 at
	// 1 GFLOP/s = 14.336 µs.
	require.InDelta(t, 98.304+14.336, f.ComputeUS, 1e-9)
	require.InDelta(t, (46912+2560)/1000.0, f.MemoryUS, 1e-9) // at 1 GB/s
	require.Equal(t, "compute", f.Bound)
}

func TestLevelSpeedOfLight(t *testing.T) {
	a := &modelconfig.Architecture{Layers: 2, Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 16, Intermediate: 128, Vocab: 100, Attention: "GQA"}
	peaks := Peaks{{GPU: "toy", Match: "toy", BF16: 0.001, HBM: 0.001, Kind: "spec"}}
	l := Level{Arch: a, Device: "Toy GPU", Context: 10, TP: 1, KVCache: "bf16", Peaks: peaks}
	// Three steps of 2 and one of 4: 6 and 4 tokens. At batch 4 the step
	// is compute-bound: 2·4·73728 + 2·4·6400 + 2·4·(4·4·16·10) = 661504
	// FLOPs, 661.504 µs at 1 GFLOP/s (batch 2: 330.752, TestStepFloorDense).
	sol, note := l.SpeedOfLight(map[string]int{"2": 3, "4": 1}, 1000)
	require.Empty(t, note)
	require.InDelta(t, (6*2+4*4)/10.0, sol.Batch, 1e-9)
	// (6·330.752 + 4·661.504) / 10 = 463.0528 µs.
	require.InDelta(t, 463.0528, sol.StepUS, 1e-9)
	require.InDelta(t, 1000/463.0528, sol.Multiple, 1e-9)
	require.Equal(t, "compute", sol.Bound)

	_, note = Level{Device: "Toy GPU"}.SpeedOfLight(map[string]int{"2": 1}, 1)
	require.Contains(t, note, "config.json")
	_, note = Level{Arch: a, Device: "Other GPU", Peaks: peaks}.SpeedOfLight(map[string]int{"2": 1}, 1)
	require.Contains(t, note, "peaks file")
}

func TestPeaksLink(t *testing.T) {
	p, ok := DefaultPeaks().Find("AMD Instinct MI355X")
	require.True(t, ok)
	require.InDelta(t, 537.6, p.Link, 1e-9) // 7 links of 153.6 GB/s, half of 1075.2 aggregate
	// A file without the column (the GPU benchmark's) reads, link unknown.
	ps, err := ParsePeaks(strings.NewReader(strings.Join(peakHeader, ",")+"\nX,X,1,1,0,1,1,80,measured,me\n"), "p.csv")
	require.NoError(t, err)
	require.Zero(t, ps[0].Link)
	_, err = ParsePeaks(strings.NewReader(strings.Join(peakHeader, ",")+",link_gbs\nX,X,1,1,0,1,1,80,spec,me,fast\n"), "p.csv")
	require.ErrorContains(t, err, "p.csv:2: column link_gbs")
}
