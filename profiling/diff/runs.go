package diff

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/inventory/analysis"
)

// Options control how profiles are loaded.
type Options struct {
	Rules *inventory.Rules // category rules for both sides; nil: the built-in table
}

// RunReport compares two run directories level by level, the levels
// matched by client concurrency.
type RunReport struct {
	A      string        `json:"a"`
	B      string        `json:"b"`
	Levels []LevelReport `json:"levels"`
	OnlyA  []int         `json:"only_a"` // concurrencies only A ran
	OnlyB  []int         `json:"only_b"`
	// NoChange: every matched level has the same client metrics and no
	// kernel change.
	NoChange bool `json:"no_change"`
}

// LevelReport is one concurrency level of both runs.
type LevelReport struct {
	Conc   int      `json:"conc"`
	Client []Metric `json:"client"`
	// Kernels compares the level's analyses; nil when a side has none.
	Kernels *Report `json:"kernels,omitempty"`
	// Explanation says whether the kernel times account for the change of
	// the median TPOT, and by which kernel.
	Explanation string `json:"explanation"`
	// Waterfall splits the TPOT change into workload, kernels, host,
	// communication and what lies outside the trace; nil without both
	// levels' analysis files.
	Waterfall *analysis.Waterfall `json:"waterfall,omitempty"`
	Notes     []string            `json:"notes"`
	// Energy is the energy per decode-step token apportioned to each
	// layer role (mJ; by share of GPU time, not measured per kernel);
	// absent unless both sides sampled their GPUs.
	Energy []Metric `json:"energy_per_role,omitempty"`
}

// Metric is one client metric of a level on both sides.
type Metric struct {
	Name           string `json:"name"`
	Unit           string `json:"unit"` // as in bench.txt: ttft-p50-ms, out-tok/s, ...
	Pair           Pair   `json:"value"`
	HigherIsBetter bool   `json:"higher_is_better,omitempty"`
}

// clientMetrics are the summary.csv figures, named as bench.txt names them.
func clientMetrics(a, b results.SummaryRow) []Metric {
	ms := []struct {
		name, unit string
		get        func(r results.SummaryRow) float64
		higher     bool
	}{
		{"TTFT p50 (ms)", "ttft-p50-ms", func(r results.SummaryRow) float64 { return r.TTFTP50MS }, false},
		{"TTFT p99 (ms)", "ttft-p99-ms", func(r results.SummaryRow) float64 { return r.TTFTP99MS }, false},
		{"TPOT p50 (ms)", "tpot-p50-ms", func(r results.SummaryRow) float64 { return r.TPOTP50MS }, false},
		{"TPOT p99 (ms)", "tpot-p99-ms", func(r results.SummaryRow) float64 { return r.TPOTP99MS }, false},
		{"ITL p50 (ms)", "itl-p50-ms", func(r results.SummaryRow) float64 { return r.ITLP50MS }, false},
		{"E2E latency p50 (ms)", "e2el-p50-ms", func(r results.SummaryRow) float64 { return r.E2ELP50MS }, false},
		{"requests/s", "req/s", func(r results.SummaryRow) float64 { return r.ReqS }, true},
		{"output tokens/s", "out-tok/s", func(r results.SummaryRow) float64 { return r.OutTokS }, true},
		{"total tokens/s", "total-tok/s", func(r results.SummaryRow) float64 { return r.TotalTokS }, true},
		{"completed requests", "", func(r results.SummaryRow) float64 { return float64(r.Completed) }, true},
		{"failed requests", "", func(r results.SummaryRow) float64 { return float64(r.Failed) }, false},
		{"decode batch size (trace)", "", func(r results.SummaryRow) float64 { return float64(r.DecodeBS) }, false},
	}
	out := make([]Metric, len(ms))
	for i, m := range ms {
		out[i] = Metric{Name: m.name, Unit: m.unit, Pair: pair(m.get(a), m.get(b)), HigherIsBetter: m.higher}
	}
	// The GPUs' figures when both sides sampled them (summary.csv's gpu_*
	// columns, in bench.txt's units).
	if a.GPU != nil && b.GPU != nil {
		for _, m := range []struct {
			name, unit string
			col        int
			higher     bool
		}{
			{"GPU power mean (W)", results.UnitPowerMean, 0, false},
			{"GPU power peak (W)", results.UnitPowerPeak, 1, false},
			{"J per output token", results.UnitJPerToken, 3, false},
			{"J per request", results.UnitJPerReq, 4, false},
			{"output tokens per J", results.UnitTokPerJ, 5, true},
			{"time at a clock limit (s)", results.UnitThrottleS, 6, false},
		} {
			va, vb := a.GPU[m.col], b.GPU[m.col]
			if math.IsNaN(va) || math.IsNaN(vb) {
				continue
			}
			out = append(out, Metric{Name: m.name, Unit: m.unit, Pair: pair(va, vb), HigherIsBetter: m.higher})
		}
	}
	return out
}

// roleEnergy compares the energy per decode-step token apportioned to
// each layer role (mJ), when both sides have telemetry and an analysis.
func roleEnergy(dirA, dirB string, conc int, a, b runLevel) []Metric {
	load := func(dir string, lv runLevel) map[string]float64 {
		if lv.level == nil || lv.level.Telemetry == nil {
			return nil
		}
		f, err := analysis.LoadLevelFile(results.Run(dir).LevelAnalysis(conc))
		if err != nil {
			return nil
		}
		out := map[string]float64{}
		for _, e := range f.RoleEnergy(lv.level) {
			out[e.Group] = e.J * 1000
		}
		return out
	}
	ea, eb := load(dirA, a), load(dirB, b)
	if ea == nil || eb == nil {
		return nil
	}
	var out []Metric
	for _, g := range analysis.EnergyGroups {
		va, okA := ea[g]
		vb, okB := eb[g]
		if !okA && !okB {
			continue
		}
		out = append(out, Metric{Name: g, Unit: results.CategoryUnit(g) + "-mJ/token", Pair: pair(va, vb)})
	}
	return out
}

// runLevel is what a run directory says of one level.
type runLevel struct {
	row   results.SummaryRow
	level *results.Level // nil when only summary.csv has the level
}

var levelResultName = regexp.MustCompile(`^conc(\d+)\.json$`)

// IsRun reports whether dir is a run directory: it holds level results
// (conc{N}.json) or a sweep summary (summary.csv).
func IsRun(dir string) bool {
	if fileExists(results.Run(dir).Summary()) {
		return true
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if levelResultName.MatchString(e.Name()) {
			return true
		}
	}
	return false
}

func loadRun(dir string) (map[int]runLevel, error) {
	run := results.Run(dir)
	out := map[int]runLevel{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		m := levelResultName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		conc, _ := strconv.Atoi(m[1])
		l, err := results.LoadLevel(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[conc] = runLevel{row: results.SummaryRowOf(l), level: l}
	}
	rows, err := results.LoadSummary(run.Summary())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, r := range rows {
		if _, ok := out[r.Conc]; !ok {
			out[r.Conc] = runLevel{row: r}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s is not a run directory: it holds no conc{N}.json and no summary.csv with levels", dir)
	}
	return out, nil
}

// loadLevelProfile reads a level's analysis: the decode table in
// levels/conc{N}/ of the run, else the level's trace (first rank), else
// nothing (with a note why).
func loadLevelProfile(ctx context.Context, dir string, conc int, lv runLevel, opt Options) (*Profile, string, error) {
	levelDir := results.Run(dir).Level(conc)
	path, lerr := findLayerCSV(levelDir, lv.row.DecodeBS)
	if lerr == nil {
		p, err := LoadLevel(path, opt.Rules)
		return p, "", err
	}
	if lv.level == nil || len(lv.level.TraceFiles) == 0 {
		return nil, fmt.Sprintf("%s has no analysis of concurrency %d (%v; no trace files in its result): kernels not compared", dir, conc, lerr), nil
	}
	trace := lv.level.TraceFiles[0]
	found := ""
	for _, p := range []string{trace, filepath.Join(dir, trace)} {
		if fileExists(p) {
			found = p
			break
		}
	}
	if found == "" {
		return nil, fmt.Sprintf("%s: the trace of concurrency %d (%s) is gone and there is no analysis of it (%v): kernels not compared", dir, conc, trace, lerr), nil
	}
	p, err := loadTrace(ctx, found, opt.Rules)
	return p, fmt.Sprintf("%s has no analysis of concurrency %d (%v): analysed its trace %s", dir, conc, lerr, found), err
}

// CompareRuns compares two run directories, level by level.
func CompareRuns(ctx context.Context, a, b string, opt Options) (*RunReport, error) {
	la, err := loadRun(a)
	if err != nil {
		return nil, err
	}
	lb, err := loadRun(b)
	if err != nil {
		return nil, err
	}
	rr := &RunReport{A: a, B: b, Levels: []LevelReport{}, OnlyA: []int{}, OnlyB: []int{}, NoChange: true}
	var concs []int
	for c := range la {
		if _, ok := lb[c]; ok {
			concs = append(concs, c)
		} else {
			rr.OnlyA = append(rr.OnlyA, c)
		}
	}
	for c := range lb {
		if _, ok := la[c]; !ok {
			rr.OnlyB = append(rr.OnlyB, c)
		}
	}
	slices.Sort(concs)
	slices.Sort(rr.OnlyA)
	slices.Sort(rr.OnlyB)
	if len(concs) == 0 {
		return nil, fmt.Errorf("%s (concurrency %v) and %s (concurrency %v) have no level in common: nothing to compare", a, rr.OnlyA, b, rr.OnlyB)
	}
	fa, fb := levelFiles(a, la), levelFiles(b, lb)
	slope := batchSlope(fa, fb)
	for _, c := range concs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		lr := LevelReport{Conc: c, Client: clientMetrics(la[c].row, lb[c].row), Notes: []string{}}
		pa, na, err := loadLevelProfile(ctx, a, c, la[c], opt)
		if err != nil {
			return nil, err
		}
		pb, nb, err := loadLevelProfile(ctx, b, c, lb[c], opt)
		if err != nil {
			return nil, err
		}
		for _, n := range []string{na, nb} {
			if n != "" {
				lr.Notes = append(lr.Notes, n)
			}
		}
		if pa != nil && pb != nil {
			lr.Kernels = Compare(pa, pb)
		}
		if bsA, bsB := la[c].row.DecodeBS, lb[c].row.DecodeBS; bsA != bsB && bsA > 0 && bsB > 0 {
			lr.Notes = append(lr.Notes, fmt.Sprintf("the server ran decode batch size %d in A and %d in B at this concurrency: the kernels ran on different batches", bsA, bsB))
		}
		lr.Energy = roleEnergy(a, b, c, la[c], lb[c])
		lr.Explanation = explain(&lr)
		if fa[c] != nil && fb[c] != nil {
			w := analysis.NewWaterfall(waterfallSide("A", fa[c], la[c].level), waterfallSide("B", fb[c], lb[c].level), slope)
			lr.Waterfall = &w
		}
		for _, m := range lr.Client {
			if m.Pair.Delta != 0 {
				rr.NoChange = false
			}
		}
		if lr.Kernels == nil || !lr.Kernels.NoChange {
			rr.NoChange = false
		}
		rr.Levels = append(rr.Levels, lr)
	}
	if len(rr.OnlyA) > 0 || len(rr.OnlyB) > 0 {
		rr.NoChange = false
	}
	return rr, nil
}

// levelFiles reads the analysis file of each level of a run that has one.
func levelFiles(dir string, levels map[int]runLevel) map[int]*analysis.LevelFile {
	out := map[int]*analysis.LevelFile{}
	for c := range levels {
		if f, err := analysis.LoadLevelFile(results.Run(dir).LevelAnalysis(c)); err == nil {
			out[c] = f
		}
	}
	return out
}

// batchSlope prices a change of batch with the baseline's own levels (the
// µs per added sequence of its decode steps), else the new run's; NaN
// when neither ran two batches.
func batchSlope(a, b map[int]*analysis.LevelFile) float64 {
	for _, fs := range []map[int]*analysis.LevelFile{a, b} {
		var files []*analysis.LevelFile
		for _, c := range slices.Sorted(maps.Keys(fs)) {
			files = append(files, fs[c])
		}
		if s, ok := analysis.BatchSlope(files); ok {
			return s
		}
	}
	return math.NaN()
}

// waterfallSide is a level for the waterfall: its analysis and its
// client's mean TPOT, left out (NaN) when it is not on the trace's clock
// (a simulated engine run with --time-scale), as a decode step cannot
// take much longer than the time between two tokens.
func waterfallSide(name string, f *analysis.LevelFile, l *results.Level) analysis.Side {
	s := analysis.Side{Name: name, TPOTMS: math.NaN(), File: f}
	if l != nil && l.Completed > 0 && l.TPOT.Mean > 0 && f.StepTime.StepUS/1000 <= 1.5*l.TPOT.Mean {
		s.TPOTMS = l.TPOT.Mean
	}
	return s
}

// explainShare is the least share of a TPOT change that the change of the
// GPU time per decode step must make up (with the same sign) to be called
// its explanation.
const explainShare = 0.5

// explain relates the change of the median TPOT to the change of the GPU
// time per decode step, and names the kernel that moved most.
func explain(lr *LevelReport) string {
	var tpot Pair
	for _, m := range lr.Client {
		if m.Unit == "tpot-p50-ms" {
			tpot = m.Pair
		}
	}
	if tpot.A == 0 && tpot.B == 0 {
		return "No TPOT in the level results."
	}
	head := fmt.Sprintf("TPOT p50 %s ms (%s)", signed2(tpot.Delta), pct(&tpot))
	k := lr.Kernels
	steps := k != nil && k.StepUS != nil && k.A.StepKind == "decode" && k.B.StepKind == "decode"
	if steps {
		if stepMS := k.StepUS.A / 1000; stepMS > 1.5*tpot.A {
			// A decode step yields one token per sequence: its GPU time cannot
			// exceed the time per output token by much unless the client and
			// the trace keep different clocks.
			return fmt.Sprintf("TPOT p50 %s → %s ms, not set against the kernels: the GPU time per decode step (%s ms) exceeds the TPOT, "+
				"so the client and the trace do not run on the same clock (a simulated engine with --time-scale?).", f2(tpot.A), f2(tpot.B), f2(stepMS))
		}
	}
	if math.Abs(tpot.Delta) < max(0.01, 0.01*math.Abs(tpot.A)) {
		return fmt.Sprintf("TPOT p50 unchanged (%s → %s ms).", f2(tpot.A), f2(tpot.B))
	}
	if !steps {
		return head + ": no GPU time per decode step on both sides to compare it with."
	}
	step := k.StepUS.Delta / 1000
	share := step / tpot.Delta
	if share < explainShare {
		return fmt.Sprintf("%s is not explained by kernel time: the GPU time per decode step moved %s ms (%.0f%% of it). "+
			"Look outside the kernels: host time between steps, gaps between kernels, prefill steps interleaved with decode, batching.",
			head, signed2(step), share*100)
	}
	s := fmt.Sprintf("%s is explained by the GPU time per decode step, %s ms (%.0f%% of it)", head, signed2(step), share*100)
	for _, kc := range k.Kernels {
		if p := kc.measure(k.Measure); p != nil && !unchanged(p) {
			s += fmt.Sprintf("; the largest kernel change is %s, %s %s (%s)", kernelLabel(&kc), signed(p.Delta), unitName(k.Measure), pct(p))
			break
		}
	}
	return s + "."
}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func signed2(v float64) string {
	s := f2(v)
	if s == "-0.00" {
		s = "0.00"
	}
	if v > 0 && s != "0.00" {
		s = "+" + s
	}
	return s
}
