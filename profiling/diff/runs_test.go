package diff

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/profiling/kernelmodel"
	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
)

// baseLayer is a small ATOM-like MoE decode layer (names as ATOM's kernels
// are named, so the built-in rules categorise them).
var baseLayer = []inventory.LayerRow{
	{Pos: 0, ShortName: "PA (paged_attn)", Kernel: "aiter::pa_bf16_pertokenFp8_gqa8_2tg_4w", AvgUS: 10, StdUS: 0.5, MinUS: 9, MaxUS: 12},
	{Pos: 1, ShortName: "FP8_quant", Kernel: "_ZN5aiter37dynamic_per_group_scaled_quant_kernelIDF16bDB8_Li32EEEvPT0_PfPKT_PKfiliibPKii", AvgUS: 5.5, StdUS: 0.3, MinUS: 5, MaxUS: 7},
	{Pos: 2, ShortName: "GEMM_BF16 (rocBLAS)", Kernel: "Cijk_Alik_Bljk_S_B_Bias_HA_S_SAV_UserArgs_MT16x16x64_MI16x16x1", AvgUS: 12, StdUS: 0.5, MinUS: 11, MaxUS: 14},
	{Pos: 3, ShortName: "MoE_gate (topk)", Kernel: "aiter::grouped_topk_kernel<float, 1, true>", AvgUS: 6.5, StdUS: 0.3, MinUS: 6, MaxUS: 8},
	{Pos: 4, ShortName: "MoE_sort", Kernel: "ck_tile::MoeSortingKernel<int, float>", AvgUS: 8.5, StdUS: 0.4, MinUS: 8, MaxUS: 10},
	{Pos: 5, ShortName: "MoE_GEMM (CK)", Kernel: "ck::kernel_moe_gemm<gate_up, 256>", AvgUS: 70, StdUS: 2, MinUS: 65, MaxUS: 78},
	{Pos: 6, ShortName: "MoE_GEMM (CK)", Kernel: "ck::kernel_moe_gemm<down, 128>", AvgUS: 36, StdUS: 1, MinUS: 33, MaxUS: 40},
	{Pos: 7, ShortName: "RMSNorm+Quant", Kernel: "aiter::add_rmsnorm_quant_kernel<bf16, 256>", AvgUS: 5.6, StdUS: 0.3, MinUS: 5, MaxUS: 7},
}

// slower returns the layer with the kernel at pos made factor times
// slower: its mean, spread and bounds scaled alike, so that a trace drawn
// with the same seed has every other kernel unchanged and that one exactly
// factor times as long.
func slower(rows []inventory.LayerRow, pos int, factor float64) []inventory.LayerRow {
	out := slices.Clone(rows)
	r := &out[pos]
	r.AvgUS, r.StdUS, r.MinUS, r.MaxUS = r.AvgUS*factor, r.StdUS*factor, r.MinUS*factor, r.MaxUS*factor
	return out
}

func writeLayerCSV(t *testing.T, path string, rows []inventory.LayerRow) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, inventory.FormatLayerCSV(rows), 0o644))
	return path
}

// synthLayers is the number of layers per step of synthRun's traces.
const synthLayers = 4

// synthRun builds a run directory as a profiled sweep leaves it: per
// concurrency a synthetic trace of the layer (same seed for every run),
// its analysis in levels/conc{N}/, and conc{N}.json whose median TPOT is
// the trace's GPU time per decode step plus hostMS of host time.
func synthRun(t *testing.T, dir string, layer []inventory.LayerRow, concs []int, hostMS float64) {
	t.Helper()
	ctx := context.Background()
	run := results.Run(dir)
	model, err := kernelmodel.FromLayerCSV(writeLayerCSV(t, filepath.Join(dir, "model", "layer.csv"), layer))
	require.NoError(t, err)
	var rows []results.SummaryRow
	for _, conc := range concs {
		trace := filepath.Join(run.Traces(), "rank_0", "conc"+strconv.Itoa(conc)+".pt.trace.json")
		require.NoError(t, os.MkdirAll(filepath.Dir(trace), 0o755))
		f, err := os.Create(trace)
		require.NoError(t, err)
		_, err = synth.Generate(ctx, f, synth.GenerateOptions{Model: model, Layers: synthLayers, DecodeSteps: 12, PrefillSteps: 1,
			BS: conc, Seed: 11, PythonPerStep: -1})
		require.NoError(t, f.Close())
		require.NoError(t, err)
		res, err := analysis.Load(ctx, trace, analysis.Options{})
		require.NoError(t, err)
		bs := res.DecodeBS()
		_, err = res.Write(results.InDir(run.Level(conc), bs))
		require.NoError(t, err)

		// The GPU time per decode step, summed here from the trace.
		var ns int64
		steps := 0
		for _, st := range res.Trace.Steps {
			if st.Kind == tracing.StepDecode && len(st.Kernels) > 0 {
				steps++
				for _, k := range st.Kernels {
					ns += res.Trace.Kernels[k].Dur
				}
			}
		}
		require.Positive(t, steps)
		tpot := float64(ns)/1e6/float64(steps) + hostMS
		l := &results.Level{SchemaVersion: results.SchemaVersion, Backend: "openai", ModelID: "m", NumPrompts: 4 * conc,
			MaxConcurrency: conc, Completed: 4 * conc, DurationS: 10, RequestThroughput: float64(conc) / 2,
			OutputThroughput: float64(conc) * 1000 / tpot, TotalTokenThroughput: float64(conc) * 1100 / tpot,
			TTFT:   results.Stats{Pcts: []results.Pct{{P: 50, Value: 40}, {P: 99, Value: 80}}},
			TPOT:   results.Stats{Mean: tpot, Pcts: []results.Pct{{P: 50, Value: tpot}, {P: 99, Value: tpot * 1.1}}},
			ITL:    results.Stats{Pcts: []results.Pct{{P: 50, Value: tpot}}},
			E2EL:   results.Stats{Pcts: []results.Pct{{P: 50, Value: 40 + 49*tpot}}},
			Status: results.StatusOK, Profile: true, TraceFiles: []string{trace}, DecodeBS: bs}
		var buf bytes.Buffer
		require.NoError(t, l.Write(&buf))
		require.NoError(t, os.WriteFile(run.LevelResult(conc), buf.Bytes(), 0o644))
		rows = append(rows, results.SummaryRowOf(l))
	}
	require.NoError(t, os.WriteFile(run.Summary(), results.FormatSummary(rows), 0o644))
}

// TestCompareRunsSlowerKernel: two runs of the same seeded engine, one
// with one MoE GEMM 30% slower. The diff names that kernel first at every
// level, with its change, and says that it explains the TPOT change.
func TestCompareRunsSlowerKernel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	const pos = 6 // the down-projection MoE GEMM (not the largest kernel)
	synthRun(t, a, baseLayer, []int{4, 8}, 0.4)
	synthRun(t, b, slower(baseLayer, pos, 1.3), []int{4, 8}, 0.4)

	rr, err := CompareRuns(context.Background(), a, b, Options{})
	require.NoError(t, err)
	require.False(t, rr.NoChange)
	require.Len(t, rr.Levels, 2)
	for _, l := range rr.Levels {
		k := l.Kernels
		require.NotNil(t, k, "conc %d: the level analyses were compared", l.Conc)
		// Level files give per-step times per category, not per kernel:
		// kernels are ranked per layer, categories per step.
		require.Equal(t, perLayer, k.Measure)
		require.Equal(t, perStep, k.CategoryMeasure)
		first := k.Kernels[0]
		require.Equal(t, "both", first.In)
		require.Equal(t, []string{baseLayer[pos].Kernel}, first.A, "conc %d: the slower kernel comes first", l.Conc)
		require.Equal(t, []string{baseLayer[pos].Kernel}, first.B)

		// Its change is 30% of what A ran (A's own mean of that position).
		var avgA float64
		for _, p := range k.A.Positions {
			if p.Kernel == baseLayer[pos].Kernel {
				avgA = p.AvgUS
			}
		}
		require.Positive(t, avgA)
		require.InDelta(t, 0.3*avgA, first.LayerUS.Delta, 0.01*avgA, "conc %d: per-layer change", l.Conc)
		require.InDelta(t, 30, *first.LayerUS.Pct, 0.5)
		// Every other kernel is unchanged (same seed, same draws).
		for _, kc := range k.Kernels[1:] {
			require.Equal(t, "both", kc.In)
			require.True(t, unchanged(kc.LayerUS) && unchanged(kc.TotalUS), "conc %d: %v changed: %v %v", l.Conc, kc.A, kc.LayerUS, kc.TotalUS)
		}
		// The categories add up to the step-time change, which is that
		// kernel's change in every layer of the step.
		var sum float64
		for _, c := range k.Categories {
			sum += c.StepUS.Delta
			if c.Category != "MoE expert GEMM" {
				require.True(t, unchanged(c.StepUS), "conc %d: %s changed", l.Conc, c.Category)
			}
		}
		require.InDelta(t, k.StepUS.Delta, sum, 0.01)
		// (layer.csv holds means to 0.1 µs: each layer's share is that close)
		require.InDelta(t, synthLayers*first.LayerUS.Delta, k.StepUS.Delta, synthLayers*0.1)
		require.InDelta(t, first.LayerUS.Delta, k.LayerUS.Delta, 0.01)
		require.Empty(t, k.Changes, "no kernel was fused, split or replaced")

		require.Contains(t, l.Explanation, "is explained by the GPU time per decode step")
		require.Contains(t, l.Explanation, "MoE_GEMM (CK)")
	}
}

// TestCompareRunSelf: a run against itself shows no change.
func TestCompareRunSelf(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synthRun(t, dir, baseLayer, []int{4}, 0.4)
	rr, err := CompareRuns(context.Background(), dir, dir, Options{})
	require.NoError(t, err)
	require.True(t, rr.NoChange)
	require.Len(t, rr.Levels, 1)
	l := rr.Levels[0]
	require.True(t, l.Kernels.NoChange)
	require.Contains(t, l.Explanation, "TPOT p50 unchanged")
	for _, k := range l.Kernels.Kernels {
		require.Equal(t, matchName, k.Match)
	}
	var md bytes.Buffer
	require.NoError(t, rr.WriteMarkdown(&md, MarkdownOptions{}))
	require.Contains(t, md.String(), "**No change**: the same client metrics and the same kernels")
}

// TestCompareRunsFromTraces: a run directory without levels/ (as the
// bench command leaves it) is compared through its level's traces.
func TestCompareRunsFromTraces(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	synthRun(t, a, baseLayer, []int{4}, 0.4)
	synthRun(t, b, slower(baseLayer, 2, 1.3), []int{4, 8}, 0.4)
	for _, d := range []string{a, b} {
		require.NoError(t, os.RemoveAll(filepath.Join(d, "levels")))
	}
	rr, err := CompareRuns(context.Background(), a, b, Options{})
	require.NoError(t, err)
	require.Equal(t, []int{8}, rr.OnlyB)
	require.Len(t, rr.Levels, 1)
	l := rr.Levels[0]
	require.Len(t, l.Notes, 2)
	require.Contains(t, l.Notes[0], "analysed its trace")
	require.Equal(t, []string{baseLayer[2].Kernel}, l.Kernels.Kernels[0].A)
	require.Equal(t, stepFromTrace, l.Kernels.A.StepTimes)
}

func TestCompareRunsErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b, empty := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "empty")
	synthRun(t, a, baseLayer, []int{4}, 0)
	synthRun(t, b, baseLayer, []int{8}, 0)
	require.NoError(t, os.Mkdir(empty, 0o755))
	_, err := CompareRuns(context.Background(), a, b, Options{})
	require.ErrorContains(t, err, "no level in common")
	_, err = CompareRuns(context.Background(), a, empty, Options{})
	require.ErrorContains(t, err, "is not a run directory")
}

// TestExplain: when the GPU time per decode step accounts for the TPOT
// change, and when it does not.
func TestExplain(t *testing.T) {
	t.Parallel()
	level := func(tpotA, tpotB float64, stepA, stepB float64, steps bool) *LevelReport {
		lr := &LevelReport{Client: []Metric{{Name: "TPOT p50 (ms)", Unit: "tpot-p50-ms", Pair: pair(tpotA, tpotB)}}}
		if steps {
			k := &Report{A: &Profile{StepKind: "decode"}, B: &Profile{StepKind: "decode"}, Measure: perLayer,
				StepUS: pairPtr(stepA, stepB, true),
				Kernels: []KernelChange{{In: "both", AShort: []string{"x"}, BShort: []string{"x"}, A: []string{"x"}, B: []string{"x"},
					LayerUS: pairPtr(10, 10+(stepB-stepA)/4, true)}}}
			lr.Kernels = k
		}
		return lr
	}
	cases := []struct {
		name string
		lr   *LevelReport
		want string
	}{
		{"explained", level(10, 12, 9000, 10800, true), "TPOT p50 +2.00 ms (+20.0%) is explained by the GPU time per decode step, +1.80 ms (90% of it); the largest kernel change is `x`, +450.0 µs per layer (+4500.0%)."},
		{"not explained", level(10, 12, 9000, 9200, true), "TPOT p50 +2.00 ms (+20.0%) is not explained by kernel time: the GPU time per decode step moved +0.20 ms (10% of it)."},
		{"opposite", level(10, 12, 9000, 8000, true), "moved -1.00 ms (-50% of it)"},
		{"unchanged", level(10, 10.05, 9000, 9500, true), "TPOT p50 unchanged (10.00 → 10.05 ms)."},
		{"no kernels", level(10, 12, 0, 0, false), "TPOT p50 +2.00 ms (+20.0%): no GPU time per decode step on both sides to compare it with."},
		{"other clock", level(1, 1.2, 9000, 9500, true), "the GPU time per decode step (9.00 ms) exceeds the TPOT"},
		{"no TPOT", level(0, 0, 9000, 9500, true), "No TPOT in the level results."},
	}
	for _, tc := range cases {
		require.Contains(t, explain(tc.lr), tc.want, tc.name)
	}
}
