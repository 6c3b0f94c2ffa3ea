package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/profiling/diff"
	"github.com/profile-model/profile-model/tracing"
)

// diffLayer is a small MoE decode layer; diffRuns makes run B with its
// down-projection MoE GEMM (diffSlowPos) 30% slower.
var diffLayer = []inventory.LayerRow{
	{Pos: 0, ShortName: "PA (paged_attn)", Kernel: "aiter::pa_bf16_pertokenFp8_gqa8_2tg_4w", AvgUS: 10, StdUS: 0.5, MinUS: 9, MaxUS: 12},
	{Pos: 1, ShortName: "GEMM_BF16 (rocBLAS)", Kernel: "Cijk_Alik_Bljk_S_B_Bias_HA_S_SAV_UserArgs_MT16x16x64_MI16x16x1", AvgUS: 12, StdUS: 0.5, MinUS: 11, MaxUS: 14},
	{Pos: 2, ShortName: "MoE_sort", Kernel: "ck_tile::MoeSortingKernel<int, float>", AvgUS: 8.5, StdUS: 0.4, MinUS: 8, MaxUS: 10},
	{Pos: 3, ShortName: "MoE_GEMM (CK)", Kernel: "ck::kernel_moe_gemm<gate_up, 256>", AvgUS: 70, StdUS: 2, MinUS: 65, MaxUS: 78},
	{Pos: 4, ShortName: "MoE_GEMM (CK)", Kernel: "ck::kernel_moe_gemm<down, 128>", AvgUS: 36, StdUS: 1, MinUS: 33, MaxUS: 40},
	{Pos: 5, ShortName: "RMSNorm+Quant", Kernel: "aiter::add_rmsnorm_quant_kernel<bf16, 256>", AvgUS: 5.6, StdUS: 0.3, MinUS: 5, MaxUS: 7},
}

const diffSlowPos = 4

// diffFixtures are built once per test binary with the commands
// themselves: per run a layer CSV, a synthetic trace of it at batch size 8
// (same seed), its layers and kernels in levels/conc8/, and conc8.json
// whose median TPOT is the trace's GPU time per decode step plus 0.4 ms.
var diffFixtures struct {
	once sync.Once
	dir  string
	err  error
}

func diffFixture(t *testing.T) string {
	t.Helper()
	diffFixtures.once.Do(func() {
		d, err := os.MkdirTemp("", "diff-fixtures")
		if err != nil {
			diffFixtures.err = err
			return
		}
		diffFixtures.dir = d
		diffFixtures.err = buildDiffRuns(d)
	})
	if diffFixtures.err != nil {
		t.Fatalf("building the diff fixtures: %v", diffFixtures.err)
	}
	return diffFixtures.dir
}

func buildDiffRuns(dir string) error {
	ctx := context.Background()
	// Two layer tables alone: the two CK MoE GEMMs of one replaced by the
	// fused ASM MoE kernel in the other.
	fused := []inventory.LayerRow{diffLayer[0], diffLayer[1], diffLayer[2],
		{Pos: 3, ShortName: "MoE_GEMM_fused (ASM)", Kernel: "_ZN5aiter43fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_32x256E", AvgUS: 95, StdUS: 2, MinUS: 90, MaxUS: 101},
		diffLayer[5]}
	fused[4].Pos = 4
	for name, layer := range map[string][]inventory.LayerRow{"unfused": diffLayer, "fused": fused} {
		for i := range layer {
			layer[i].Count = 48
		}
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name, "conc8_layer.csv"), inventory.FormatLayerCSV(layer), 0o644); err != nil {
			return err
		}
	}

	slow := append([]inventory.LayerRow(nil), diffLayer...)
	r := &slow[diffSlowPos]
	r.AvgUS, r.StdUS, r.MinUS, r.MaxUS = r.AvgUS*1.3, r.StdUS*1.3, r.MinUS*1.3, r.MaxUS*1.3
	for name, layer := range map[string][]inventory.LayerRow{"a": diffLayer, "b": slow} {
		run := results.Run(filepath.Join(dir, name))
		csvPath := filepath.Join(dir, name+"_layer.csv")
		trace := filepath.Join(run.Traces(), "rank_0", "m_ts_20260101_120000_1.pt.trace.json.gz")
		if err := os.MkdirAll(filepath.Dir(trace), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(csvPath, inventory.FormatLayerCSV(layer), 0o644); err != nil {
			return err
		}
		var out bytes.Buffer
		for _, args := range [][]string{
			{"synth", "--layer-csv", csvPath, "--out", trace, "--layers", "4", "--decode-steps", "12", "--prefill-steps", "1", "--bs", "8", "--seed", "5", "--python-per-step", "-1"},
			{"layers", trace, "--out", run.Level(8)},
			{"kernels", trace, "--out", run.Level(8)},
		} {
			if err := run2(ctx, args, &out); err != nil {
				return err
			}
		}
		tr, err := tracing.Load(ctx, trace, tracing.Options{})
		if err != nil {
			return err
		}
		var ns int64
		steps := 0
		for _, st := range tr.Steps {
			if st.Kind == tracing.StepDecode && len(st.Kernels) > 0 {
				steps++
				for _, k := range st.Kernels {
					ns += tr.Kernels[k].Dur
				}
			}
		}
		tpot := float64(ns)/1e6/float64(steps) + 0.4
		l := &results.Level{SchemaVersion: results.SchemaVersion, Backend: "openai", ModelID: "m", NumPrompts: 32, MaxConcurrency: 8,
			Completed: 32, DurationS: 10, RequestThroughput: 3.2, OutputThroughput: 8000 / tpot, TotalTokenThroughput: 8800 / tpot,
			TTFT:   results.Stats{Pcts: []results.Pct{{P: 50, Value: 40}, {P: 99, Value: 80}}},
			TPOT:   results.Stats{Pcts: []results.Pct{{P: 50, Value: tpot}, {P: 99, Value: tpot * 1.1}}},
			ITL:    results.Stats{Pcts: []results.Pct{{P: 50, Value: tpot}}},
			E2EL:   results.Stats{Pcts: []results.Pct{{P: 50, Value: 40 + 49*tpot}}},
			Status: results.StatusOK, Profile: true, TraceFiles: []string{trace}, DecodeBS: tr.DecodeBS}
		var doc bytes.Buffer
		if err := l.Write(&doc); err != nil {
			return err
		}
		if err := os.WriteFile(run.LevelResult(8), doc.Bytes(), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(run.Summary(), results.FormatSummary([]results.SummaryRow{results.SummaryRowOf(l)}), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func run2(ctx context.Context, args []string, out *bytes.Buffer) error {
	var stderr bytes.Buffer
	if err := run(ctx, args, out, &stderr); err != nil {
		return &cmdError{args, err, stderr.String()}
	}
	return nil
}

type cmdError struct {
	args   []string
	err    error
	stderr string
}

func (e *cmdError) Error() string {
	return strings.Join(e.args, " ") + ": " + e.err.Error() + "\n" + e.stderr
}

// TestDiffGolden runs diff on generated traces, level files and run
// directories and compares what it prints with
// testdata/golden/diff-<case>.stdout and .stderr (go test -update rewrites
// them). Temporary paths print as $DIFF, $TRACES and $OUT.
func TestDiffGolden(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		args    []string
		wantErr bool
	}{
		{name: "diff-traces", args: []string{"diff", "$DIFF/a/traces/rank_0/m_ts_20260101_120000_1.pt.trace.json.gz", "$DIFF/b/traces/rank_0/m_ts_20260101_120000_1.pt.trace.json.gz", "--top", "6"}},
		{name: "diff-levels", args: []string{"diff", "$DIFF/a/levels/conc8", "$DIFF/b/levels/conc8/conc8_layer.csv", "--top", "6"}},
		{name: "diff-fused", args: []string{"diff", "$DIFF/unfused/conc8_layer.csv", "$DIFF/fused/conc8_layer.csv"}},
		{name: "diff-fused-json", args: []string{"diff", "--json", "$DIFF/unfused/conc8_layer.csv", "$DIFF/fused/conc8_layer.csv"}},
		{name: "diff-runs", args: []string{"diff", "$DIFF/a", "$DIFF/b", "--top", "4", "--benchstat", "$OUT/bench"}},
		{name: "diff-self", args: []string{"diff", "$TRACES/atom.json.gz", "$TRACES/atom.json.gz", "--top", "3"}},
		{name: "diff-one-arg", args: []string{"diff", "$TRACES/atom.json.gz"}, wantErr: true},
		{name: "diff-run-and-trace", args: []string{"diff", "$DIFF/a", "$TRACES/atom.json.gz"}, wantErr: true},
		{name: "diff-missing", args: []string{"diff", "$TRACES/atom.json.gz", "$OUT/no-such.json.gz"}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fixtures := diffFixture(t)
			traces, _ := goldenTrace(t, "atom")
			out := t.TempDir()
			args := make([]string, len(tc.args))
			repl := strings.NewReplacer("$DIFF", fixtures, "$TRACES", traces, "$OUT", out)
			for i, a := range tc.args {
				args[i] = repl.Replace(a)
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), args, &stdout, &stderr)
			if err != nil {
				stderr.WriteString("profile-model: " + err.Error() + "\n")
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v\nstderr:\n%s", err, tc.wantErr, stderr.String())
			}
			mask := strings.NewReplacer(fixtures, "$DIFF", traces, "$TRACES", out, "$OUT")
			checkGolden(t, tc.name, mask.Replace(stdout.String()), mask.Replace(stderr.String()))
		})
	}
}

func checkGolden(t *testing.T, name, stdout, stderr string) {
	t.Helper()
	for _, f := range []struct{ ext, got string }{{".stdout", stdout}, {".stderr", stderr}} {
		path := filepath.Join("testdata", "golden", name+f.ext)
		if *update {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, []byte(f.got), 0o644))
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./cmd/profile-model -run TestDiffGolden -update to create it)", err)
		}
		if d := cmp.Diff(string(want), f.got); d != "" {
			t.Errorf("%s differs from the golden file (-want +got; go test -update rewrites it after you read this diff):\n%s", path, d)
		}
	}
}

// TestDiffSlowerKernel: diff of two runs, one with a kernel 30% slower,
// names that kernel first with its change, in Markdown and in JSON.
func TestDiffSlowerKernel(t *testing.T) {
	t.Parallel()
	fixtures := diffFixture(t)
	var out bytes.Buffer
	require.NoError(t, run2(context.Background(), []string{"diff", "--json", filepath.Join(fixtures, "a"), filepath.Join(fixtures, "b")}, &out))
	var rr diff.RunReport
	require.NoError(t, json.Unmarshal(out.Bytes(), &rr))
	require.Len(t, rr.Levels, 1)
	k := rr.Levels[0].Kernels
	require.NotNil(t, k)
	first := k.Kernels[0]
	require.Equal(t, []string{diffLayer[diffSlowPos].Kernel}, first.A)
	require.InDelta(t, 30, *first.LayerUS.Pct, 1)
	require.InDelta(t, 0.3*first.LayerUS.A, first.LayerUS.Delta, 0.1, "one decimal of the layer CSVs")
	require.Contains(t, rr.Levels[0].Explanation, "is explained by the GPU time per decode step")

	out.Reset()
	require.NoError(t, run2(context.Background(), []string{"diff", filepath.Join(fixtures, "a"), filepath.Join(fixtures, "b")}, &out))
	md := out.String()
	i := strings.Index(md, "### Kernels in both")
	require.GreaterOrEqual(t, i, 0)
	rows := strings.Split(md[i:], "\n")
	require.True(t, strings.HasPrefix(rows[4], "| `MoE_GEMM (CK)` | `MoE_GEMM (CK)` | MoE expert GEMM | name |"), "first kernel row: %s", rows[4])
}

// TestDiffBenchstat: the --benchstat files read back as benchmark results
// and benchstat compares them, saying that one sample a side gives no
// confidence interval.
func TestDiffBenchstat(t *testing.T) {
	t.Parallel()
	fixtures := diffFixture(t)
	dir := t.TempDir()
	args := []string{"diff", filepath.Join(fixtures, "a"), filepath.Join(fixtures, "b"), "--benchstat", dir}
	var out bytes.Buffer
	require.NoError(t, run2(context.Background(), args, &out))
	old, err := results.LoadBench(filepath.Join(dir, "old.txt"))
	require.NoError(t, err)
	neu, err := results.LoadBench(filepath.Join(dir, "new.txt"))
	require.NoError(t, err)
	require.Len(t, old, 1)
	require.Len(t, neu, 1)
	require.Equal(t, "Profile/conc=8", old[0].Name)
	units := func(r results.BenchResult) map[string]float64 {
		m := map[string]float64{}
		for _, x := range r.Metrics {
			m[x.Unit] = x.Value
		}
		return m
	}
	o, n := units(old[0]), units(neu[0])
	for _, u := range []string{"step-us", "layer-us", "moe-expert-gemm-us/layer", "moe-expert-gemm-us/step", "tpot-p50-ms", "out-tok/s"} {
		require.Contains(t, o, u)
		require.Contains(t, n, u)
	}
	require.Greater(t, n["moe-expert-gemm-us/layer"], o["moe-expert-gemm-us/layer"])
	require.Equal(t, o["paged-attention-decode-us/layer"], n["paged-attention-decode-us/layer"])

	// Writing again refuses to overwrite.
	err = run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{})
	require.ErrorContains(t, err, "old.txt exists: pass --force")
	require.NoError(t, run(context.Background(), append(args, "--force"), &bytes.Buffer{}, &bytes.Buffer{}))

	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to run benchstat; the files were checked with the benchfmt reader above")
	}
	cmd := exec.Command(goBin, "tool", "benchstat", filepath.Join(dir, "old.txt"), filepath.Join(dir, "new.txt"))
	got, err := cmd.CombinedOutput()
	require.NoError(t, err, string(got))
	s := string(got)
	require.Contains(t, s, "moe-expert-gemm-us/layer")
	require.Contains(t, s, "Profile/conc=8")
	require.Contains(t, s, "need >= 6 samples for confidence interval", "benchstat says one sample is not enough")
}

// TestDiffSimRuns: two profiled sweeps of the simulated engine on the same
// per-layer table, except one kernel 30% slower in the second; diff names
// that kernel first, with that change, at every level.
func TestDiffSimRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	slow := append([]inventory.LayerRow(nil), diffLayer...)
	r := &slow[diffSlowPos]
	r.AvgUS, r.StdUS, r.MinUS, r.MaxUS = r.AvgUS*1.3, r.StdUS*1.3, r.MinUS*1.3, r.MaxUS*1.3
	var runs []string
	for _, v := range []struct {
		name  string
		layer []inventory.LayerRow
	}{{"a", diffLayer}, {"b", slow}} {
		table := filepath.Join(dir, v.name+"_conc8_layer.csv")
		require.NoError(t, os.WriteFile(table, inventory.FormatLayerCSV(v.layer), 0o644))
		out := filepath.Join(dir, v.name)
		args := append([]string{"run", "--conc", "4,8", "--isl", "64", "--osl", "8", "--num-prompts-mul", "2", "--seed", "3",
			"--time-scale", "200", "--tokenizer", "none", "--out", out, "--server-arg=--kernels=" + table}, simArgs(t)...)
		var stdout, stderr bytes.Buffer
		require.NoError(t, run(context.Background(), args, &stdout, &stderr), stderr.String())
		runs = append(runs, onlyDir(t, out))
	}
	var out bytes.Buffer
	require.NoError(t, run2(context.Background(), []string{"diff", "--json", runs[0], runs[1]}, &out))
	var rr diff.RunReport
	require.NoError(t, json.Unmarshal(out.Bytes(), &rr))
	require.Len(t, rr.Levels, 2)
	for _, l := range rr.Levels {
		k := l.Kernels
		require.NotNil(t, k, "conc %d", l.Conc)
		first := k.Kernels[0]
		require.Equal(t, []string{diffLayer[diffSlowPos].Kernel}, first.A, "conc %d: the slower kernel first", l.Conc)
		require.InDelta(t, 30, *first.LayerUS.Pct, 2, "conc %d", l.Conc)
		for _, kc := range k.Kernels[1:] {
			if kc.LayerUS != nil {
				require.Less(t, abs(kc.LayerUS.Delta), abs(first.LayerUS.Delta)/5, "conc %d: %v", l.Conc, kc.A)
			}
		}
		// The engine ran 200× faster than the GPU time its traces record:
		// the TPOT is not set against the kernels.
		require.Contains(t, l.Explanation, "do not run on the same clock", "conc %d", l.Conc)
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// TestBenchstatVersion: the benchstat command diff prints and the docs
// show runs from any directory (go tool benchstat works only inside the
// repository) at the version go.mod pins.
func TestBenchstatVersion(t *testing.T) {
	t.Parallel()
	mod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*golang.org/x/perf (\S+)`).FindSubmatch(mod)
	require.NotNil(t, m, "go.mod requires golang.org/x/perf")
	want := "go run golang.org/x/perf/cmd/benchstat@" + string(m[1])
	require.Equal(t, want, benchstatCommand)
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	require.NoError(t, err)
	pinned := regexp.MustCompile(`golang.org/x/perf/cmd/benchstat@(v[^\s` + "`" + `]+)`)
	found := 0
	for _, d := range append(docs, filepath.Join("..", "..", "README.md")) {
		data, err := os.ReadFile(d)
		require.NoError(t, err)
		for _, v := range pinned.FindAllSubmatch(data, -1) {
			require.Equal(t, string(m[1]), string(v[1]), "%s pins another benchstat", d)
			found++
		}
	}
	require.Positive(t, found, "the docs show the command that runs from any directory")
}
