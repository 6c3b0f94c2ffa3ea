package diff

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/tracing"
)

// categoryStepTimes sums, straight from a trace, the GPU time per profiler
// step of each category (what the diff must report, computed without it).
func categoryStepTimes(t *testing.T, path string) map[string]float64 {
	t.Helper()
	tr, err := tracing.Load(context.Background(), path, tracing.Options{})
	require.NoError(t, err)
	rules := inventory.DefaultRules()
	class := map[string]string{} // kernel name -> category (Classify is slow)
	out := map[string]float64{}
	steps := 0
	for _, st := range tr.Steps {
		if (st.Kind != tracing.StepProfiler && st.Kind != tracing.StepGraph) || len(st.Kernels) == 0 {
			continue
		}
		steps++
		for _, i := range st.Kernels {
			k := &tr.Kernels[i]
			name := tr.NameOf(k)
			c, ok := class[name]
			if !ok {
				c = rules.Classify(name).Category
				if k.Kind != tracing.KindKernel && c == inventory.Other {
					c = "Memcpy / memset"
				}
				class[name] = c
			}
			out[c] += float64(k.Dur) / 1000
		}
	}
	require.Positive(t, steps)
	for c := range out {
		out[c] /= float64(steps)
	}
	return out
}

// TestCompareVendorsCorpus: the same Hugging Face forward pass on MI300X
// and on H100. rocBLAS and cuBLAS GEMMs, Triton and FlashAttention
// attention, and PyTorch's elementwise kernels of either build are matched
// by category at their place in the layer; the normalisation (an unfused
// RMSNorm: pow, mean, rsqrt, mul) is matched kernel by kernel; each
// category's time ratio is the one the traces hold.
func TestCompareVendorsCorpus(t *testing.T) {
	t.Parallel()
	amd := corpus.Path(t, "traces/qwen1.5-0.5b-forward-mi300x.json.gz")
	nv := corpus.Path(t, "traces/qwen1.5-0.5b-forward-h100.json.gz")
	ctx := context.Background()
	a, err := loadTrace(ctx, amd, nil)
	require.NoError(t, err)
	b, err := loadTrace(ctx, nv, nil)
	require.NoError(t, err)
	r := Compare(a, b)
	require.Equal(t, perStep, r.Measure)
	require.False(t, r.NoChange)

	// Kernel groups: each vendor's kernels for the role.
	group := func(cat string, inA, inB func(string) bool) KernelChange {
		t.Helper()
		for _, k := range r.Kernels {
			if k.In == "both" && k.Category == cat && slices.ContainsFunc(k.A, inA) && slices.ContainsFunc(k.B, inB) {
				return k
			}
		}
		t.Fatalf("no %s kernels of A matched to B's", cat)
		return KernelChange{}
	}
	has := func(sub string) func(string) bool { return func(s string) bool { return strings.Contains(s, sub) } }
	gemm := group("Dense GEMM (BF16)", has("Cijk_"), has("sm90_xmma_gemm"))
	require.Equal(t, matchPosition, gemm.Match)
	attn := group("Flash attention (prefill)", has("attn_fwd"), has("flash_fwd"))
	require.Equal(t, matchPosition, attn.Match)
	mul := group("Elementwise / copy", has("elementwise_kernel_manual_unroll<"), has("elementwise_kernel<"))
	require.Equal(t, matchRole, mul.Match, "ATen kernels of the same functor")
	require.NotEqual(t, mul.A, mul.B)

	// The normalisation kernels, position by position.
	for _, op := range []string{"pow_tensor_scalar_kernel_impl", "reduce_kernel<MeanOps>", "rsqrt_kernel_cuda"} {
		n := 0
		for _, p := range r.Layer {
			if strings.Contains(p.ShortA, op) {
				require.Contains(t, p.ShortB, op, "pos %d of A", p.PosA)
				require.NotEmpty(t, p.Match)
				n++
			}
		}
		require.Equal(t, 2, n, "%s: both RMSNorms of the layer are matched", op)
	}
	// The layer alignment pairs GEMMs with GEMMs, attention with attention.
	for _, p := range r.Layer {
		if p.PosA >= 0 && p.PosB >= 0 {
			ca := a.Positions[slices.IndexFunc(a.Positions, func(x Position) bool { return x.Pos == p.PosA })].Category
			cb := b.Positions[slices.IndexFunc(b.Positions, func(x Position) bool { return x.Pos == p.PosB })].Category
			require.Equal(t, ca, cb, "aligned pos %d and %d", p.PosA, p.PosB)
		}
	}

	// The time ratio per category, against sums taken from the traces.
	wantA, wantB := categoryStepTimes(t, amd), categoryStepTimes(t, nv)
	for _, cat := range []string{"Dense GEMM (BF16)", "Flash attention (prefill)", "Elementwise / copy", "Reduction / scan / sort"} {
		i := slices.IndexFunc(r.Categories, func(c CategoryChange) bool { return c.Category == cat })
		require.GreaterOrEqual(t, i, 0, cat)
		c := r.Categories[i]
		require.InDelta(t, wantA[cat], c.StepUS.A, 0.01, cat)
		require.InDelta(t, wantB[cat], c.StepUS.B, 0.01, cat)
		require.NotNil(t, c.Ratio)
		require.InDelta(t, wantB[cat]/wantA[cat], *c.Ratio, 0.001, cat)
	}
	var sum float64
	for _, c := range r.Categories {
		sum += c.StepUS.Delta
	}
	require.InDelta(t, r.StepUS.Delta, sum, 0.01, "the category changes add up to the step change")

	var md bytes.Buffer
	require.NoError(t, r.WriteMarkdown(&md, MarkdownOptions{}))
	require.Contains(t, md.String(), "| Dense GEMM (BF16) |")
	require.Contains(t, md.String(), "**replaced** (Dense GEMM (BF16)): `GEMM_BF16 (rocBLAS)` → `GEMM (cuBLAS)`")
}

func layerProfile(t *testing.T, rows []inventory.LayerRow) *Profile {
	t.Helper()
	p, err := LoadLevel(writeLayerCSV(t, filepath.Join(t.TempDir(), "conc8_layer.csv"), rows), nil)
	require.NoError(t, err)
	return p
}

func row(pos int, short, kernel string, avg float64) inventory.LayerRow {
	return inventory.LayerRow{Pos: pos, ShortName: short, Kernel: kernel, AvgUS: avg, MinUS: avg, MaxUS: avg, Count: 10}
}

// TestChanges: kernels fused, split, replaced, added and removed in the
// layer, each named with what it replaced.
func TestChanges(t *testing.T) {
	t.Parallel()
	gate := row(0, "MoE_gate (topk)", "aiter::grouped_topk_kernel<float>", 6)
	sort := row(1, "MoE_sort", "ck_tile::MoeSortingKernel<int>", 8)
	gemm1 := row(2, "MoE_GEMM (CK)", "ck::kernel_moe_gemm<gate_up>", 70)
	gemm2 := row(3, "MoE_GEMM (CK)", "ck::kernel_moe_gemm<down>", 36)
	norm := row(4, "RMSNorm+Quant", "aiter::add_rmsnorm_quant_kernel<bf16>", 5)
	fmoe := row(2, "MoE_GEMM_fused (ASM)", "fmoe_bf16_blockscaleFp8_g1u1_subGU_256", 90)
	p0 := row(1, "MoE_sort_P0", "ck_tile::MoeSortingMultiPhaseKernel_P0_v2<int>", 5)
	p23 := row(2, "MoE_sort_P23", "ck_tile::MoeSortingMultiPhaseKernel_P23<int>", 5)
	cijk := row(1, "GEMM_BF16 (rocBLAS)", "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x64", 12)
	nvjet := row(1, "GEMM (nvjet)", "nvjet_tst_64x8_64x16_4x1_v_bz_TNT", 9)
	splitK := row(2, "GEMV (cuBLAS)", "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, true, false, false>(cublasLt::cublasSplitKParams<float>)", 4)
	quant := row(2, "FP8_quant", "_ZN5aiter37dynamic_per_group_scaled_quant_kernelIDF16bDB8_Li32EEEvPT0_PfPKT_PKfiliibPKii", 5)
	renum := func(rs ...inventory.LayerRow) []inventory.LayerRow {
		out := slices.Clone(rs)
		for i := range out {
			out[i].Pos = i
		}
		return out
	}
	cases := []struct {
		name string
		a, b []inventory.LayerRow
		want []Change
	}{
		{name: "fused", a: renum(gate, sort, gemm1, gemm2, norm), b: renum(gate, sort, fmoe, norm),
			want: []Change{{Kind: changeFused, Category: "MoE expert GEMM", A: []string{"MoE_GEMM (CK)", "MoE_GEMM (CK)"}, B: []string{"MoE_GEMM_fused (ASM)"}, PosA: []int{2, 3}, PosB: []int{2}, AUS: 106, BUS: 90}}},
		{name: "split", a: renum(gate, sort, gemm1), b: renum(gate, p0, p23, gemm1),
			want: []Change{{Kind: changeSplit, Category: "MoE sort / align", A: []string{"MoE_sort"}, B: []string{"MoE_sort_P0", "MoE_sort_P23"}, PosA: []int{1}, PosB: []int{1, 2}, AUS: 8, BUS: 10}}},
		{name: "replaced across vendors", a: renum(gate, cijk, norm, cijk), b: renum(gate, nvjet, norm, nvjet),
			want: []Change{{Kind: changeReplaced, Category: "Dense GEMM (BF16)", A: []string{"GEMM_BF16 (rocBLAS)"}, B: []string{"GEMM (nvjet)"}, PosA: []int{1, 3}, PosB: []int{1, 3}, AUS: 24, BUS: 18}}},
		{name: "added", a: renum(gate, norm), b: renum(gate, quant, norm),
			want: []Change{{Kind: changeAdded, Category: "Activation quant", A: []string{}, B: []string{"FP8_quant"}, PosA: []int{}, PosB: []int{1}, BUS: 5}}},
		{name: "removed", a: renum(gate, quant, norm), b: renum(gate, norm),
			want: []Change{{Kind: changeRemoved, Category: "Activation quant", A: []string{"FP8_quant"}, B: []string{}, PosA: []int{1}, PosB: []int{}, AUS: 5}}},
		{name: "replaced by another category", a: renum(gate, quant, norm), b: renum(gate, sort, norm),
			want: []Change{{Kind: changeReplaced, A: []string{"FP8_quant"}, B: []string{"MoE_sort"}, PosA: []int{1}, PosB: []int{1}, AUS: 5, BUS: 8}}},
		{name: "same", a: renum(gate, sort, gemm1), b: renum(gate, sort, gemm1), want: []Change{}},
		// One vendor's GEMM splits K and reduces after it, the other's does
		// not: a replaced GEMM and a removed reduce, not a fusion.
		{name: "split-K reduce is not a fusion", a: renum(gate, nvjet, splitK, norm), b: renum(gate, cijk, norm),
			want: []Change{
				{Kind: changeRemoved, Category: "Dense GEMM (BF16)", A: []string{"GEMV (cuBLAS)"}, B: []string{}, PosA: []int{2}, PosB: []int{}, AUS: 4},
				{Kind: changeReplaced, Category: "Dense GEMM (BF16)", A: []string{"GEMM (nvjet)"}, B: []string{"GEMM_BF16 (rocBLAS)"}, PosA: []int{1}, PosB: []int{1}, AUS: 9, BUS: 12},
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := Compare(layerProfile(t, tc.a), layerProfile(t, tc.b))
			if d := cmp.Diff(tc.want, r.Changes); d != "" {
				t.Errorf("changes (-want +got):\n%s", d)
			}
			require.Equal(t, len(tc.want) == 0, r.NoChange)
		})
	}
}

// TestCorpusSplitMoESort: ATOM's real per-layer tables of MiniMax-M2.5 at
// concurrency 4 and 32: at 32 the MoE sort runs as two multi-phase kernels
// instead of one, and the MoE GEMMs grow the most.
func TestCorpusSplitMoESort(t *testing.T) {
	t.Parallel()
	a, err := LoadLevel(corpus.Path(t, "atom-minimax-m2.5/conc4_layer.csv"), nil)
	require.NoError(t, err)
	b, err := LoadLevel(corpus.Path(t, "atom-minimax-m2.5/conc32_layer.csv"), nil)
	require.NoError(t, err)
	r := Compare(a, b)
	require.Equal(t, perLayer, r.Measure, "layer tables alone: compared per layer")
	i := slices.IndexFunc(r.Changes, func(c Change) bool { return c.Kind == changeSplit })
	require.GreaterOrEqual(t, i, 0, "changes: %+v", r.Changes)
	require.Equal(t, Change{Kind: changeSplit, Category: "MoE sort / align", A: []string{"MoE_sort"}, B: []string{"MoE_sort_P0", "MoE_sort_P23"},
		PosA: []int{7}, PosB: []int{7, 8}, AUS: r.Changes[i].AUS, BUS: r.Changes[i].BUS}, r.Changes[i])
	require.Equal(t, "MoE expert GEMM", r.Kernels[0].Category, "the MoE GEMMs grow the most with batch size")
	require.Positive(t, r.Kernels[0].LayerUS.Delta)
	// Said: no inventory or category files beside these tables.
	require.Len(t, a.Notes, 2)
	require.Contains(t, a.Notes[0], "no conc4_kernels.csv beside")
	require.Contains(t, a.Notes[1], "no conc4_categories.csv beside")
}

// TestCompareSelf: a trace against itself.
func TestCompareSelf(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synthRun(t, dir, baseLayer, []int{8}, 0)
	p, err := loadTrace(context.Background(), filepath.Join(results.Run(dir).Traces(), "rank_0", "conc8.pt.trace.json"), nil)
	require.NoError(t, err)
	r := Compare(p, p)
	require.True(t, r.NoChange)
	require.Empty(t, r.Changes)
	require.Equal(t, 0.0, r.StepUS.Delta)
	var md bytes.Buffer
	require.NoError(t, r.WriteMarkdown(&md, MarkdownOptions{}))
	require.Contains(t, md.String(), "**No change**")
	require.NotContains(t, md.String(), "Largest changes")

	// The level files of the same trace compare the same way.
	q, err := LoadLevel(results.Run(dir).Level(8), nil)
	require.NoError(t, err)
	require.True(t, Compare(q, q).NoChange)
	// And the trace against its files: same layer, same categories per
	// step (to the files' three decimals).
	r = Compare(p, q)
	require.Equal(t, perLayer, r.Measure)
	require.Empty(t, r.Changes)
	for _, c := range r.Categories {
		require.InDelta(t, 0, c.StepUS.Delta, 0.002, c.Category)
	}
}

func TestLoadLevelErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	several := filepath.Join(dir, "several")
	writeLayerCSV(t, filepath.Join(several, "conc4_layer.csv"), baseLayer)
	writeLayerCSV(t, filepath.Join(several, "conc8_layer.csv"), baseLayer)
	none := filepath.Join(dir, "none")
	require.NoError(t, os.MkdirAll(none, 0o755))
	badKernels := filepath.Join(dir, "bad")
	writeLayerCSV(t, filepath.Join(badKernels, "conc4_layer.csv"), baseLayer)
	require.NoError(t, os.WriteFile(filepath.Join(badKernels, "conc4_kernels.csv"), []byte("name,total\nx,1\n"), 0o644))
	notNumber := filepath.Join(dir, "nan")
	writeLayerCSV(t, filepath.Join(notNumber, "conc4_layer.csv"), baseLayer)
	require.NoError(t, os.WriteFile(filepath.Join(notNumber, "conc4_kernels.csv"),
		[]byte(strings.Join(inventory.KernelsHeader, ",")+"\nk,k,Other,,many,1,1,1,1,0,1,none\n"), 0o644))
	cases := []struct{ name, path, want string }{
		{"several levels", several, "conc4_layer.csv, conc8_layer.csv"},
		{"no table", none, "holds no conc{bs}_layer.csv"},
		{"missing", filepath.Join(dir, "absent"), "no such file"},
		{"kernels header", badKernels, `conc4_kernels.csv: line 1: no "kernel" column`},
		{"kernels number", notNumber, "conc4_kernels.csv: line 2: count and total_us must be numbers"},
	}
	for _, tc := range cases {
		_, err := LoadLevel(tc.path, nil)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
	p, err := LoadLevel(filepath.Join(several, "conc8_layer.csv"), nil)
	require.NoError(t, err, "a table named by its path")
	require.Equal(t, 8, p.DecodeBS)
}

// TestAlign: the alignment keeps the order, anchors on names and fills
// the gaps by category; ATen kernels of different functors never pair.
func TestAlign(t *testing.T) {
	t.Parallel()
	pos := func(kernel, cat string) Position { return Position{Kernel: kernel, Category: cat} }
	ew := "Elementwise / copy"
	cases := []struct {
		name string
		a, b []Position
		want []pairing
	}{
		{"identical", []Position{pos("x", "A"), pos("y", "B")}, []Position{pos("x", "A"), pos("y", "B")},
			[]pairing{{0, 0, matchName}, {1, 1, matchName}}},
		{"insertion", []Position{pos("x", "A"), pos("y", "B")}, []Position{pos("x", "A"), pos("z", "C"), pos("y", "B")},
			[]pairing{{0, 0, matchName}, {-1, 1, ""}, {1, 2, matchName}}},
		{"by category", []Position{pos("x", "A"), pos("Cijk_1", "G"), pos("y", "B")}, []Position{pos("x", "A"), pos("nvjet_1", "G"), pos("y", "B")},
			[]pairing{{0, 0, matchName}, {1, 1, matchPosition}, {2, 2, matchName}}},
		{"functors", []Position{pos("at::native::elementwise_kernel<MulFunctor>", ew)},
			[]Position{pos("at::native::vectorized_elementwise_kernel<MulFunctor>", ew)},
			[]pairing{{0, 0, matchRole}}},
		{"other functors", []Position{pos("at::native::elementwise_kernel<MulFunctor>", ew)},
			[]Position{pos("at::native::elementwise_kernel<CUDAFunctor_add>", ew)},
			[]pairing{{0, -1, ""}, {-1, 0, ""}}},
		{"Other is no category", []Position{pos("foo", inventory.Other)}, []Position{pos("bar", inventory.Other)},
			[]pairing{{0, -1, ""}, {-1, 0, ""}}},
	}
	for _, tc := range cases {
		got := newMatcher().align(tc.a, tc.b)
		if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(pairing{})); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
}

// TestBenchResults: the benchmark files read back with the values of the
// report, one sample a side.
func TestBenchResults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	synthRun(t, a, baseLayer, []int{4}, 0.4)
	synthRun(t, b, slower(baseLayer, 6, 1.3), []int{4}, 0.4)
	rr, err := CompareRuns(context.Background(), a, b, Options{})
	require.NoError(t, err)
	ra, rb := rr.BenchResults()
	for side, rs := range [][]results.BenchResult{ra, rb} {
		var buf bytes.Buffer
		require.NoError(t, results.WriteBench(&buf, rs))
		back, err := results.ReadBench(&buf, "bench")
		require.NoError(t, err)
		require.Len(t, back, 1)
		require.Equal(t, "Profile/conc=4", back[0].Name)
		require.Equal(t, 1, back[0].Iters)
		got := map[string]float64{}
		for _, m := range back[0].Metrics {
			got[m.Unit] = m.Value
		}
		k := rr.Levels[0].Kernels
		pick := func(p *Pair) float64 {
			if side == 0 {
				return p.A
			}
			return p.B
		}
		require.InDelta(t, pick(k.StepUS), got["step-us"], 1e-9)
		require.InDelta(t, pick(k.LayerUS), got["layer-us"], 1e-9)
		moe := k.Categories[slices.IndexFunc(k.Categories, func(c CategoryChange) bool { return c.Category == "MoE expert GEMM" })]
		require.InDelta(t, pick(moe.LayerUS), got["moe-expert-gemm-us/layer"], 1e-9)
		require.InDelta(t, pick(moe.StepUS), got["moe-expert-gemm-us/step"], 1e-9)
		require.False(t, math.IsNaN(got["tpot-p50-ms"]))
		require.Contains(t, got, "out-tok/s")
	}
}

// TestRoofChange: two levels whose layer CSVs carry the roofline columns
// (made with the model config): each aligned position's % of the roofline
// on both sides and its change in points; a side without them is said.
func TestRoofChange(t *testing.T) {
	t.Parallel()
	withRoof := func(r inventory.LayerRow, pct float64) inventory.LayerRow {
		r.Role = "gate_up"
		r.Roof = &inventory.Roof{TBS: 1, TFLOPS: 2, Intensity: 2, Bound: "memory", PctRoof: pct}
		return r
	}
	gemm := row(0, "GEMM_BF16 (rocBLAS)", "Cijk_gate_up", 20)
	norm := row(1, "RMSNorm", "rmsnorm_kernel", 5)
	a := layerProfile(t, []inventory.LayerRow{withRoof(gemm, 25), norm})
	faster := gemm
	faster.AvgUS = 10
	b := layerProfile(t, []inventory.LayerRow{withRoof(faster, 50), norm})
	r := Compare(a, b)
	require.Len(t, r.Layer, 2)
	require.NotNil(t, r.Layer[0].PctRoof)
	require.Equal(t, 25.0, r.Layer[0].PctRoof.A)
	require.Equal(t, 50.0, r.Layer[0].PctRoof.B)
	require.Equal(t, 25.0, r.Layer[0].PctRoof.Delta)
	require.Nil(t, r.Layer[1].PctRoof, "a position without a point")
	var md bytes.Buffer
	require.NoError(t, r.WriteMarkdown(&md, MarkdownOptions{}))
	require.Contains(t, md.String(), "Roofline per position")
	require.Contains(t, md.String(), "| 0 | 0 | `GEMM_BF16 (gate_up)` | `GEMM_BF16 (gate_up)` | 25.0 | 50.0 | +25.0 |")

	plain := layerProfile(t, []inventory.LayerRow{faster, norm})
	r = Compare(a, plain)
	require.Nil(t, r.Layer[0].PctRoof)
	require.Contains(t, strings.Join(r.Notes, "\n"), "only A's layer table has roofline columns")
	md.Reset()
	require.NoError(t, r.WriteMarkdown(&md, MarkdownOptions{}))
	require.NotContains(t, md.String(), "Roofline per position")
}
