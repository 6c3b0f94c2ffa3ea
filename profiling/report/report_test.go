package report_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/profiling/report"
	"github.com/profile-model/profile-model/profiling/report/reporttest"
	"github.com/profile-model/profile-model/profiling/synth"
)

var update = flag.Bool("update", false, "rewrite the golden readme in testdata/")

const modelConfig = "../../fixtures/models/minimax-m2/config.json"

// madeRun is one run directory made for all tests (the traces take a
// moment); tests copy it before they change anything.
var madeRun = sync.OnceValues(func() (dir string, err error) {
	dir, err = os.MkdirTemp("", "report-run-")
	if err != nil {
		return "", err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("making the run directory: %v", r)
		}
	}()
	reporttest.MakeRun(fakeT{}, dir, modelConfig)
	return dir, nil
})

// fakeT lets MakeRun run once for all tests: a failure panics, and
// madeRun turns the panic into its error.
type fakeT struct{ testing.TB }

func (fakeT) Helper()           {}
func (fakeT) Fatal(args ...any) { panic(fmt.Sprint(args...)) }

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if dir, err := madeRun(); err == nil {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// runCopy copies the made run into a fresh directory.
func runCopy(t *testing.T) string {
	t.Helper()
	src, err := madeRun()
	require.NoError(t, err)
	dst := filepath.Join(t.TempDir(), "run")
	require.NoError(t, copyDir(src, dst))
	return dst
}

func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, 0o644)
	})
}

func TestGoldenReadme(t *testing.T) {
	dir := runCopy(t)
	rep, err := report.Build(dir, report.Options{})
	require.NoError(t, err)
	require.Empty(t, rep.Notes, "the made run is complete")
	got, err := os.ReadFile(results.Run(dir).Readme())
	require.NoError(t, err)
	golden := filepath.Join("testdata", "readme.golden.md")
	if *update {
		require.NoError(t, os.WriteFile(golden, got, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test ./profiling/report -run TestGoldenReadme -update to create it")
	if d := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")); d != "" {
		t.Fatalf("readme.md differs from %s (-want +got); rerun with -update if the change is intended:\n%s", golden, d)
	}
	for _, section := range []string{"## Key observations", "## Model and setup", "## Throughput", "## Step-time reconciliation",
		"## Kernel inventory", "## Per-layer time by position", "### Kernels that change between levels", "## Scaling with batch size",
		"## Time breakdown per decode step", "## Warnings"} {
		require.Contains(t, string(got), "\n"+section+"\n")
	}
}

// TestCopiedRunSameReport: a run directory moved elsewhere, without its
// traces, gives the same readme and charts, byte for byte.
func TestCopiedRunSameReport(t *testing.T) {
	a := runCopy(t)
	_, err := report.Build(a, report.Options{})
	require.NoError(t, err)
	b := filepath.Join(t.TempDir(), "elsewhere", "copy")
	require.NoError(t, copyDir(a, b))
	require.NoError(t, os.RemoveAll(filepath.Join(b, "traces")))
	files := []string{"readme.md", report.LatencyChart, report.ThroughputChart, report.ThroughputTPOTChart, report.LayerTimeChart, report.PositionsChart, report.TokenTimeChart, report.RooflineChart}
	for _, f := range files {
		require.NoError(t, os.Remove(filepath.Join(b, f)))
	}
	rep, err := report.Build(b, report.Options{})
	require.NoError(t, err)
	require.Len(t, rep.Files, len(files))
	for _, f := range files {
		x, err := os.ReadFile(filepath.Join(a, f))
		require.NoError(t, err)
		y, err := os.ReadFile(filepath.Join(b, f))
		require.NoError(t, err)
		require.True(t, bytes.Equal(x, y), "%s differs between the run and its copy", f)
	}
}

// TestChartsAreLabelledSVG parses each chart as XML and checks its axis
// labels and legend entries are drawn.
func TestChartsAreLabelledSVG(t *testing.T) {
	dir := runCopy(t)
	_, err := report.Build(dir, report.Options{})
	require.NoError(t, err)
	for _, tt := range []struct {
		file  string
		texts []string
	}{
		{report.LatencyChart, []string{"concurrency (requests in flight) — log₂ axis", "TTFT (ms)", "TPOT (ms)", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "4", "16", "32"}},
		{report.ThroughputChart, []string{"concurrency (requests in flight) — log₂ axis", "output throughput (tok/s)", "total throughput (tok/s)", "request throughput (req/s)"}},
		{report.ThroughputTPOTChart, []string{"TPOT (ms)", "output throughput (tok/s)", "conc 4", "conc 16", "conc 32", "TPOT p50"}},
		{report.LayerTimeChart, []string{"time per decode layer (µs)", "level", "conc 4 (bs 4)", "conc 32 (bs 32)", "MoE expert GEMM", "Paged attention (decode)"}},
		{report.PositionsChart, []string{"decode batch size — log₂ axis", "time per layer (µs)", "4", "16", "32"}},
		{report.TokenTimeChart, []string{"time per token (ms)", "conc 4 (bs 4)", "gaps between kernels", "prefill steps (per token)", "MoE expert GEMM"}},
		{report.RooflineChart, []string{"arithmetic intensity (FLOP/byte) — log axis", "achieved TFLOP/s — log axis", "conc 4 (bs 4)", "conc 32 (bs 32)", "1", "10", "100"}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join(dir, tt.file))
			require.NoError(t, err)
			defer f.Close()
			texts := svgTexts(t, f)
			for _, want := range tt.texts {
				require.Contains(t, texts, want)
			}
		})
	}
}

// svgTexts parses an SVG document and returns the content of its text
// elements; it fails on anything that is not well-formed XML with an svg
// root.
func svgTexts(t *testing.T, r io.Reader) []string {
	t.Helper()
	dec := xml.NewDecoder(r)
	var texts []string
	inText, root := false, ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		switch e := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = e.Name.Local
			}
			inText = e.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, strings.TrimSpace(string(e)))
			}
		case xml.EndElement:
			inText = false
		}
	}
	require.Equal(t, "svg", root)
	return texts
}

// TestDegrades: a run directory with parts missing still gives a report
// that says what is missing.
func TestDegrades(t *testing.T) {
	for _, tt := range []struct {
		name   string
		remove []string // paths relative to the run
		write  map[string]string
		notes  []string // substrings of the notes
		files  int      // files written
		absent []string // substrings the readme must not hold
	}{
		{name: "no run.json", remove: []string{"run.json"}, notes: []string{"run.json is missing"}, files: 8},
		{name: "run.json that is not JSON", write: map[string]string{"run.json": `{"engine": {"tp": "two"}}`},
			notes: []string{"run.json could not be read", "not a run.json"}, files: 8},
		{name: "a failed run", write: map[string]string{"run.json": `{"status": "failed", "error": "the engine died", "notes": ["--enforce-eager only disables graphs"], "levels": [{"conc": 32, "error": "truncated trace"}]}`},
			notes: []string{"the run ended failed: the engine died", "run: --enforce-eager only disables graphs", "concurrency 32: the trace analysis failed: truncated trace"}, files: 8},
		{name: "no model config", remove: []string{"config.json"}, notes: []string{"no model config (config.json): the architecture comes from the traces alone"}, files: 7,
			absent: []string{"Parameters (estimate)"}},
		{name: "no level analyses", remove: []string{"levels"}, files: 4,
			notes: []string{"concurrency 4 has no trace analysis", "concurrency 32 has no trace analysis"}},
		{name: "a damaged level analysis", write: map[string]string{"levels/conc16/analysis.json": "{"},
			notes: []string{"levels/conc16/analysis.json: not a level analysis file"}, files: 8},
		{name: "no level results", remove: []string{"conc4.json", "conc16.json", "conc32.json", "summary.csv"}, files: 5,
			absent: []string{"latency.svg"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := runCopy(t)
			for _, p := range tt.remove {
				require.NoError(t, os.RemoveAll(filepath.Join(dir, p)))
			}
			for p, data := range tt.write {
				require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(data), 0o644))
			}
			rep, err := report.Build(dir, report.Options{})
			require.NoError(t, err)
			require.Len(t, rep.Files, tt.files)
			readme, err := os.ReadFile(filepath.Join(dir, "readme.md"))
			require.NoError(t, err)
			for _, n := range tt.notes {
				require.Contains(t, strings.Join(rep.Notes, "\n"), n)
				require.Contains(t, string(readme), n, "the readme's warnings say it too")
			}
			for _, a := range tt.absent {
				require.NotContains(t, string(readme), a)
			}
		})
	}
	_, err := report.Build(t.TempDir(), report.Options{})
	require.ErrorContains(t, err, "holds no level results")
	_, err = report.Build(filepath.Join(t.TempDir(), "nope"), report.Options{})
	require.ErrorContains(t, err, "reading the run directory")
}

// TestTimeScale: a simulated engine run with a faster clock has client
// latencies that many times shorter than its traces; the reconciliation
// scales them back and still closes.
func TestTimeScale(t *testing.T) {
	dir := runCopy(t)
	run := results.Run(dir)
	for _, conc := range reporttest.Levels {
		l, err := results.LoadLevel(run.LevelResult(conc))
		require.NoError(t, err)
		for _, s := range []*results.Stats{&l.TTFT, &l.TPOT, &l.ITL, &l.E2EL} {
			s.Mean /= 20
			s.Median /= 20
			for i := range s.Pcts {
				s.Pcts[i].Value /= 20
			}
		}
		var b bytes.Buffer
		require.NoError(t, l.Write(&b))
		require.NoError(t, os.WriteFile(run.LevelResult(conc), b.Bytes(), 0o644))
	}
	info, err := os.ReadFile(run.RunInfo())
	require.NoError(t, err)
	info = bytes.Replace(info, []byte(`"kind": "sim",`), []byte(`"kind": "sim", "time_scale": 20,`), 1)
	require.Contains(t, string(info), `"time_scale": 20`)
	require.NoError(t, os.WriteFile(run.RunInfo(), info, 0o644))
	_, err = report.Build(dir, report.Options{})
	require.NoError(t, err)
	readme, err := os.ReadFile(run.Readme())
	require.NoError(t, err)
	require.Contains(t, string(readme), "| client TPOT, mean, × 20 clock (ms) |")
	require.Contains(t, string(readme), "| TPOT − trace | +1.0% | +1.0% | +1.0% |")
	require.Contains(t, string(readme), "It closes within 3% at every level.")
	require.Contains(t, string(readme), "simulated engine at 20× speed")
}

// TestVariants: traces with alternating layer kinds, two streams or eager
// decode steps give a report with a table per layer kind and a closed
// reconciliation where the streams overlap.
func TestVariants(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts synth.GenerateOptions
		want []string
	}{
		{"alternating layers", synth.GenerateOptions{Alternate: true}, []string{"### Layer kind 0", "### Layer kind 1"}},
		{"two streams", synth.GenerateOptions{TwoStreams: true}, []string{"It closes within 3% at every level."}},
		{"eager decode", synth.GenerateOptions{EagerDecode: true}, []string{"## Per-layer time by position"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			run := results.Run(dir)
			for _, bs := range []int{4, 8} {
				opts := tt.opts
				opts.BS, opts.DecodeSteps, opts.Layers, opts.PythonPerStep, opts.Seed = bs, 8, 6, -1, uint64(bs)
				trace := filepath.Join(dir, fmt.Sprintf("trace%d.json", bs))
				f, err := os.Create(trace)
				require.NoError(t, err)
				_, err = synth.Generate(context.Background(), f, opts)
				require.NoError(t, err)
				require.NoError(t, f.Close())
				r, err := analysis.Load(context.Background(), trace, analysis.Options{})
				require.NoError(t, err)
				require.NoError(t, os.MkdirAll(run.Level(bs), 0o755))
				require.NoError(t, analysis.NewLevelFile(r).Write(filepath.Join(run.Level(bs), analysis.LevelFileName)))
				st := analysis.StepTimes(r.Trace, r.Decode)
				l := &results.Level{MaxConcurrency: bs, Completed: 8, TPOT: results.Stats{Mean: st.TokenUS / 1000}, DecodeBS: bs}
				var b bytes.Buffer
				require.NoError(t, l.Write(&b))
				require.NoError(t, os.WriteFile(run.LevelResult(bs), b.Bytes(), 0o644))
			}
			_, err := report.Build(dir, report.Options{})
			require.NoError(t, err)
			readme, err := os.ReadFile(run.Readme())
			require.NoError(t, err)
			for _, w := range tt.want {
				require.Contains(t, string(readme), w)
			}
		})
	}
}

// TestModuleColumn: levels analysed with the engine's capture traces
// (--mark-trace) name each position's module; the per-layer table shows
// it, and a run without them has no such column.
func TestModuleColumn(t *testing.T) {
	dir := runCopy(t)
	levels, err := filepath.Glob(filepath.Join(dir, "levels", "conc*", "analysis.json"))
	require.NoError(t, err)
	require.NotEmpty(t, levels)
	for _, path := range levels {
		f, err := analysis.LoadLevelFile(path)
		require.NoError(t, err)
		require.NotNil(t, f.Decode)
		for i := range f.Decode.Positions {
			f.Decode.Positions[i].Module = fmt.Sprintf("model.layers.*.pos%d", f.Decode.Positions[i].Pos)
		}
		require.NoError(t, os.Remove(path))
		require.NoError(t, f.Write(path))
	}
	_, err = report.Build(dir, report.Options{})
	require.NoError(t, err)
	readme, err := os.ReadFile(results.Run(dir).Readme())
	require.NoError(t, err)
	require.Contains(t, string(readme), "| pos | position (kernel and role) | category | provider | module |")
	require.Contains(t, string(readme), "`model.layers.*.pos0`")

	plain := runCopy(t)
	_, err = report.Build(plain, report.Options{})
	require.NoError(t, err)
	readme, err = os.ReadFile(results.Run(plain).Readme())
	require.NoError(t, err)
	require.NotContains(t, string(readme), "| module |")
}

// TestStructuralChangesFirst: in the made run the MoE sort kernel splits
// into two at conc 32 while other positions run other template instances
// from conc 16; the split is an observation of its own near the top, the
// instances close the list, and every position carries a role.
func TestStructuralChangesFirst(t *testing.T) {
	dir := runCopy(t)
	_, err := report.Build(dir, report.Options{})
	require.NoError(t, err)
	readme, err := os.ReadFile(results.Run(dir).Readme())
	require.NoError(t, err)
	obs := strings.Split(strings.SplitN(strings.SplitN(string(readme), "## Key observations\n\n", 2)[1], "\n\n", 2)[0], "\n")
	split, instances := -1, -1
	for i, o := range obs {
		if strings.Contains(o, "change structure") {
			split = i
			require.Contains(t, o, "From conc 32, pos 7, 8: `MoE_sort (sort)` is split into `MoE_sort_P0 (sort)` + `MoE_sort_P23 (sort)`")
			require.NotContains(t, o, "another instance")
		}
		if strings.Contains(o, "Other template instances") {
			instances = i
		}
	}
	require.GreaterOrEqual(t, split, 0, "no structural change observation in %q", obs)
	require.Equal(t, len(obs)-1, instances, "the template instances close the observations: %q", obs)
	require.Less(t, split, 2, "the split comes before the dominant category: %q", obs)
	for _, label := range []string{"`MoE_GEMM (gate_up)`", "`MoE_GEMM (down)`", "`GEMM_FP8 (O-proj)`", "`GEMM_FP8 (QKV)`", "`FP8_quant (before QKV)`"} {
		require.Contains(t, string(readme), label)
	}
	require.Contains(t, string(readme), "step change at conc 32")
	// The inventory says which kernels run in prefill alone: the fused MoE
	// kernel and flash attention of the made run.
	require.Contains(t, string(readme), "| MoE expert GEMM | aiter ASM | prefill | 1 |")
	require.Contains(t, string(readme), "| Flash attention (prefill) | aiter ASM | prefill | 1 |")
	require.Contains(t, string(readme), "| Paged attention (decode) | aiter ASM | decode | 1 |")
}

// TestRoofline: the made run (MiniMax on MI355X) has a roofline table,
// chart and the observation naming the position with the most time to
// gain; without config.json every other section stays and the roofline
// says why it is absent.
func TestRoofline(t *testing.T) {
	dir := runCopy(t)
	_, err := report.Build(dir, report.Options{})
	require.NoError(t, err)
	readme, err := os.ReadFile(results.Run(dir).Readme())
	require.NoError(t, err)
	require.Contains(t, string(readme), "## Roofline per position\n")
	require.Contains(t, string(readme), "| pos | position | time (µs) | TFLOP/s | TB/s | FLOP/byte | % of roofline | bound | µs to gain |")
	require.Contains(t, string(readme), "has the most time to gain at conc 32")
	require.Contains(t, string(readme), "![Roofline](roofline.svg)")
	// 228.7 B parameters in fp8 and the KV cache of 32 sequences of 1074
	// tokens (62 layers, 8 KV heads of 128, fp8) on the MI355X's 288 GB.
	require.Contains(t, string(readme), "| GPU memory (estimate) | weights 228.7 GB (fp8) + KV cache 4.36 GB (32 sequences × 1074 tokens, fp8) = 233.1 GB of the MI355X's 288.0 GB (80.9%), per rank |")

	require.NoError(t, os.Remove(filepath.Join(dir, "config.json")))
	_, err = report.Build(dir, report.Options{})
	require.NoError(t, err)
	readme, err = os.ReadFile(results.Run(dir).Readme())
	require.NoError(t, err)
	require.Contains(t, string(readme), "## Roofline per position\n\nNot computed: no model config (config.json): the work of each position cannot be computed.")
	require.NotContains(t, string(readme), "most time to gain")
	for _, section := range []string{"## Key observations", "## Throughput", "## Per-layer time by position", "## Scaling with batch size"} {
		require.Contains(t, string(readme), "\n"+section+"\n")
	}
}

// TestCategoryColoursFixed: a category's swatch has the same colour in
// both stacked charts, and the documented one (MoE expert GEMM blue, paged
// attention green), whatever its place in the stack.
func TestCategoryColoursFixed(t *testing.T) {
	dir := runCopy(t)
	_, err := report.Build(dir, report.Options{})
	require.NoError(t, err)
	layer := legendColours(t, filepath.Join(dir, report.LayerTimeChart))
	token := legendColours(t, filepath.Join(dir, report.TokenTimeChart))
	require.Equal(t, "#1f77b4", layer["MoE expert GEMM"])
	require.Equal(t, "#2ca02c", layer["Paged attention (decode)"])
	shared := 0
	for cat, c := range layer {
		if tc, ok := token[cat]; ok {
			require.Equal(t, c, tc, "%s", cat)
			shared++
		}
	}
	require.GreaterOrEqual(t, shared, 2)
}

// legendColours maps each legend entry of a stacked chart to the fill of
// the swatch drawn just before its text.
func legendColours(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	dec := xml.NewDecoder(f)
	out := map[string]string{}
	fill, inText := "", false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		switch e := tok.(type) {
		case xml.StartElement:
			inText = e.Name.Local == "text"
			if e.Name.Local == "rect" {
				for _, a := range e.Attr {
					if a.Name.Local == "fill" {
						fill = a.Value
					}
				}
			}
		case xml.CharData:
			if inText {
				out[strings.TrimSpace(string(e))] = fill
			}
		case xml.EndElement:
			inText = false
		}
	}
}
