package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/profiling/plan"
)

// isPlanRun tells whether run's arguments ask for a sweep plan (--plan or
// --resume), which has flags of its own.
func isPlanRun(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && (name == "plan" || name == "resume") {
			return true
		}
	}
	return false
}

// runPlan runs a sweep plan: every kept pair of server and bench variants,
// each server variant's engine started once, into one sweep directory.
func runPlan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run --plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var serverEnv repeatFlag
	var (
		planPath     = fs.String("plan", "", "the sweep plan `FILE` (JSON; see docs/sweeps.md)")
		resume       = fs.String("resume", "", "complete the sweep in `SWEEP_DIR`: levels whose files are complete and valid are kept")
		dryRun       = fs.Bool("dry-run", false, "print the pairs, the engine commands and an estimate of the time; run nothing")
		failFast     = fs.Bool("fail-fast", false, "stop at the first pair that fails (default: record it and go on)")
		out          = fs.String("out", "sweeps", "`DIR` that receives one new sweep directory, <plan name>-<UTC time>")
		serverExe    = fs.String("server-exe", "", "the engine's executable (python3 for atom and sglang, vllm, the profile-model binary for sim)")
		port         = fs.Int("port", 0, "the engines' HTTP port (default 8000; sim: a free port)")
		timeScale    = fs.Float64("time-scale", 0, "sim: run this many times faster than the modelled GPU (default: the plan's)")
		readyTimeout = fs.Duration("ready-timeout", 0, "deadline for each engine to serve (default 30m)")
		force        = fs.Bool("force", false, "start even when another process holds GPU memory; with --resume, also replace the readme.md and charts of the sweep and its pairs edited since their report wrote them")
		gpuPrice     = fs.Float64("gpu-price", 0, "price of one GPU-hour in `USD`: each level's cost per million output tokens, and the frontier against cost")
	)
	fs.Var(&serverEnv, "server-env", "an environment variable `K=V` for every engine (repeat; a variant's own wins)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile-model run --plan FILE [--dry-run] [--fail-fast] [--out DIR]\n"+
			"       profile-model run --resume SWEEP_DIR [--dry-run] [--fail-fast]\n\n"+
			"Runs a sweep plan: each server variant's engine is started once and every bench variant it\n"+
			"pairs with runs against it, each pair into its own run directory under one sweep directory\n"+
			"(plan.json, sweep.json, readme.md with the Pareto frontier and what each server setting\n"+
			"changes in the kernels). A pair that fails is recorded and the sweep goes on.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("run: unexpected argument %q", fs.Arg(0))}
	}
	if (*planPath == "") == (*resume == "") {
		return usageError{"run: give --plan FILE for a new sweep or --resume SWEEP_DIR to complete one (its plan.json is the plan), not both"}
	}
	o := plan.RunOptions{
		Out: *out, Resume: *resume, FailFast: *failFast, ForceGPU: *force, Force: *force, ReadyTimeout: *readyTimeout,
		Tool: versionLine(), Log: stderr, BenchLog: stdout, Warn: stderr, Progress: progress(stderr),
	}
	o.Exe, o.Port, o.TimeScale, o.Corpus = *serverExe, *port, *timeScale, corpus.Find()
	o.GPUPrice = *gpuPrice
	if *timeScale < 0 {
		return usageError{"run: --time-scale must be positive"}
	}
	if *gpuPrice < 0 {
		return usageError{"run: --gpu-price must not be negative"}
	}
	if len(serverEnv) > 0 {
		o.Env = map[string]string{}
		for _, kv := range serverEnv {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return usageError{fmt.Sprintf("run: --server-env %q: want K=V", kv)}
			}
			o.Env[k] = v
		}
	}
	var p *plan.Plan
	if *planPath != "" {
		var err error
		if p, err = plan.Load(*planPath); err != nil {
			return fmt.Errorf("run: %w", err)
		}
	}
	if *dryRun {
		return plan.DryRun(stdout, p, o)
	}
	res, err := plan.Run(ctx, p, o)
	if err != nil {
		if res == nil {
			return fmt.Errorf("run: %w", err)
		}
		return fmt.Errorf("run: %w (sweep directory %s)", err, res.Dir)
	}
	fmt.Fprintf(stderr, "== sweep report: %s\n", res.Dir+"/"+plan.ReadmeFile)
	return nil
}

// reportSweep rewrites a sweep directory's readme.md, Pareto chart and
// per-setting diffs from its files.
func reportSweep(ctx context.Context, dir string, force bool, stdout io.Writer) error {
	if err := plan.WriteReport(ctx, dir, force); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(dir, plan.ReadmeFile))
	return nil
}
