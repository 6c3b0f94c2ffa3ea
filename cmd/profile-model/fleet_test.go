package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/profiling/fleet"
)

// simTables are the per-layer tables the simulated fleet runs on: the
// committed goldens of the sim-minimax-m2.5 sweep (compatible format, one
// per batch size).
var simTables = []string{
	"../../fixtures/golden/sim-minimax-m2.5/conc4_layer.csv",
	"../../fixtures/golden/sim-minimax-m2.5/conc8_layer.csv",
	"../../fixtures/golden/sim-minimax-m2.5/conc16_layer.csv",
}

// slowMoE writes copies of the tables with every MoE expert GEMM kernel
// factor times slower, and returns their paths and the kernels' short
// names.
func slowMoE(t *testing.T, factor float64) ([]string, []string) {
	t.Helper()
	rules := inventory.DefaultRules()
	dir := t.TempDir()
	var out, slowed []string
	for _, p := range simTables {
		f, err := os.Open(p)
		require.NoError(t, err)
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		require.NoError(t, err)
		head := rows[0]
		col := func(name string) int {
			for i, h := range head {
				if h == name {
					return i
				}
			}
			t.Fatalf("%s: no column %s", p, name)
			return -1
		}
		kernel, short := col("kernel"), col("short_name")
		for _, r := range rows[1:] {
			if rules.Classify(r[kernel]).Category != "MoE expert GEMM" {
				continue
			}
			for _, c := range []string{"avg_us", "std_us", "min_us", "max_us"} {
				v, err := strconv.ParseFloat(r[col(c)], 64)
				require.NoError(t, err)
				r[col(c)] = strconv.FormatFloat(v*factor, 'f', 1, 64)
			}
			slowed = append(slowed, r[short])
		}
		dst := filepath.Join(dir, filepath.Base(p))
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		require.NoError(t, w.WriteAll(rows))
		require.NoError(t, os.WriteFile(dst, b.Bytes(), 0o644))
		out = append(out, dst)
	}
	require.NotEmpty(t, slowed, "the tables have MoE expert GEMM kernels")
	return out, slowed
}

// The simulated fleet's levels and the engine's batch limit. Kernel times
// are compared only between levels of the same decode batch size (the most
// common in the trace), so that must not depend on the client's timing:
// each level keeps twice the batch limit in flight, so the engine's own
// queue refills its batch in the step after a request ends. With no more
// in flight than the limit, the batch is full only while every client has
// sent its next request, and a client late by a few steps on a loaded
// machine made the most common batch one short.
var simLevels = [2]int{8, 16}

const simMaxSeqs = 4

// simSweepRun runs the simulated engine on the tables into
// root/<sweep>/<run>, the layout the fleet's jobs keep: 4 layers at a
// quarter of real speed, at the levels simLevels.
func simSweepRun(t *testing.T, root, sweep string, tables []string) {
	t.Helper()
	require.NoError(t, simSweepRunErr(t, root, sweep, tables))
}

// simSweepRuns runs n repeats of simSweepRun at once.
func simSweepRuns(t *testing.T, n int, root, sweep string, tables []string) {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = simSweepRunErr(t, root, sweep, tables) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
}

func simSweepRunErr(t *testing.T, root, sweep string, tables []string) error {
	args := append([]string{"run", "--conc", fmt.Sprintf("%d,%d", simLevels[0], simLevels[1]), "--isl", "256", "--osl", "16",
		"--num-prompts-mul", "2", "--max-num-seqs", strconv.Itoa(simMaxSeqs),
		"--time-scale", "0.25", "--tokenizer", "none", "--seed", "1",
		"--server-arg=--layers", "--server-arg=4", "--server-arg=--kernels", "--server-arg=" + strings.Join(tables, ","),
		"--out", filepath.Join(root, sweep)}, simArgs(t)...)
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		return fmt.Errorf("%w\n%s", err, stderr.String())
	}
	return nil
}

// TestRegressSimMoE: the merge job's engine on two sets of sim sweep
// results. A 30% slower MoE expert GEMM over four repeats a side is a
// regression naming the sweep, each level, the kernel and the U test's
// p-value, with a failing exit; one run of the same tables is none. The client thresholds are off here: on a shared machine the
// client's timings of runs this short vary by more than 5% between runs,
// while the kernel times come from the traces, in full-scale GPU time.
func TestRegressSimMoE(t *testing.T) {
	t.Parallel()
	base, same, slow := t.TempDir(), t.TempDir(), t.TempDir()
	slowTables, slowed := slowMoE(t, 1.3)
	simSweepRuns(t, 4, base, "sim-moe", simTables) // four repeats: the least with which p < 0.05 is possible
	simSweepRun(t, same, "sim-moe", simTables)
	simSweepRuns(t, 4, slow, "sim-moe", slowTables)
	kernelOnly := []string{"--throughput-drop", "-1", "--latency-rise", "-1"}

	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"regress", base, same}, kernelOnly...), &stdout, &stderr)
	require.NoError(t, err, "%s%s", stdout.String(), stderr.String())
	require.Contains(t, stdout.String(), "No regression")
	require.Contains(t, stdout.String(), "2 levels compared")

	stdout.Reset()
	stderr.Reset()
	rerun := filepath.Join(t.TempDir(), "rerun.txt")
	err = run(context.Background(), append([]string{"regress", "--json", "--rerun-file", rerun, base, slow}, kernelOnly...), &stdout, &stderr)
	require.ErrorIs(t, err, errSilent, stdout.String())
	require.Contains(t, stderr.String(), "regressions in 1 sweeps")
	requireMoEFindings(t, stdout.Bytes(), "sim-moe", slowed)
	data, err := os.ReadFile(rerun)
	require.NoError(t, err)
	require.Equal(t, "sim-moe\n", string(data))

	// The Markdown names the same, and how to re-run the sweep.
	stdout.Reset()
	err = run(context.Background(), append([]string{"regress", base, slow}, kernelOnly...), &stdout, &stderr)
	require.ErrorIs(t, err, errSilent)
	md := stdout.String()
	for _, c := range simLevels {
		require.Regexp(t, fmt.Sprintf(`\| sim-moe \| %d \| kernel \| moe-expert-gemm-us/layer \|.*\| p=0\.0\d\d n=4\+4 \|`, c), md)
	}
	require.Contains(t, md, fmt.Sprintf("* sim-moe, levels %d, %d:", simLevels[0], simLevels[1]))

	// merge: one summary of the repeats, and a benchmark file that
	// benchstat reads, named as BenchmarkSweep names its levels.
	out := t.TempDir()
	stdout.Reset()
	require.NoError(t, run(context.Background(), []string{"merge", "--out", out, base}, &stdout, &stderr))
	for _, c := range simLevels {
		require.Contains(t, stdout.String(), fmt.Sprintf("| sim-moe | sim | %d | 4/0 |", c))
	}
	rs, err := results.LoadBench(filepath.Join(out, "bench.txt"))
	require.NoError(t, err)
	require.Len(t, rs, 8, "two levels of four repeats")
	require.True(t, strings.HasPrefix(rs[0].Name, "Sweep/sweep=sim-moe/model=MiniMaxAI_MiniMax-M2.5/isl=256/osl=16/conc="), rs[0].Name)
	var s fleet.Summary
	data, err = os.ReadFile(filepath.Join(out, "fleet.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &s))
	require.Len(t, s.Sweeps, 1)
	require.Len(t, s.Sweeps[0].Runs, 4)
}

// requireMoEFindings: regress --json printed kernel findings of the
// sweep only, each the MoE expert GEMM category (about the 30% put in) or
// the whole layer (when the category's share lifts it beyond 10% too),
// naming a slowed kernel that rose, at both levels of simLevels.
func requireMoEFindings(t *testing.T, out []byte, sweep string, slowed []string) {
	t.Helper()
	var rep fleet.Regression
	require.NoError(t, json.Unmarshal(out, &rep))
	moe := fleet.CategoryUnit("MoE expert GEMM")
	levels := map[int]bool{}
	for _, f := range rep.Findings {
		require.Equal(t, sweep, f.Sweep, "%+v", f)
		require.Equal(t, "kernel", f.Kind)
		require.Contains(t, []string{moe, fleet.LayerUnit}, f.Unit, "%+v", f)
		require.Contains(t, slowed, f.Kernel, "the kernel named is one of those slowed: %+v", f)
		require.NotNil(t, f.KernelUS)
		require.Greater(t, f.KernelUS[1]/f.KernelUS[0], 1.1, "the kernel named rose: %+v", f)
		if f.Unit == moe {
			require.InDelta(t, 30, f.Pct, 8, "about the 30%% put in: %+v", f)
			levels[f.Conc] = true
		}
	}
	require.Equal(t, map[int]bool{simLevels[0]: true, simLevels[1]: true}, levels, "the MoE expert GEMM regressed at both levels; notes: %v", rep.Notes)
}

func TestFleetUsageErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"matrix"}, "want one sweeps folder"},
		{[]string{"matrix", "--max-per-matrix", "300", "x"}, "--max-per-matrix 300"},
		{[]string{"matrix", "--count", "0", "x"}, "--count 0"},
		{[]string{"merge"}, "give the folders"},
		{[]string{"regress", "a"}, "want BASELINE and RESULTS"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), c.args, &stdout, &stderr)
		var u usageError
		require.ErrorAs(t, err, &u, "%v", c.args)
		require.Contains(t, err.Error(), c.want)
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"merge", t.TempDir()}, &stdout, &stderr)
	require.ErrorContains(t, err, "no run directories (run.json)")
}

// TestMatrixCommands: the repository's matrix has one job per sweep and
// plan, and each job's command is valid bash that calls profile-model
// commands and flags that exist.
func TestMatrixCommands(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"matrix", "../../fixtures/sweeps"}, &stdout, &stderr), stderr.String())
	var m fleet.Matrices
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &m))
	sweeps, err := fleet.LoadSweepFiles("../../fixtures/sweeps")
	require.NoError(t, err)
	plans, err := fleet.LoadPlanFiles("../../fixtures/sweeps")
	require.NoError(t, err)
	require.Equal(t, len(sweeps), m.Sweeps)
	require.Equal(t, len(plans), m.Plans)
	commands := commandFlags()
	n := 0
	for _, mx := range m.Matrices {
		for _, e := range mx.Include {
			n++
			require.NotEmpty(t, e.Command, e.Sweep)
			require.Empty(t, errors.Join(checkScript(e.Command, commands)...), e.Sweep)
		}
	}
	require.Equal(t, len(sweeps)+len(plans), n)
}

// simPlan writes a plan of the simulated engine on the tables: two
// server settings, "ref" on simTables and "tuned" on tuned, one workload
// at the levels simLevels (the engine as in simSweepRun, its batch full
// at every level whatever the client's timing). It returns the sweeps folder.
func simPlan(t *testing.T, tuned []string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sweeps")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, fleet.PlansDir), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(dir), "runners.json"),
		[]byte(`{"sim": {"labels": ["ubuntu-latest"], "timeout_minutes": 30}, "gpus": {"G": {"labels": ["self-hosted", "g"], "timeout_minutes": 60}}}`), 0o644))
	p := map[string]any{
		"name": "sim-moe-plan", "engine": "sim", "model": "MiniMaxAI/MiniMax-M2.5", "time_scale": 0.25,
		"server_args": []string{"--layers", "4", "--seed", "1"}, "max_num_seqs": simMaxSeqs,
		"servers": []map[string]any{
			{"name": "ref", "args": []string{"--kernels", absJoin(t, simTables)}},
			{"name": "tuned", "args": []string{"--kernels", absJoin(t, tuned)}},
		},
		"benches": []map[string]any{{"name": "isl256-osl16", "isl": 256, "osl": 16, "concurrencies": simLevels[:], "num_prompts_mul": 2}},
		"warmups": 0, "seed": 1,
	}
	data, err := json.Marshal(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, fleet.PlansDir, "sim-moe-plan.json"), data, 0o644))
	return dir
}

// absJoin joins the absolute paths of files with commas: the jobs run
// from the repository root.
func absJoin(t *testing.T, files []string) string {
	t.Helper()
	var out []string
	for _, f := range files {
		a, err := filepath.Abs(f)
		require.NoError(t, err)
		out = append(out, a)
	}
	return strings.Join(out, ",")
}

// runMatrixJobs runs the command of every job of the matrix of the
// sweeps folder as the workflow does (bash, from the repository root,
// profile-model on the PATH: here this test binary), count repeats each,
// keeping the results under results.
func runMatrixJobs(t *testing.T, sweeps, results string, count int) []fleet.Entry {
	t.Helper()
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"matrix", "--count", strconv.Itoa(count), sweeps}, &stdout, &stderr), stderr.String())
	var m fleet.Matrices
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &m))
	exe, err := os.Executable()
	require.NoError(t, err)
	bin := t.TempDir()
	// No fork while the script is open for writing: a child forked then
	// by a parallel test would hold it open, and running it meanwhile
	// fails with "text file busy".
	syscall.ForkLock.RLock()
	err = os.WriteFile(filepath.Join(bin, "profile-model"), []byte("#!/bin/sh\nexec "+strconv.Quote(exe)+" \"$@\"\n"), 0o755)
	syscall.ForkLock.RUnlock()
	require.NoError(t, err)
	var entries []fleet.Entry
	for _, mx := range m.Matrices {
		for _, e := range mx.Include {
			cmd := exec.Command("bash", "-o", "pipefail", "-c", e.Command)
			cmd.Dir = "../.."
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "PROFILE_MODEL_TEST_MAIN=1",
				"COUNT="+strconv.Itoa(count), "PROFILE_MODEL_KEEP_RUNS="+results)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "job %s: %s\n%s", e.Sweep, e.Command, out)
			entries = append(entries, e)
		}
	}
	return entries
}

// TestRegressSimPlan: a server-setting plan through the fleet: matrix,
// the job's command, merge and regress. A 30% slower MoE expert GEMM in
// one setting is a regression naming the plan, that setting, each level
// and the kernel, with a failing exit; the same tables again are none.
func TestRegressSimPlan(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not on PATH: the jobs' commands cannot run")
	}
	slowTables, slowed := slowMoE(t, 1.3)
	base, slow := t.TempDir(), t.TempDir()
	entries := runMatrixJobs(t, simPlan(t, simTables), base, 2) // two repeats: medians
	require.Len(t, entries, 1)
	e := entries[0]
	require.Equal(t, "sim-moe-plan", e.Sweep)
	require.False(t, e.NeedsGPU)
	require.Equal(t, []string{"ubuntu-latest"}, e.RunsOn)
	require.Equal(t, 2, e.Pairs)
	require.Equal(t, 4, e.Levels)
	runMatrixJobs(t, simPlan(t, slowTables), slow, 1)
	// This test is of the plan's way through the fleet, with too few
	// repeats for the U test (TestRegressSimMoE covers it): --alpha 0
	// judges on the thresholds alone.
	kernelOnly := []string{"--throughput-drop", "-1", "--latency-rise", "-1", "--alpha", "0"}

	// The baseline's two repeats, each a run of the same tables: no
	// regression between them.
	var stdout, stderr bytes.Buffer
	repeat := func(k string) string { return filepath.Join(base, "sim-moe-plan", k) }
	err := run(context.Background(), append([]string{"regress", repeat("run1"), repeat("run2")}, kernelOnly...), &stdout, &stderr)
	require.NoError(t, err, "%s%s", stdout.String(), stderr.String())
	require.Contains(t, stdout.String(), "No regression")
	require.Contains(t, stdout.String(), "4 levels compared", "two settings × two levels")

	stdout.Reset()
	stderr.Reset()
	rerun := filepath.Join(t.TempDir(), "rerun.txt")
	err = run(context.Background(), append([]string{"regress", "--json", "--rerun-file", rerun, base, slow}, kernelOnly...), &stdout, &stderr)
	require.ErrorIs(t, err, errSilent, stdout.String())
	// Only the slowed setting's pair regressed.
	const pair = "sim-moe-plan/tuned/isl256-osl16"
	requireMoEFindings(t, stdout.Bytes(), pair, slowed)
	data, err := os.ReadFile(rerun)
	require.NoError(t, err)
	require.Equal(t, "sim-moe-plan\n", string(data), "the job to re-run is the plan's")

	stdout.Reset()
	err = run(context.Background(), append([]string{"regress", base, slow}, kernelOnly...), &stdout, &stderr)
	require.ErrorIs(t, err, errSilent)
	md := stdout.String()
	for _, c := range simLevels {
		require.Contains(t, md, fmt.Sprintf("| %s | %d | kernel | moe-expert-gemm-us/layer |", pair, c))
	}
	require.Contains(t, md, fmt.Sprintf("* %s, levels %d, %d: `profile-model run --plan fixtures/sweeps/plans/sim-moe-plan.json", pair, simLevels[0], simLevels[1]))
	require.NotContains(t, md, "sim-moe-plan/ref/")

	// merge names each pair, with its repeats.
	out := t.TempDir()
	stdout.Reset()
	require.NoError(t, run(context.Background(), []string{"merge", "--out", out, base}, &stdout, &stderr))
	for _, s := range []string{"ref", "tuned"} {
		for _, c := range simLevels {
			require.Contains(t, stdout.String(), fmt.Sprintf("| sim-moe-plan/%s/isl256-osl16 | sim | %d | 2/0 |", s, c))
		}
	}
	rs, err := results.LoadBench(filepath.Join(out, "bench.txt"))
	require.NoError(t, err)
	require.Len(t, rs, 8, "two settings, two levels, two repeats")
	require.True(t, strings.HasPrefix(rs[0].Name, "Sweep/plan=sim-moe-plan/server=ref/bench=isl256-osl16/model=MiniMaxAI_MiniMax-M2.5/isl=256/osl=16/conc="), rs[0].Name)
}
