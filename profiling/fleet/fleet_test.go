package fleet

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	declaredSweeps = "../../fixtures/sweeps"
	runnerMap      = "../../" + DefaultRunnerMap
)

// TestDeclaredSweepsMatrix: every declared sweep and plan gets one job,
// on the runner map's labels for its GPU, the simulated ones marked as
// needing none; a plan's job runs run --plan on its file, its timeout
// sized from its pairs and levels.
func TestDeclaredSweepsMatrix(t *testing.T) {
	rm, err := LoadRunnerMap(runnerMap)
	require.NoError(t, err)
	sweeps, err := LoadSweepFiles(declaredSweeps)
	require.NoError(t, err)
	plans, err := LoadPlanFiles(declaredSweeps)
	require.NoError(t, err)
	require.NotEmpty(t, plans, "fixtures/sweeps/plans")
	p, err := MakeMatrices(sweeps, plans, rm, MatrixOptions{})
	require.NoError(t, err)
	require.Len(t, p.Matrices, 1)
	require.Len(t, p.Matrices[0].Include, len(sweeps)+len(plans))
	require.Equal(t, len(sweeps), p.Sweeps)
	require.Equal(t, len(plans), p.Plans)
	require.Equal(t, len(sweeps)+len(plans), p.GPUJobs+p.SimJobs)
	for i, e := range p.Matrices[0].Include[len(sweeps):] {
		pl := plans[i]
		require.Equal(t, pl.Name, e.Sweep)
		require.Equal(t, pl.Path(), e.Plan)
		require.Empty(t, e.Run)
		pairs, _ := pl.Pairs()
		require.Equal(t, len(pairs), e.Pairs)
		levels := 0
		for _, pr := range pairs {
			levels += len(pr.Workload.Concurrencies)
		}
		require.Equal(t, levels, e.Levels)
		require.Equal(t, PlanTimeout(pl, 1), e.TimeoutMinutes)
		require.Contains(t, e.Command, "profile-model run --plan '"+pl.Path()+"'")
		require.Contains(t, e.Command, `--out "$PROFILE_MODEL_KEEP_RUNS"/'`+pl.Name+"'/run$k")
		if pl.Engine == "sim" {
			require.False(t, e.NeedsGPU)
			require.Equal(t, rm.Sim.Labels, e.RunsOn)
		}
	}
	for i, e := range p.Matrices[0].Include[:len(sweeps)] {
		s := sweeps[i]
		require.Contains(t, e.Command, "-run '"+e.Run+"'")
		require.Equal(t, s.Name, e.Sweep)
		if s.Engine == "sim" {
			require.False(t, e.NeedsGPU, e.Sweep)
			require.Equal(t, rm.Sim.Labels, e.RunsOn)
			require.Empty(t, e.Tags)
			continue
		}
		require.True(t, e.NeedsGPU, e.Sweep)
		require.Equal(t, rm.GPUs[s.GPU].Labels, e.RunsOn, e.Sweep)
		require.Equal(t, rm.GPUs[s.GPU].TimeoutMinutes, e.TimeoutMinutes)
		require.Equal(t, "gpu", e.Tags)
	}
}

// runMatches applies a go test -run pattern as go test does: split at
// slashes, each part matched against the name's part of that level.
func runMatches(t *testing.T, pattern, name string) bool {
	t.Helper()
	pats, parts := strings.Split(pattern, "/"), strings.Split(name, "/")
	for i, p := range pats {
		if i >= len(parts) {
			return true
		}
		if !regexp.MustCompile(p).MatchString(parts[i]) {
			return false
		}
	}
	return true
}

// TestTestRunSelectsOneSweep: the -run pattern of a sweep selects its own
// subtest and no other (dots in names are literal).
func TestTestRunSelectsOneSweep(t *testing.T) {
	pat := TestRun("TestSimSweeps", "sim-minimax-m2.5")
	require.True(t, runMatches(t, pat, "TestSimSweeps/sim-minimax-m2.5"))
	for _, other := range []string{"TestSimSweeps/sim-minimax-m2x5", "TestSimSweeps/sim-minimax-m2.5-long", "TestGPUSweeps/sim-minimax-m2.5", "TestSimSweepsX/sim-minimax-m2.5"} {
		require.False(t, runMatches(t, pat, other), other)
	}
}

func writeSweep(t *testing.T, dir, name, engine, gpu string) {
	t.Helper()
	gpuField := ""
	if gpu != "" {
		gpuField = fmt.Sprintf(`, "gpu": %q`, gpu)
	}
	body := fmt.Sprintf(`{"name": %q, "engine": %q, "model": "m"%s, "isl": 1, "osl": 1, "concurrencies": [1], "num_prompts_mul": 1}`, name, engine, gpuField)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".json"), []byte(body), 0o644))
}

// TestMatrixSplitsAt256: 300 sweeps make two matrices, 256 and 44 jobs,
// each sweep once and in order.
func TestMatrixSplitsAt256(t *testing.T) {
	dir := t.TempDir()
	gpus := []string{"AMD Instinct MI355X", "AMD Instinct MI300X"}
	for i := range 300 {
		if i%3 == 0 {
			writeSweep(t, dir, fmt.Sprintf("s%03d", i), "sim", "")
		} else {
			writeSweep(t, dir, fmt.Sprintf("s%03d", i), "vllm", gpus[i%2])
		}
	}
	rm, err := LoadRunnerMap(runnerMap)
	require.NoError(t, err)
	sweeps, err := LoadSweepFiles(dir)
	require.NoError(t, err)
	p, err := MakeMatrices(sweeps, nil, rm, MatrixOptions{})
	require.NoError(t, err)
	require.Len(t, p.Matrices, 2)
	require.Len(t, p.Matrices[0].Include, MaxJobsPerMatrix)
	require.Len(t, p.Matrices[1].Include, 300-MaxJobsPerMatrix)
	require.Equal(t, 100, p.SimJobs)
	require.Equal(t, 200, p.GPUJobs)
	n := 0
	for _, m := range p.Matrices {
		require.LessOrEqual(t, len(m.Include), MaxJobsPerMatrix)
		for _, e := range m.Include {
			require.Equal(t, fmt.Sprintf("s%03d", n), e.Sweep)
			require.Equal(t, n%3 != 0, e.NeedsGPU)
			n++
		}
	}
	require.Equal(t, 300, n)
	// A smaller bound splits into more.
	p, err = MakeMatrices(sweeps, nil, rm, MatrixOptions{PerMatrix: 100})
	require.NoError(t, err)
	require.Len(t, p.Matrices, 3)
}

func TestMatrixErrors(t *testing.T) {
	rm, err := LoadRunnerMap(runnerMap)
	require.NoError(t, err)
	dir := t.TempDir()
	writeSweep(t, dir, "odd-gpu", "atom", "Some GPU 9000")
	sweeps, err := LoadSweepFiles(dir)
	require.NoError(t, err)
	_, err = MakeMatrices(sweeps, nil, rm, MatrixOptions{})
	require.ErrorContains(t, err, "odd-gpu.json")
	require.ErrorContains(t, err, `gpu "Some GPU 9000" has no runner in`)

	dir = t.TempDir()
	writeSweep(t, dir, "no-gpu", "vllm", "")
	sweeps, err = LoadSweepFiles(dir)
	require.NoError(t, err)
	_, err = MakeMatrices(sweeps, nil, rm, MatrixOptions{})
	require.ErrorContains(t, err, "no-gpu.json: engine vllm but no gpu")

	dir = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.json"), []byte(`{"name": "b", "engine": "sim"}`), 0o644))
	_, err = LoadSweepFiles(dir)
	require.ErrorContains(t, err, `a.json: name "b": must be the file's base name "a"`)
}

func TestRunnerMapErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"sim": {"labels": ["x"], "timeout_minutes": 5}, "gpus": {"G": {"labels": ["y"], "timeout_minutes": 5}}, "gpu": {}}`, `unknown object member name "gpu"`},
		{`{"sim": {"labels": ["x"], "timeout_minutes": 5, "timeout": 3}, "gpus": {"G": {"labels": ["y"], "timeout_minutes": 5}}}`, `unknown object member name "timeout"`},
		{`{"sim": {"labels": ["x"], "timeout_minutes": 5}, "gpus": {"G": {"labels": [], "timeout_minutes": 5}}}`, `gpus["G"]: no labels`},
		{`{"sim": {"labels": ["x"], "timeout_minutes": 0}, "gpus": {"G": {"labels": ["y"], "timeout_minutes": 5}}}`, `sim: timeout_minutes 0`},
		{`{"sim": {"labels": ["x"], "timeout_minutes": 5}}`, `gpus: none`},
	} {
		_, err := ParseRunnerMap([]byte(c.body), "runners.json")
		require.ErrorContains(t, err, "runners.json", c.body)
		require.ErrorContains(t, err, c.want, c.body)
	}
}

// summary builds a one-sweep, one-level summary with the given medians,
// each over four repeats that spread by ±0.1% around it (enough for the U
// test to call a change of a few percent significant).
func summary(sweep string, conc int, ok int, metrics map[string]float64) *Summary {
	l := LevelSummary{Conc: conc, OK: ok}
	if ok == 0 {
		l.Failed = 1
	}
	for _, u := range []string{"out-tok/s", "ttft-p50-ms", "tpot-p50-ms", "tpot-p99-ms", LayerUnit, CategoryUnit("MoE expert GEMM"), CategoryUnit("RoPE")} {
		if v, has := metrics[u]; has {
			l.Metrics = append(l.Metrics, MetricSummary{Unit: u, Median: v, Values: []float64{v * 0.999, v, v, v * 1.001}})
		}
	}
	return &Summary{Sweeps: []SweepSummary{{Sweep: sweep, Engine: "sim", Levels: []LevelSummary{l}}}}
}

// TestCompareThresholds: each threshold flags a change just beyond it and
// not one just within it; a negative threshold turns its check off.
func TestCompareThresholds(t *testing.T) {
	moe, rope := CategoryUnit("MoE expert GEMM"), CategoryUnit("RoPE")
	base := map[string]float64{"out-tok/s": 1000, "ttft-p50-ms": 100, "tpot-p50-ms": 10, "tpot-p99-ms": 20, LayerUnit: 200, moe: 50, rope: 5}
	with := func(u string, v float64) map[string]float64 {
		m := map[string]float64{}
		for k, x := range base {
			m[k] = x
		}
		m[u] = v
		return m
	}
	cases := []struct {
		name  string
		cur   map[string]float64
		t     func(*Thresholds)
		kind  string // "" : no finding
		unit  string
		pctOf float64
	}{
		{"same", base, nil, "", "", 0},
		{"throughput -6%", with("out-tok/s", 940), nil, "throughput", "out-tok/s", -6},
		{"throughput -4%", with("out-tok/s", 960), nil, "", "", 0},
		{"throughput up", with("out-tok/s", 1500), nil, "", "", 0},
		{"ttft +11%", with("ttft-p50-ms", 111), nil, "latency", "ttft-p50-ms", 11},
		{"tpot +9%", with("tpot-p50-ms", 10.9), nil, "", "", 0},
		{"tpot +12%", with("tpot-p50-ms", 11.2), nil, "latency", "tpot-p50-ms", 12},
		{"tpot p99 is not judged", with("tpot-p99-ms", 40), nil, "", "", 0},
		{"moe +30%", with(moe, 65), nil, "kernel", moe, 30},
		{"rope +16% but 0.8 µs", with(rope, 5.8), nil, "", "", 0},
		{"rope +16% with a lower floor", with(rope, 5.8), func(t *Thresholds) { t.KernelMinUS = 0.5 }, "kernel", rope, 16},
		{"latency off", with("tpot-p50-ms", 20), func(t *Thresholds) { t.LatencyRise = -1 }, "", "", 0},
		{"throughput off", with("out-tok/s", 1), func(t *Thresholds) { t.ThroughputDrop = -1 }, "", "", 0},
		{"kernel off", with(moe, 100), func(t *Thresholds) { t.KernelRise = -1 }, "", "", 0},
		{"throughput 2% limit", with("out-tok/s", 970), func(t *Thresholds) { t.ThroughputDrop = 2 }, "throughput", "out-tok/s", -3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			th := DefaultThresholds
			if c.t != nil {
				c.t(&th)
			}
			r := Compare(summary("s", 8, 1, base), summary("s", 8, 1, c.cur), th)
			require.Equal(t, 1, r.Compared)
			if c.kind == "" {
				require.False(t, r.Regressed(), "%+v", r.Findings)
				return
			}
			require.Len(t, r.Findings, 1, "%+v", r.Findings)
			f := r.Findings[0]
			require.Equal(t, c.kind, f.Kind)
			require.Equal(t, c.unit, f.Unit)
			require.Equal(t, 8, f.Conc)
			require.InDelta(t, c.pctOf, f.Pct, 1e-9)
			require.Equal(t, []SweepLevels{{Sweep: "s", Job: "s", Concs: []int{8}}}, r.Rerun())
		})
	}
}

// TestCompareNoise: a change beyond its threshold is a regression only
// when the repeats say it is not noise. One run a side never regresses,
// however large the change; five noisy repeats a side with a planted 10%
// TPOT rise do, with the U test's p-value; the same noise without the
// rise does not.
func TestCompareNoise(t *testing.T) {
	level := func(vals ...float64) *Summary {
		l := LevelSummary{Conc: 8, OK: len(vals), Metrics: []MetricSummary{{Unit: "tpot-p50-ms", Median: median(vals), Values: vals}}}
		return &Summary{Sweeps: []SweepSummary{{Sweep: "s", Engine: "sim", Levels: []LevelSummary{l}}}}
	}
	noise := []float64{1.00, 0.98, 1.03, 0.99, 1.02} // ±3% run to run
	scaled := func(f float64, shuffle []int) []float64 {
		out := make([]float64, len(noise))
		for i, j := range shuffle {
			out[i] = 10 * f * noise[j]
		}
		return out
	}

	// The levels carry TPOT alone: judge that unit only.
	tpotOnly := DefaultThresholds
	tpotOnly.ThroughputUnits, tpotOnly.LatencyUnits = nil, []string{"tpot-p50-ms"}

	// One run a side, 30% slower: reported, not a regression.
	r := Compare(level(10), level(13), tpotOnly)
	require.False(t, r.Regressed(), "%+v", r.Findings)
	require.Len(t, r.Unconfirmed, 1)
	require.Equal(t, 1.0, *r.Unconfirmed[0].P, "the U test cannot separate one value from one")
	require.Equal(t, [2]int{1, 1}, *r.Unconfirmed[0].N)
	var b strings.Builder
	require.NoError(t, r.WriteMarkdown(&b, "old", "new"))
	require.Contains(t, b.String(), "**No regression** (1 change beyond a threshold is not significant: below).")
	require.Contains(t, b.String(), "| s | 8 | latency | tpot-p50-ms | 10.0 | 13.0 | +30.0% | p=1.000 n=1+1 |")
	require.Contains(t, b.String(), "only 4 or more repeats a side can reach p < 0.05")

	// Five repeats a side with ±3% noise and a planted 10% rise, against a
	// 5% threshold: flagged.
	th := tpotOnly
	th.LatencyRise = 5
	r = Compare(level(scaled(1, []int{0, 1, 2, 3, 4})...), level(scaled(1.1, []int{3, 0, 4, 1, 2})...), th)
	require.True(t, r.Regressed())
	require.Len(t, r.Findings, 1)
	f := r.Findings[0]
	require.Equal(t, "latency", f.Kind)
	require.InDelta(t, 10, f.Pct, 0.5)
	require.Less(t, *f.P, 0.05)
	require.Equal(t, [2]int{5, 5}, *f.N)
	b.Reset()
	require.NoError(t, r.WriteMarkdown(&b, "old", "new"))
	require.Contains(t, b.String(), fmt.Sprintf("p=%.3f n=5+5", *f.P))

	// The same noise with a 1.5% rise and a 1% threshold that the medians
	// cross: within the noise, so not a regression.
	th.LatencyRise = 1
	r = Compare(level(scaled(1, []int{0, 1, 2, 3, 4})...), level(scaled(1.015, []int{4, 2, 3, 0, 1})...), th)
	require.False(t, r.Regressed(), "%+v", r.Findings)
	require.Len(t, r.Unconfirmed, 1)
	require.Greater(t, *r.Unconfirmed[0].P, 0.05)
}

// TestCompareIncomplete: a comparison that compared no level, names a
// unit no level has, or has a NaN threshold cannot say "no regression"
// (it once did, with exit status 0).
func TestCompareIncomplete(t *testing.T) {
	base := summary("a", 4, 1, map[string]float64{"out-tok/s": 100, "ttft-p50-ms": 10, "tpot-p50-ms": 5})
	require.NoError(t, Compare(base, base, DefaultThresholds).Incomplete())
	for name, c := range map[string]struct {
		cur  *Summary
		t    func(*Thresholds)
		want string
	}{
		"no level compared": {summary("b", 4, 1, map[string]float64{"out-tok/s": 100}), nil, "no level was compared"},
		"other levels":      {summary("a", 8, 1, map[string]float64{"out-tok/s": 100}), nil, "baseline only: a level 4; new only: a level 8"},
		"unknown unit":      {base, func(t *Thresholds) { t.ThroughputUnits = []string{"out-tok/sec"} }, `unit "out-tok/sec" is in no level compared (their units: out-tok/s, tpot-p50-ms, ttft-p50-ms)`},
		"NaN threshold":     {base, func(t *Thresholds) { t.LatencyRise = math.NaN() }, "latency rise threshold is not a number"},
	} {
		t.Run(name, func(t *testing.T) {
			th := DefaultThresholds
			if c.t != nil {
				c.t(&th)
			}
			r := Compare(base, c.cur, th)
			require.False(t, r.Regressed())
			require.ErrorContains(t, r.Incomplete(), c.want)
			var b strings.Builder
			require.NoError(t, r.WriteMarkdown(&b, "old", "new"))
			require.NotContains(t, b.String(), "No regression")
			require.Contains(t, b.String(), "**Not judged**")
		})
	}
}

func TestCompareFailedAndMissing(t *testing.T) {
	base := summary("a", 4, 1, map[string]float64{"out-tok/s": 1})
	base.Sweeps = append(base.Sweeps, summary("gone", 4, 1, nil).Sweeps...)
	cur := summary("a", 4, 0, nil)
	cur.Sweeps = append(cur.Sweeps, summary("fresh", 4, 1, nil).Sweeps...)
	r := Compare(base, cur, DefaultThresholds)
	require.Len(t, r.Findings, 1)
	require.Equal(t, "failed", r.Findings[0].Kind)
	require.Equal(t, []string{"gone"}, r.Missing)
	require.Equal(t, []string{"fresh"}, r.NewOnly)
	var b strings.Builder
	require.NoError(t, r.WriteMarkdown(&b, "old", "new"))
	require.Contains(t, b.String(), "| a | 4 | failed |")
	require.Contains(t, b.String(), "not in the new results (not compared): gone")
	require.Contains(t, b.String(), "-run '^TestSimSweeps$/^a$'")
}

func writePlan(t *testing.T, dir, name, body string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, PlansDir), 0o755))
	p := filepath.Join(dir, PlansDir, name+".json")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

// TestPlanMatrix: a plan on a GPU gets that GPU's runners and a timeout
// that grows with its pairs, levels and repeats; a plan that would not
// fit its runners' timeout, names no GPU, or shares a sweep's name is an
// error naming its file.
func TestPlanMatrix(t *testing.T) {
	rm, err := LoadRunnerMap(runnerMap)
	require.NoError(t, err)
	dir := t.TempDir()
	writeSweep(t, dir, "s", "sim", "")
	const workload = `"isl": 1024, "osl": 2048, "concurrencies": [4, 8, 16, 32], "num_prompts_mul": 8`
	writePlan(t, dir, "tp", `{"name": "tp", "engine": "vllm", "model": "m", "gpu": "AMD Instinct MI300X", `+workload+`,
		"servers": [{"name": "tp1", "tp": 1}, {"name": "tp2", "tp": 2}]}`)
	sweeps, err := LoadSweepFiles(dir)
	require.NoError(t, err)
	plans, err := LoadPlanFiles(dir)
	require.NoError(t, err)
	m, err := MakeMatrices(sweeps, plans, rm, MatrixOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, m.GPUJobs)
	require.Equal(t, 1, m.SimJobs)
	e := m.Matrices[0].Include[1]
	require.Equal(t, "tp", e.Sweep)
	require.True(t, e.NeedsGPU)
	require.Equal(t, rm.GPUs["AMD Instinct MI300X"].Labels, e.RunsOn)
	require.Equal(t, 2, e.Pairs)
	require.Equal(t, 8, e.Levels)
	// Two engine starts and eight levels of eight waves of 2048 output
	// tokens: over an hour at the assumed 30 ms a token; the job gets
	// twice that and the set-up.
	require.Greater(t, plans[0].Estimate(), time.Hour)
	require.Equal(t, int(math.Ceil((2*plans[0].Estimate()+planSetup).Minutes()/5))*5, e.TimeoutMinutes)
	require.LessOrEqual(t, e.TimeoutMinutes, rm.GPUs["AMD Instinct MI300X"].TimeoutMinutes)

	// Three repeats no longer fit the MI300X runners' 240 minutes.
	_, err = MakeMatrices(sweeps, plans, rm, MatrixOptions{Count: 3})
	require.ErrorContains(t, err, filepath.Join(dir, PlansDir, "tp.json")+": 2 pairs, 8 levels")
	require.ErrorContains(t, err, "raise their timeout_minutes, run fewer repeats or split the plan")

	for _, c := range []struct{ name, body, want string }{
		{"nogpu", `{"name": "nogpu", "engine": "vllm", "model": "m", ` + workload + `}`, "engine vllm but no gpu"},
		{"s", `{"name": "s", "engine": "sim", "model": "m", ` + workload + `}`, `are both named "s"`},
	} {
		d := t.TempDir()
		writeSweep(t, d, "s", "sim", "")
		writePlan(t, d, c.name, c.body)
		sweeps, err := LoadSweepFiles(d)
		require.NoError(t, err)
		plans, err := LoadPlanFiles(d)
		require.NoError(t, err)
		_, err = MakeMatrices(sweeps, plans, rm, MatrixOptions{})
		require.ErrorContains(t, err, filepath.Join(d, PlansDir, c.name+".json"))
		require.ErrorContains(t, err, c.want)
	}
	d := t.TempDir()
	writePlan(t, d, "a", `{"name": "b", "engine": "sim", "model": "m", `+workload+`}`)
	_, err = LoadPlanFiles(d)
	require.ErrorContains(t, err, `a.json: name "b": must be the file's base name "a"`)
}

// TestFindRunsInPlan: each pair of a plan's sweep directory that has a run
// directory is a run named <plan>/<server>/<bench>; a pair that never ran
// is left out.
func TestFindRunsInPlan(t *testing.T) {
	root := t.TempDir()
	sweepDir := filepath.Join(root, "result-p", "p", "run1", "p-20260101T000000Z")
	for _, d := range []string{"seqs16/isl256", "seqs32/isl256", "seqs64/isl256"} {
		require.NoError(t, os.MkdirAll(filepath.Join(sweepDir, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(sweepDir, "plan.json"), []byte(`{"name": "p", "model_config": "/elsewhere/config.json"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(sweepDir, "sweep.json"), []byte(`{"schema_version": 1, "pairs": [
		{"server": "seqs16", "bench": "isl256", "dir": "seqs16/isl256"},
		{"server": "seqs32", "bench": "isl256", "dir": "seqs32/isl256"},
		{"server": "seqs64", "bench": "isl256", "dir": "seqs64/isl256"}]}`), 0o644))
	for _, d := range []string{"seqs16/isl256", "seqs32/isl256"} {
		require.NoError(t, os.WriteFile(filepath.Join(sweepDir, d, "run.json"), []byte("{}"), 0o644))
	}
	runs, err := FindRuns(root)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	for i, server := range []string{"seqs16", "seqs32"} {
		require.Equal(t, RunDir{Sweep: "p/" + server + "/isl256", Repeat: "p-20260101T000000Z", Dir: filepath.Join(sweepDir, server, "isl256"),
			Plan: "p", Server: server, Bench: "isl256"}, runs[i])
	}

	require.NoError(t, os.WriteFile(filepath.Join(sweepDir, "plan.json"), []byte(`{}`), 0o644))
	_, err = FindRuns(root)
	require.ErrorContains(t, err, filepath.Join(sweepDir, "plan.json")+": no plan name")
}
