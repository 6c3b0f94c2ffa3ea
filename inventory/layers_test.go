package inventory

import (
	"cmp"
	"context"
	"math"
	"slices"
	"testing"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/tracing"
	"github.com/stretchr/testify/require"
)

// k is a kernel of a hand-made trace.
type k struct {
	name   string
	stream int32
	dur    int64 // ns
}

// makeTrace lays the steps' kernels out back to back (1 µs gaps) as decode
// steps; kernels on another stream start at the same time as the previous one.
func makeTrace(kind tracing.StepKind, steps ...[]k) *tracing.Trace {
	tr := &tracing.Trace{}
	var now int64
	for _, ks := range steps {
		st := tracing.Step{Kind: kind, Start: now}
		for _, kk := range ks {
			start := now
			if kk.stream != 0 && len(tr.Kernels) > 0 {
				start = tr.Kernels[len(tr.Kernels)-1].Start + 1
			} else {
				now += kk.dur + 1000
			}
			st.Kernels = append(st.Kernels, int32(len(tr.Kernels)))
			tr.AddKernel(kk.name, tracing.Kernel{Start: start, Dur: kk.dur, Stream: kk.stream, Step: int32(len(tr.Steps)), Graph: -1})
		}
		st.End = now
		tr.Steps = append(tr.Steps, st)
	}
	return tr
}

// layer returns the kernels of one layer, durations growing with the layer
// index so that averages, min and max differ per position.
func layer(names []string, li int) []k {
	out := make([]k, len(names))
	for p, n := range names {
		out[p] = k{name: n, dur: int64((p+1)*1000 + li*100)}
	}
	return out
}

func step(layers int, kinds ...[]string) []k {
	ks := []k{{name: "embedding", dur: 3000}, {name: "prep", dur: 2000}}
	for li := 0; li < layers; li++ {
		ks = append(ks, layer(kinds[li%len(kinds)], li)...)
	}
	return append(ks, k{name: "final_norm", dur: 2500}, k{name: "lm_head", dur: 9000}, k{name: "sample", dur: 4000})
}

var dense = []string{"norm", "qkv_gemm", "rope", "pa_bf16_attn", "o_gemm", "norm2", "up_gemm", "down_gemm"}

func TestCompatLayers(t *testing.T) {
	t.Parallel()
	const layers, steps = 5, 3
	tr := makeTrace(tracing.StepDecode, step(layers, dense), step(layers, dense), step(layers, dense))
	lt, err := DecodeLayers(context.Background(), tr, LayerOptions{Mode: ModeCompat})
	require.NoError(t, err)
	// Slices run from one pa_bf16 kernel to the next at the common distance:
	// the last layer of each step is followed by the epilogue and the next
	// step's prologue, so it is not a slice (as in the hand-run trace-layer script).
	want := (layers - 1) * steps
	require.Equal(t, want, lt.Layers)
	require.Equal(t, []int{len(dense)}, lt.KernelsPerLayer)
	require.Len(t, lt.Positions, len(dense))
	// Position p of layer li lasts ((p'+1)*1000 + li*100) ns where p' is
	// its place in dense (the slice starts at pa_bf16, index 3).
	sum := 0.0
	for p, pos := range lt.Positions {
		dp := (3 + p) % len(dense)
		li0 := 0
		if 3+p >= len(dense) {
			li0 = 1 // positions after o_gemm... wrap into the next layer
		}
		var vals []float64
		for s := 0; s < steps; s++ {
			for li := 0; li < layers-1; li++ {
				vals = append(vals, float64((dp+1)*1000+(li+li0)*100)/1000)
			}
		}
		mean, std, lo, hi := describe(vals)
		require.Equal(t, dense[dp], pos.Kernel)
		require.InDelta(t, mean, pos.AvgUS, 1e-9)
		require.InDelta(t, std, pos.StdUS, 1e-9)
		require.InDelta(t, lo, pos.MinUS, 1e-9)
		require.InDelta(t, hi, pos.MaxUS, 1e-9)
		require.Equal(t, want, pos.Count)
		sum += pos.Pct
	}
	require.InDelta(t, 100, sum, 1e-9)
}

func describe(v []float64) (mean, std, lo, hi float64) {
	lo, hi = v[0], v[0]
	for _, x := range v {
		mean += x
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(v)-1)), lo, hi
}

func TestCompatAnchorMissing(t *testing.T) {
	t.Parallel()
	tr := makeTrace(tracing.StepDecode, step(4, dense))
	_, err := DecodeLayers(context.Background(), tr, LayerOptions{Mode: ModeCompat, Anchor: "no_such_kernel"})
	require.ErrorContains(t, err, `anchor "no_such_kernel" occurs 0 times`)
}

func TestRobustLayers(t *testing.T) {
	t.Parallel()
	sliding := []string{"norm", "qkv_gemm", "rope", "attn_sliding", "o_gemm", "norm2", "up_gemm", "act", "down_gemm"}
	full := []string{"norm", "qkv_gemm", "rope", "attn_full", "attn_reduce", "o_gemm", "norm2", "up_gemm", "act", "down_gemm"}
	renamed := append([]string{}, dense...)
	renamed[3] = "some_other_attention"
	tests := []struct {
		name      string
		tr        *tracing.Trace
		numLayers int
		layers    int
		perLayer  []int
		irregular int
		warn      string
	}{
		{"dense", makeTrace(tracing.StepDecode, step(12, dense), step(12, dense)), 0, 12, []int{8}, 0, ""},
		{"no pa_bf16 anchor needed", makeTrace(tracing.StepDecode, step(12, renamed)), 0, 12, []int{8}, 0, ""},
		{"alternating kinds", makeTrace(tracing.StepDecode, step(24, sliding, full)), 0, 24, []int{9, 10}, 0, ""},
		{"config disagrees", makeTrace(tracing.StepDecode, step(12, dense)), 16, 12, []int{8}, 0, "num_hidden_layers = 16"},
		{"prefill-labelled steps are not decode", makeTrace(tracing.StepPrefill, step(12, dense)), 0, 0, []int{}, 0, "no decode steps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lt, err := DecodeLayers(context.Background(), tt.tr, LayerOptions{NumLayers: tt.numLayers})
			require.NoError(t, err)
			require.Equal(t, tt.layers, lt.Layers)
			require.Equal(t, tt.perLayer, lt.KernelsPerLayer)
			require.Len(t, lt.Irregular, tt.irregular)
			if tt.warn != "" {
				require.NotEmpty(t, lt.Warnings)
				require.Contains(t, lt.Warnings[0].Message, tt.warn)
			}
			if tt.layers > 0 {
				require.Equal(t, "norm", lt.Positions[0].Kernel, "a layer starts where the repetition starts")
			}
		})
	}
}

func TestRobustIrregular(t *testing.T) {
	t.Parallel()
	ks := step(10, dense)
	// Layer 4 runs an extra kernel on another stream, layer 7 a different GEMM.
	l4 := 2 + 4*len(dense) + 5
	ks = append(ks[:l4:l4], append([]k{{name: "side_copy", stream: 7, dur: 1500}}, ks[l4:]...)...)
	l7 := 2 + 7*len(dense) + 1 + 1
	ks[l7].name = "qkv_gemm_variant"
	lt, err := DecodeLayers(context.Background(), makeTrace(tracing.StepDecode, ks), LayerOptions{})
	require.NoError(t, err)
	require.Equal(t, 10, lt.Layers)
	require.Equal(t, []int{8}, lt.KernelsPerLayer)
	require.Equal(t, []IrregularLayer{
		{Step: 0, Layer: 4, Kernels: 9, Diffs: []LayerDiff{{Op: "extra", Pos: 5, Kernel: "side_copy", Stream: 7}}},
		{Step: 0, Layer: 7, Kernels: 8, Diffs: []LayerDiff{{Op: "differs", Pos: 1, Kernel: "qkv_gemm_variant", Want: "qkv_gemm"}}},
	}, lt.Irregular)
	// The differing kernel is not averaged into its position; the others are.
	require.Equal(t, 9, lt.Positions[1].Count)
	require.Equal(t, 10, lt.Positions[0].Count)
}

func TestAlignDiffs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		got, want []int32
		diffs     []diff
	}{
		{"equal", []int32{1, 2, 3}, []int32{1, 2, 3}, nil},
		{"extra", []int32{1, 2, 9, 3}, []int32{1, 2, 3}, []diff{{"extra", 2, 2}}},
		{"missing", []int32{1, 3}, []int32{1, 2, 3}, []diff{{"missing", 1, -1}}},
		{"differs", []int32{1, 5, 3}, []int32{1, 2, 3}, []diff{{"differs", 1, 1}}},
		{"extra at the end", []int32{1, 2, 3, 4}, []int32{1, 2, 3}, []diff{{"extra", 3, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.diffs, diffs(align(tt.got, tt.want), len(tt.want)))
		})
	}
}

func TestPrefillLayers(t *testing.T) {
	t.Parallel()
	tr := makeTrace(tracing.StepPrefill, step(6, dense))
	lt, err := PrefillLayers(context.Background(), tr, LayerOptions{})
	require.NoError(t, err)
	require.Equal(t, "prefill", lt.StepKind)
	require.Equal(t, 6, lt.Layers)
}

// A kernel on another stream that starts after the last layer is done (a
// sampler on its own stream) is epilogue, not part of the last layer.
func TestRobustSideStreamEpilogue(t *testing.T) {
	t.Parallel()
	var ks []k
	for li := 0; li < 6; li++ {
		ks = append(ks, layer(dense, li)...)
	}
	ks = append(ks, k{name: "sampler", stream: 3, dur: 2000})
	tr := makeTrace(tracing.StepDecode, ks)
	last := &tr.Kernels[len(tr.Kernels)-1]
	prev := tr.Kernels[len(tr.Kernels)-2]
	last.Start = prev.End() + 500
	lt, err := DecodeLayers(context.Background(), tr, LayerOptions{})
	require.NoError(t, err)
	require.Equal(t, 6, lt.Layers)
	require.Empty(t, lt.Irregular)
	require.Equal(t, []string{"sampler"}, lt.Epilogue)
}

func TestRobustIrregularSameShortName(t *testing.T) {
	t.Parallel()
	// Two instances of one templated GEMM share a short name: the diff must
	// carry the full names, or it would read "runs X instead of X".
	names := []string{"norm", "ck::gemm_kernel<128, 64>(float*)", "rope", "pa_bf16_attn", "o_proj"}
	ks := step(6, names)
	l3 := 2 + 3*len(names) + 1
	ks[l3].name = "ck::gemm_kernel<256, 32>(float*)"
	lt, err := DecodeLayers(context.Background(), makeTrace(tracing.StepDecode, ks), LayerOptions{})
	require.NoError(t, err)
	require.Len(t, lt.Irregular, 1)
	d := lt.Irregular[0].Diffs
	require.Len(t, d, 1)
	require.Equal(t, d[0].Kernel, d[0].Want, "both instances have the same short name")
	require.Equal(t, "ck::gemm_kernel<256, 32>(float*)", d[0].KernelFull)
	require.Equal(t, "ck::gemm_kernel<128, 64>(float*)", d[0].WantFull)
}

// The compat anchor must start one layer each: one matching twice per layer,
// or matching consecutive kernels, is warned about with its own code; one
// matching once per layer is not.
func TestCompatAnchorDoubts(t *testing.T) {
	t.Parallel()
	twice := []string{"norm", "qkv_gemm", "pa_bf16_attn", "o_gemm", "norm2", "pa_bf16_reduce", "up_gemm", "down_gemm"}
	fused := []string{"x_norm", "x_qkv", "x_attn", "x_mlp"}
	cases := []struct {
		name   string
		kinds  []string
		anchor string
		want   []string // one substring per warning
	}{
		{"once per layer", dense, "", nil},
		{"twice per layer", twice, "pa_bf16", []string{`the anchor "pa_bf16" matches more than one kernel per layer (its matches are 3 and 5 kernels apart, 18 and 15 times)`}},
		{"a word of several kernels", dense, "gemm", []string{`the anchor "gemm" matches more than one kernel per layer`}},
		{"every kernel of the layer", fused, "x_", []string{`the anchor "x_" matches consecutive kernels, so its layers have one kernel each`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tr := makeTrace(tracing.StepDecode, step(6, c.kinds), step(6, c.kinds), step(6, c.kinds))
			lt, err := DecodeLayers(context.Background(), tr, LayerOptions{Mode: ModeCompat, Anchor: c.anchor})
			require.NoError(t, err)
			require.Len(t, lt.Warnings, len(c.want), "%q", diag.Messages(lt.Warnings))
			for i, w := range c.want {
				require.Equal(t, diag.CompatAmbiguous, lt.Warnings[i].Code)
				require.Contains(t, lt.Warnings[i].Message, w)
			}
		})
	}
}

// A kernel on a second stream that overlaps the main one: the positions'
// averages sum past the GPU time, and WallUS is the union of the layers'
// kernel intervals per layer (as ATOM's trace parser totals a layer). With
// one stream there is nothing to count once, and WallUS stays empty.
func TestRobustWallTime(t *testing.T) {
	t.Parallel()
	const layers = 6
	withSide := func(li int) []k {
		ks := layer(dense, li)
		// The router runs beside the post-attention norm and past its end.
		return append(ks[:6:6], append([]k{{name: "router_gemm", stream: 1, dur: 9000}}, ks[6:]...)...)
	}
	var ks []k
	for li := range layers {
		ks = append(ks, withSide(li)...)
	}
	tr := makeTrace(tracing.StepDecode, ks)
	lt, err := DecodeLayers(context.Background(), tr, LayerOptions{})
	require.NoError(t, err)
	require.Equal(t, layers, lt.Layers)
	require.Empty(t, lt.Irregular)

	// The union of every kernel's interval, merged after sorting.
	type iv struct{ s, e int64 }
	var ivs []iv
	for _, kr := range tr.Kernels {
		ivs = append(ivs, iv{kr.Start, kr.End()})
	}
	slices.SortFunc(ivs, func(a, b iv) int { return cmp.Compare(a.s, b.s) })
	var union, end int64
	for _, v := range ivs {
		if v.s >= end {
			union += v.e - v.s
		} else if v.e > end {
			union += v.e - end
		}
		end = max(end, v.e)
	}
	sum := 0.0
	for _, p := range lt.Positions {
		sum += p.AvgUS
	}
	require.Len(t, lt.WallUS, 1)
	require.InDelta(t, float64(union)/1e3/layers, lt.WallUS[0], 1e-9)
	require.Less(t, lt.WallUS[0], sum, "the router's overlap is counted once")

	one := makeTrace(tracing.StepDecode, step(layers, dense))
	lt, err = DecodeLayers(context.Background(), one, LayerOptions{})
	require.NoError(t, err)
	require.Nil(t, lt.WallUS)
}
