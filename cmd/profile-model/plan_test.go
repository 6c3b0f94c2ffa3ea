package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/dirlock"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/plan"
)

// The sweeps below run one at a time, not in parallel with the package's
// other tests: they keep several simulated engines busy, and the tests
// that read a decode batch off a trace need the client to keep up.

// planSimArgs make run --plan start this test binary as the simulated
// engine, a hundred times faster than the GPU time it models.
func planSimArgs(t *testing.T) []string {
	exe, err := os.Executable()
	require.NoError(t, err)
	return []string{"--server-exe", exe, "--server-env", "PROFILE_MODEL_TEST_MAIN=1", "--time-scale", "50"}
}

func loadIndex(t *testing.T, dir string) *plan.Index {
	t.Helper()
	x, err := plan.LoadIndex(plan.IndexFile(dir))
	require.NoError(t, err)
	return x
}

func pairStatuses(x *plan.Index) map[string]string {
	out := map[string]string{}
	for _, e := range x.Pairs {
		out[e.Name()] = e.Status
		for _, l := range e.Levels {
			out[e.Name()+"@"+strconv.Itoa(l.Conc)] = l.Status
		}
	}
	return out
}

// TestPlanSim runs the simulated plan of fixtures/sweeps/plans end to end,
// then resumes it twice: complete (nothing runs), and with one level file
// corrupted and one level's analysis gone (only those two levels run).
func TestPlanSim(t *testing.T) {
	out := t.TempDir()
	planFile := filepath.Join("..", "..", "fixtures", "sweeps", "plans", "sim-server-settings.json")
	var stdout, stderr bytes.Buffer
	args := append([]string{"run", "--plan", planFile, "--out", out, "--gpu-price", "2"}, planSimArgs(t)...)
	require.NoError(t, run(context.Background(), args, &stdout, &stderr), stderr.String())
	dir := onlyDir(t, out)
	require.FileExists(t, plan.PlanFile(dir))
	p, err := plan.Load(plan.PlanFile(dir))
	require.NoError(t, err, "plan.json reads back as a plan")
	x := loadIndex(t, dir)
	require.Equal(t, plan.StatusOK, x.Status)
	require.Len(t, x.Pairs, 3)
	for _, e := range x.Pairs {
		require.Equal(t, plan.StatusOK, e.Status, e.Name())
		require.Len(t, e.Levels, 3)
		// Each pair is an ordinary run directory, its run.json naming the
		// real engine and its settings.
		info, err := results.LoadRunInfo(results.Run(filepath.Join(dir, e.Dir)).RunInfo())
		require.NoError(t, err)
		require.Equal(t, "ok", info.Status)
		require.Equal(t, "sim", info.Engine.Kind)
		require.Contains(t, info.Engine.Command, "serve-sim")
		require.Equal(t, []int{8, 16, 32}, info.Sweep.Concurrencies)
		require.Len(t, info.Levels, 3)
		for _, sv := range p.Servers {
			if sv.Name == e.Server {
				require.Equal(t, sv.MaxNumSeqs, info.Engine.MaxNumSeqs)
				require.Equal(t, sv.CaptureSizes, info.Engine.CaptureSizes)
			}
		}
		rows, err := results.LoadSummary(results.Run(filepath.Join(dir, e.Dir)).Summary())
		require.NoError(t, err)
		require.Len(t, rows, 3)
		require.FileExists(t, results.Run(filepath.Join(dir, e.Dir)).Readme())
	}
	for _, s := range x.Servers {
		require.Equal(t, 1, s.Starts, "server %s started once for its pairs", s.Name)
	}
	readme, err := os.ReadFile(filepath.Join(dir, plan.ReadmeFile))
	require.NoError(t, err)
	for _, want := range []string{"## Pareto frontier", "![Pareto frontier](pareto.svg)", "### max_num_seqs: 16 → 32", "### cudagraph_capture_sizes: (engine default) → [1 2 4 8 24]", "* **conc 32**"} {
		require.Contains(t, string(readme), want)
	}
	svg, err := os.ReadFile(filepath.Join(dir, plan.ParetoChart))
	require.NoError(t, err)
	require.Contains(t, string(svg), "<svg")
	require.Contains(t, string(svg), "seqs16@8", "points are labelled server@conc (one bench variant)")
	require.FileExists(t, filepath.Join(dir, plan.DiffsDir, "seqs16-vs-seqs32.isl256-osl32.md"))
	// The simulated engine's GPUs were sampled: throughput per GPU against
	// tokens per joule beside the frontier.
	require.Contains(t, string(readme), "## Energy\n\n![Throughput per GPU against tokens per joule](energy.svg)")
	require.Contains(t, string(readme), "Most output tokens per joule: ")
	esvg, err := os.ReadFile(filepath.Join(dir, plan.EnergyChart))
	require.NoError(t, err)
	require.Contains(t, string(esvg), "output tokens per joule (the server")
	// Priced at $2 per GPU-hour: the frontier's levels against cost, each
	// figure its level's GPU-hours over its output tokens.
	_, costPart, ok := strings.Cut(string(readme), "## Cost\n\n")
	require.True(t, ok, "a Cost section")
	require.Contains(t, costPart, "![Cost per million output tokens against speed per user](cost.svg)")
	costRows := 0
	for _, line := range strings.Split(costPart, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 4 || !strings.Contains(cells[0], "/") || cells[0] == "pair" {
			continue
		}
		server, _, _ := strings.Cut(cells[0], "/")
		conc, err := strconv.Atoi(cells[1])
		require.NoError(t, err)
		l, err := results.LoadLevel(results.Run(filepath.Join(dir, server, "isl256-osl32")).LevelResult(conc))
		require.NoError(t, err)
		require.Equal(t, strconv.FormatFloat(2*l.DurationS/3600/float64(l.TotalOutputTokens)*1e6, 'f', 4, 64), cells[3], line)
		costRows++
	}
	require.Positive(t, costRows)
	require.FileExists(t, filepath.Join(dir, plan.CostChart))

	// Resumed complete: nothing runs, no engine starts.
	stderr.Reset()
	require.NoError(t, run(context.Background(), append([]string{"run", "--resume", dir}, planSimArgs(t)...), &stdout, &stderr), stderr.String())
	require.NotContains(t, stderr.String(), "starting sim")
	require.Equal(t, 9, skippedLevels(stderr.String()), stderr.String())

	// One level file cut short, one level's analysis gone: those two run
	// again, each against its own server variant; the third is not started.
	cut := results.Run(filepath.Join(dir, "seqs32", "isl256-osl32")).LevelResult(16)
	data, err := os.ReadFile(cut)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cut, data[:len(data)/2], 0o644))
	require.NoError(t, os.Remove(results.Run(filepath.Join(dir, "seqs32-graphs24", "isl256-osl32")).LevelAnalysis(32)))
	stderr.Reset()
	require.NoError(t, run(context.Background(), append([]string{"run", "--resume", dir}, planSimArgs(t)...), &stdout, &stderr), stderr.String())
	log := stderr.String()
	require.Equal(t, 7, skippedLevels(log), log)
	require.Contains(t, log, "seqs32/isl256-osl32 conc 16: ")
	require.Contains(t, log, "seqs32-graphs24/isl256-osl32 conc 32: analysis: ")
	require.NotContains(t, log, "seqs16: starting sim")
	require.Contains(t, log, "== seqs32/isl256-osl32: levels [16]")
	require.Contains(t, log, "== seqs32-graphs24/isl256-osl32: levels [32]")
	x = loadIndex(t, dir)
	require.Equal(t, plan.StatusOK, x.Status)
	starts := map[string]int{}
	for _, s := range x.Servers {
		starts[s.Name] = s.Starts
	}
	require.Equal(t, map[string]int{"seqs16": 1, "seqs32": 2, "seqs32-graphs24": 2}, starts)
	for _, e := range x.Pairs {
		require.Equal(t, plan.StatusOK, e.Status, e.Name())
	}
	require.FileExists(t, filepath.Join(dir, "seqs32", "server.log.1"), "the first start's log is kept")

	// report SWEEP_DIR rewrites the sweep's readme from its files alone.
	before, err := os.ReadFile(filepath.Join(dir, plan.ReadmeFile))
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(dir, plan.ReadmeFile)))
	stdout.Reset()
	require.NoError(t, run(context.Background(), []string{"report", dir}, &stdout, &stderr))
	require.Equal(t, "wrote "+filepath.Join(dir, plan.ReadmeFile)+"\n", stdout.String())
	after, err := os.ReadFile(filepath.Join(dir, plan.ReadmeFile))
	require.NoError(t, err)
	require.Equal(t, string(before), string(after))

	// Hand edits survive: run --resume (before any engine starts) and
	// report SWEEP_DIR refuse to replace an edited pair or sweep readme
	// without --force (both once replaced them).
	pairReadme := results.Run(filepath.Join(dir, "seqs32", "isl256-osl32")).Readme()
	sweepReadme := filepath.Join(dir, plan.ReadmeFile)
	edited := map[string]string{}
	for _, p := range []string{pairReadme, sweepReadme} {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		edited[p] = string(data) + "\nMy notes.\n"
		require.NoError(t, os.WriteFile(p, []byte(edited[p]), 0o644))
	}
	require.NoError(t, os.Remove(results.Run(filepath.Join(dir, "seqs32", "isl256-osl32")).LevelAnalysis(8)))
	stderr.Reset()
	err = run(context.Background(), append([]string{"run", "--resume", dir}, planSimArgs(t)...), &stdout, &stderr)
	require.ErrorContains(t, err, pairReadme+" was edited since the report wrote it")
	require.ErrorContains(t, err, sweepReadme+" was edited since the report wrote it")
	require.ErrorContains(t, err, "--force")
	require.NotContains(t, stderr.String(), "starting sim")
	err = run(context.Background(), []string{"report", dir}, &stdout, &stderr)
	require.ErrorContains(t, err, sweepReadme+" was edited since the report wrote it")
	for p, want := range edited {
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, want, string(got), "%s kept", p)
	}
	require.NoError(t, run(context.Background(), append([]string{"run", "--resume", dir, "--force"}, planSimArgs(t)...), &stdout, &stderr), stderr.String())
	for p, want := range edited {
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NotEqual(t, want, string(got), "%s replaced with --force", p)
	}
}

var batchPrefix = regexp.MustCompile(`/conc\d+_`)

// skippedLevels counts the levels a resumed sweep said it skipped.
func skippedLevels(log string) int {
	return len(regexp.MustCompile(`(?m)^== \S+ conc \d+: complete and valid on disk: skipped$`).FindAllString(log, -1))
}

// writePlan writes a small plan for the sim into a temporary file.
func writePlan(t *testing.T, doc string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o644))
	return path
}

const smallPlanHead = `"engine": "sim", "model": "MiniMaxAI/MiniMax-M2.5", "isl": 64, "osl": 8, "random_range_ratio": 1, "concurrencies": [1, 2, 4], "num_prompts_mul": 2, "warmups": 1, "seed": 5,
  "server_args": ["--layers", "2", "--trace-python-per-step", "-1"]`

// cancelOn is a writer that calls cancel once what was written holds mark.
type cancelOn struct {
	mu     sync.Mutex
	b      bytes.Buffer
	mark   string
	cancel func()
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.b.Write(p)
	if c.cancel != nil && strings.Contains(c.b.String(), c.mark) {
		c.cancel()
		c.cancel = nil
	}
	return len(p), nil
}

// sweepShape is what a sweep directory holds, up to times and measured
// figures: its files (the traces and engine logs aside; the conc{bs}_
// prefix of the analysis files is the measured decode batch), the status
// of each pair and level, and each pair's levels in run.json.
func sweepShape(t *testing.T, dir string) (files []string, statuses map[string]string, levels map[string][]string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() && d.Name() == "traces" {
			return filepath.SkipDir
		}
		if !d.IsDir() && !strings.HasPrefix(d.Name(), "server.log") {
			files = append(files, batchPrefix.ReplaceAllString(rel, "/concBS_"))
		}
		return nil
	}))
	x := loadIndex(t, dir)
	levels = map[string][]string{}
	for _, e := range x.Pairs {
		info, err := results.LoadRunInfo(results.Run(filepath.Join(dir, e.Dir)).RunInfo())
		require.NoError(t, err)
		for _, l := range info.Levels {
			levels[e.Name()] = append(levels[e.Name()], strconv.Itoa(l.Conc)+" "+l.Status+" "+batchPrefix.ReplaceAllString(strings.Join(l.Files, ","), "/concBS_"))
		}
	}
	return files, pairStatuses(x), levels
}

// TestPlanInterruptResume: a sweep interrupted during its second server
// variant, then resumed, runs only the missing levels and ends as an
// uninterrupted sweep of the same plan does.
func TestPlanInterruptResume(t *testing.T) {
	planFile := writePlan(t, `{"name": "small", `+smallPlanHead+`,
	  "servers": [{"name": "s1", "max_num_seqs": 4}, {"name": "s2", "max_num_seqs": 2}]}`)
	whole := t.TempDir()
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), append([]string{"run", "--plan", planFile, "--out", whole}, planSimArgs(t)...), &stdout, &stderr), stderr.String())

	cut := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &cancelOn{mark: "== s2/default conc 2 (", cancel: cancel}
	err := run(ctx, append([]string{"run", "--plan", planFile, "--out", cut}, planSimArgs(t)...), &stdout, log)
	require.ErrorContains(t, err, "interrupted during s2/default")
	dir := onlyDir(t, cut)
	x := loadIndex(t, dir)
	require.Equal(t, plan.StatusInterrupted, x.Status)
	st := pairStatuses(x)
	require.Equal(t, plan.StatusOK, st["s1/default"])
	require.Equal(t, plan.StatusInterrupted, st["s2/default"])
	require.Equal(t, "ok", st["s2/default@1"])
	require.NotEqual(t, "ok", st["s2/default@2"])

	stderr.Reset()
	require.NoError(t, run(context.Background(), append([]string{"run", "--resume", dir}, planSimArgs(t)...), &stdout, &stderr), stderr.String())
	resumed := stderr.String()
	require.Equal(t, 4, skippedLevels(resumed), resumed)
	require.Contains(t, resumed, "== s2/default: levels [2 4]")
	require.NotContains(t, resumed, "s1: starting")

	wantFiles, wantStatus, wantLevels := sweepShape(t, onlyDir(t, whole))
	gotFiles, gotStatus, gotLevels := sweepShape(t, dir)
	require.Equal(t, wantFiles, gotFiles)
	require.Equal(t, wantStatus, gotStatus)
	require.Equal(t, wantLevels, gotLevels)
}

// TestPlanFailedPair: an engine that never serves and one that crashes
// are recorded as failed pairs and the sweep goes on; --fail-fast stops
// at the first.
func TestPlanFailedPair(t *testing.T) {
	planFile := writePlan(t, `{"name": "faults", `+strings.Replace(smallPlanHead, "[1, 2, 4]", "[1, 2]", 1)+`,
	  "servers": [{"name": "never", "args": ["--never-ready"]}, {"name": "crash", "args": ["--crash-after-requests", "3"]}, {"name": "good"}]}`)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"run", "--plan", planFile, "--out", out, "--ready-timeout", "6s"}, planSimArgs(t)...), &stdout, &stderr)
	require.ErrorContains(t, err, "2 of 3 pairs failed")
	dir := onlyDir(t, out)
	x := loadIndex(t, dir)
	require.Equal(t, plan.StatusFailed, x.Status)
	byName := map[string]plan.PairEntry{}
	for _, e := range x.Pairs {
		byName[e.Name()] = e
	}
	require.Equal(t, plan.StatusFailed, byName["never/default"].Status)
	require.Contains(t, byName["never/default"].Error, "never")
	require.Equal(t, plan.StatusFailed, byName["crash/default"].Status)
	require.Contains(t, byName["crash/default"].Error, "the engine exited")
	require.Equal(t, plan.StatusOK, byName["good/default"].Status, "the sweep went on")
	readme, err := os.ReadFile(filepath.Join(dir, plan.ReadmeFile))
	require.NoError(t, err)
	require.Contains(t, string(readme), "* never/default failed: ")

	out = t.TempDir()
	err = run(context.Background(), append([]string{"run", "--plan", planFile, "--out", out, "--ready-timeout", "6s", "--fail-fast"}, planSimArgs(t)...), &stdout, &stderr)
	require.ErrorContains(t, err, "1 of 3 pairs failed")
	st := pairStatuses(loadIndex(t, onlyDir(t, out)))
	require.Equal(t, []string{plan.StatusFailed, plan.StatusSkipped, plan.StatusSkipped}, []string{st["never/default"], st["crash/default"], st["good/default"]})
}

func TestPlanDryRunAndUsage(t *testing.T) {
	t.Parallel()
	planFile := filepath.Join("..", "..", "fixtures", "sweeps", "plans", "sim-server-settings.json")
	var stdout, stderr bytes.Buffer
	out := t.TempDir()
	require.NoError(t, run(context.Background(), []string{"run", "--plan", planFile, "--dry-run", "--out", out}, &stdout, &stderr))
	got := stdout.String()
	require.Contains(t, got, "3 server × 1 bench variants: 3 pairs")
	require.Contains(t, got, "serve-sim --model MiniMaxAI/MiniMax-M2.5")
	require.Contains(t, got, "--cudagraph-capture-sizes '[1,2,4,8,24]'")
	require.Contains(t, got, "pair seqs32/isl256-osl32")
	require.Regexp(t, `estimate: about \S+ for 9 levels and 3 engine starts`, got)
	entries, _ := os.ReadDir(out)
	require.Empty(t, entries, "a dry run writes nothing")

	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"neither", []string{"--plan", ""}, "give --plan FILE"},
		{"both", []string{"--plan", planFile, "--resume", out}, "not both"},
		{"resume a run directory", []string{"--resume", out}, "not a sweep directory"},
		{"unknown field", []string{"--plan", writePlan(t, `{"name": "x", "engine": "sim", "model": "m", "isl": 1, "osl": 1, "concurrencies": [1], "serverz": []}`)}, `"serverz"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), append([]string{"run"}, tt.args...), &stdout, &stderr)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// TestPlanResumeLocked: a second resume of a sweep that a process is
// writing refuses at once, naming the holder, and changes nothing (two
// resumes once both ran and left sweep.json inconsistent); report too.
func TestPlanResumeLocked(t *testing.T) {
	planFile := writePlan(t, `{"name": "small", `+smallPlanHead+`}`)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), append([]string{"run", "--plan", planFile, "--out", out}, planSimArgs(t)...), &stdout, &stderr), stderr.String())
	dir := onlyDir(t, out)
	before, err := os.ReadFile(plan.IndexFile(dir))
	require.NoError(t, err)
	unlock, err := dirlock.Lock(dir, "run --resume "+dir)
	require.NoError(t, err)
	defer unlock()
	for _, args := range [][]string{append([]string{"run", "--resume", dir}, planSimArgs(t)...), {"report", dir}} {
		err = run(context.Background(), args, &stdout, &stderr)
		require.ErrorIs(t, err, dirlock.ErrHeld, "%v", args)
		require.ErrorContains(t, err, fmt.Sprintf("pid %d", os.Getpid()))
		require.ErrorContains(t, err, "profile-model run --resume "+dir)
	}
	after, err := os.ReadFile(plan.IndexFile(dir))
	require.NoError(t, err)
	require.Equal(t, string(before), string(after), "sweep.json untouched")
	unlock()
	require.NoError(t, run(context.Background(), append([]string{"run", "--resume", dir}, planSimArgs(t)...), &stdout, &stderr), stderr.String())
}
