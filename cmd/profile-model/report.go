package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/profile-model/profile-model/internal/dirlock"
	"github.com/profile-model/profile-model/profiling"
	"github.com/profile-model/profile-model/profiling/engine"
	"github.com/profile-model/profile-model/profiling/plan"
	"github.com/profile-model/profile-model/profiling/report"
)

// runReport regenerates a run directory's readme.md and charts.
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "the model's config.json `FILE` (default: the copy in the run directory, config.json)")
	peaks := fs.String("peaks", "", "GPU peaks `FILE` for the roofline (default: the built-in table; format: docs/roofline.md)")
	gpuPrice := fs.Float64("gpu-price", 0, "price of one GPU-hour in `USD` for the cost per million tokens (default: the run's --gpu-price)")
	cleanup := fs.Bool("cleanup", false, "when the run was killed and its engine still runs, stop the engine's process group")
	force := fs.Bool("force", false, "replace readme.md and the charts even when edited since the last report wrote them (report.sha256)")
	reanalyse := fs.Bool("reanalyse", false, "first analyse every level again from its traces on disk (levels/conc{N}/, run.json): a run interrupted before a level's analysis was done")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile-model report RUN_DIR [--config config.json] [--peaks FILE] [--force] [--cleanup] [--reanalyse]\n       profile-model report SWEEP_DIR\n\n"+
			"Writes RUN_DIR/readme.md and its SVG charts from the run directory alone (level results,\n"+
			"levels/conc{N}/analysis.json, run.json): the traces are not read again. Parts missing from\n"+
			"the directory are said in the report's warnings. A readme.md or chart edited since the last\n"+
			"report wrote it (report.sha256 keeps their hashes) is replaced only with --force. A sweep\n"+
			"directory (run --plan) gets its readme.md: the pairs and levels, the Pareto frontier\n"+
			"(pareto.svg) and the per-setting kernel diffs (diffs/).")
		fs.PrintDefaults()
	}
	var dirs []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return usageError{err.Error()}
		}
		if fs.NArg() == 0 {
			break
		}
		dirs = append(dirs, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(dirs) != 1 {
		fs.Usage()
		return usageError{fmt.Sprintf("report: want one run directory, got %d", len(dirs))}
	}
	dir := dirs[0]
	if *gpuPrice < 0 {
		return usageError{fmt.Sprintf("report: --gpu-price %v: give US dollars per GPU-hour", *gpuPrice)}
	}
	unlock, err := dirlock.Lock(dir, "report "+dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		// No such directory: reading it says so.
	case err != nil:
		return fmt.Errorf("report: %w", err)
	default:
		defer unlock()
	}
	if plan.IsSweep(dir) {
		if *reanalyse {
			return usageError{"report: --reanalyse takes a run directory (each pair of a sweep is one: report SWEEP_DIR/SERVER/BENCH --reanalyse)"}
		}
		return reportSweep(ctx, dir, *force, stdout)
	}
	if *reanalyse {
		if err := profiling.Reanalyse(ctx, dir, stderr); err != nil {
			return fmt.Errorf("report: --reanalyse: %w", err)
		}
	}
	if err := checkAbandoned(ctx, stderr, *cleanup, dir); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	rep, err := report.Build(dir, report.Options{ModelConfig: *config, Peaks: *peaks, Force: *force, GPUPrice: *gpuPrice})
	if err != nil {
		return err
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	for _, f := range rep.Files {
		fmt.Fprintf(stdout, "wrote %s\n", f)
	}
	return nil
}

// checkAbandoned notes the run directories among dirs that a killed run
// left "running" (marking them abandoned) and the engines they left
// behind, stopping those with cleanup.
func checkAbandoned(ctx context.Context, stderr io.Writer, cleanup bool, dirs ...string) error {
	for _, d := range dirs {
		msg, err := engine.Abandoned(ctx, d, cleanup)
		if err != nil {
			return err
		}
		if msg != "" {
			fmt.Fprintf(stderr, "note: %s\n", msg)
		}
	}
	return nil
}
