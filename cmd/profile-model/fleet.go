package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/engine"
	"github.com/profile-model/profile-model/profiling/fleet"
)

// runMatrix prints the CI job matrices of the declared sweeps and plans.
func runMatrix(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runnerMap := fs.String("runner-map", "", "runner map `FILE`: runs-on labels per GPU and for the simulated engine (default: runners.json beside the sweeps folder)")
	only := fs.String("only", "", "comma-separated `NAMES` of sweeps and plans to include (default: all)")
	simOnly := fs.Bool("sim-only", false, "only the sweeps and plans that need no GPU (the simulated engine's): the check of every change on GitHub-hosted runners")
	per := fs.Int("max-per-matrix", fleet.MaxJobsPerMatrix, "most jobs in one matrix (GitHub's limit is 256)")
	count := fs.Int("count", 1, "repeats each job runs: a plan's timeout covers them")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile-model matrix [--runner-map FILE] [--only NAMES] [--sim-only] [--max-per-matrix N] [--count N] SWEEPS_DIR\n\n"+
			"Prints the GitHub Actions job matrices of the sweep declarations in SWEEPS_DIR and of the server-setting\n"+
			"plans in SWEEPS_DIR/plans as JSON: one include entry per sweep or plan (runs-on labels of its GPU,\n"+
			"timeout, the command the job runs), split into several matrices beyond --max-per-matrix entries.\n"+
			"Those of the simulated engine have needs_gpu false.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return usageError{fmt.Sprintf("matrix: want one sweeps folder, got %d arguments", fs.NArg())}
	}
	if *per < 1 || *per > fleet.MaxJobsPerMatrix {
		return usageError{fmt.Sprintf("matrix: --max-per-matrix %d: give 1 to %d", *per, fleet.MaxJobsPerMatrix)}
	}
	if *count < 1 {
		return usageError{fmt.Sprintf("matrix: --count %d: give 1 or more", *count)}
	}
	dir := fs.Arg(0)
	if *runnerMap == "" {
		*runnerMap = filepath.Join(filepath.Dir(filepath.Clean(dir)), "runners.json")
	}
	rm, err := fleet.LoadRunnerMap(*runnerMap)
	if err != nil {
		return err
	}
	sweeps, err := fleet.LoadSweepFiles(dir)
	if err != nil {
		return err
	}
	plans, err := fleet.LoadPlanFiles(dir)
	if err != nil {
		return err
	}
	if len(sweeps) == 0 && len(plans) == 0 {
		return fmt.Errorf("matrix: no sweep declarations (*.json) in %s and no plans in %s", dir, filepath.Join(dir, fleet.PlansDir))
	}
	if *only != "" {
		var keepS []*fleet.SweepFile
		var keepP []*fleet.PlanFile
		for _, name := range strings.Split(*only, ",") {
			name = strings.TrimSpace(name)
			if i := slices.IndexFunc(sweeps, func(s *fleet.SweepFile) bool { return s.Name == name }); i >= 0 {
				keepS = append(keepS, sweeps[i])
			} else if i := slices.IndexFunc(plans, func(p *fleet.PlanFile) bool { return p.Name == name }); i >= 0 {
				keepP = append(keepP, plans[i])
			} else {
				return fmt.Errorf("matrix: --only %s: no sweep or plan %q in %s", *only, name, dir)
			}
		}
		sweeps, plans = keepS, keepP
	}
	if *simOnly {
		sweeps = slices.DeleteFunc(sweeps, func(s *fleet.SweepFile) bool { return s.Kind() != engine.Sim })
		plans = slices.DeleteFunc(plans, func(p *fleet.PlanFile) bool { return p.Kind() != engine.Sim })
	}
	m, err := fleet.MakeMatrices(sweeps, plans, rm, fleet.MatrixOptions{PerMatrix: *per, Count: *count})
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(m)
}

// runMerge merges the run directories the sweep jobs uploaded.
func runMerge(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "also write summary.md, fleet.json and bench.txt (every level of every repeat, for benchstat) in `DIR`")
	force := fs.Bool("force", false, "overwrite the files of --out")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile-model merge [--out DIR] RESULTS...\n\n"+
			"Reads every run directory under RESULTS (laid out <sweep>/run<k>/, as the harness keeps them under\n"+
			"$PROFILE_MODEL_KEEP_RUNS, and the sweep directories of plans, each pair named <plan>/<server>/<bench>)\n"+
			"and prints one Markdown summary: per sweep and level, the medians of the client metrics and the time\n"+
			"per decode layer over the repeats.")
		fs.PrintDefaults()
	}
	roots, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(roots) == 0 {
		fs.Usage()
		return usageError{"merge: give the folders of the sweeps' results"}
	}
	s, err := fleet.Merge(roots...)
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	if *out != "" {
		md, js, bench := filepath.Join(*out, "summary.md"), filepath.Join(*out, "fleet.json"), filepath.Join(*out, "bench.txt")
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
		if err := atomicfile.CheckNew(*force, md, js, bench); err != nil {
			return err
		}
		writes := []struct {
			path string
			fn   func(io.Writer) error
		}{
			{md, s.WriteMarkdown},
			{js, func(w io.Writer) error {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				enc.SetEscapeHTML(false)
				return enc.Encode(s)
			}},
			{bench, func(w io.Writer) error { return results.WriteBench(w, s.BenchResults()) }},
		}
		for _, f := range writes {
			if err := atomicfile.WriteFunc(f.path, f.fn); err != nil {
				return err
			}
		}
	}
	return s.WriteMarkdown(stdout)
}

// runRegress compares a fleet's results with a baseline's.
func runRegress(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("regress", flag.ContinueOnError)
	fs.SetOutput(stderr)
	t := fleet.DefaultThresholds
	fs.Float64Var(&t.ThroughputDrop, "throughput-drop", t.ThroughputDrop, "flag a throughput drop beyond this `PERCENT` (negative: off)")
	fs.Float64Var(&t.LatencyRise, "latency-rise", t.LatencyRise, "flag a latency rise beyond this `PERCENT` (negative: off)")
	fs.Float64Var(&t.KernelRise, "kernel-rise", t.KernelRise, "flag a rise of the time per decode layer, in total or of a kernel category, beyond this `PERCENT` (negative: off)")
	fs.Float64Var(&t.KernelMinUS, "kernel-min-us", t.KernelMinUS, "... and by at least this many `µs` per layer")
	fs.Float64Var(&t.EnergyRise, "energy-rise", t.EnergyRise, "flag a rise of the energy per output token (J/token, from GPU telemetry) beyond this `PERCENT` (default off: sampled power moves with the machine)")
	throughput := fs.String("throughput-units", strings.Join(t.ThroughputUnits, ","), "comma-separated throughput `UNITS` of bench.txt")
	latency := fs.String("latency-units", strings.Join(t.LatencyUnits, ","), "comma-separated latency `UNITS` of bench.txt")
	fs.Float64Var(&t.Alpha, "alpha", t.Alpha, "a change beyond a threshold regresses only when the U test of the repeats gives p below this `LEVEL` (0: no test, the thresholds alone)")
	asJSON := fs.Bool("json", false, "print the findings as JSON instead of Markdown")
	rerun := fs.String("rerun-file", "", "write the regressed sweeps and plans to `FILE`, comma-separated (for matrix --only)")
	baseline := fs.String("baseline", "", "compare with the named baseline `NAME` of --baselines instead of a BASELINE folder")
	saveAs := fs.String("save-baseline", "", "keep RESULTS as the named baseline `NAME` in --baselines (not when they regressed)")
	baselines := fs.String("baselines", cmp.Or(os.Getenv("PROFILE_MODEL_BASELINES"), "baselines"), "`DIR` of the named baselines (default $PROFILE_MODEL_BASELINES, else baselines)")
	force := fs.Bool("force", false, "with --save-baseline: replace a baseline of that name")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile-model regress [flags] BASELINE RESULTS\n"+
			"       profile-model regress [flags] --baseline NAME RESULTS\n"+
			"       profile-model regress --save-baseline NAME [--force] RESULTS\n\n"+
			"Compares RESULTS with BASELINE (each a folder of run directories, as merge reads them), sweep by\n"+
			"sweep and level by level, on the medians over the repeats: a throughput drop beyond\n"+
			"--throughput-drop, a latency rise beyond --latency-rise, or a rise of the time per decode layer (in\n"+
			"total or of a kernel category, with the kernel that rose most) beyond --kernel-rise is a\n"+
			"regression when the Mann-Whitney U test of the two sides' repeats (benchstat's) gives p < --alpha;\n"+
			"a change that the repeats cannot tell from noise (one run a side always) is reported, not a\n"+
			"regression. Prints a Markdown report; exit status 1 when anything regressed. A named baseline\n"+
			"(--baseline, --save-baseline) is a merged summary kept as NAME.json in --baselines.")
		fs.PrintDefaults()
	}
	paths, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	want := 2
	if *baseline != "" || (*saveAs != "" && len(paths) == 1) {
		want = 1
	}
	if len(paths) != want {
		fs.Usage()
		if *baseline != "" {
			return usageError{fmt.Sprintf("regress: with --baseline, want RESULTS alone, got %d folders", len(paths))}
		}
		return usageError{fmt.Sprintf("regress: want BASELINE and RESULTS, got %d folders", len(paths))}
	}
	if !(t.Alpha >= 0 && t.Alpha < 1) {
		return usageError{fmt.Sprintf("regress: --alpha %g: want a level in [0, 1), e.g. 0.05", t.Alpha)}
	}
	t.ThroughputUnits, t.LatencyUnits = splitList(*throughput), splitList(*latency)
	resultsDir := paths[len(paths)-1]
	cur, err := fleet.Merge(resultsDir)
	if err != nil {
		return fmt.Errorf("regress: results: %w", err)
	}
	if want == 1 && *baseline == "" {
		// --save-baseline alone: keep the results, compare nothing.
		return saveBaseline(stderr, *baselines, *saveAs, cur, resultsDir, *force)
	}
	var base *fleet.Summary
	baseName := ""
	if *baseline != "" {
		bf, err := fleet.LoadBaseline(*baselines, *baseline)
		if err != nil {
			return fmt.Errorf("regress: %w", err)
		}
		base, baseName = bf.Summary, fmt.Sprintf("baseline %s (%s)", bf.Name, bf.Created)
	} else {
		if base, err = fleet.Merge(paths[0]); err != nil {
			return fmt.Errorf("regress: baseline: %w", err)
		}
		baseName = paths[0]
	}
	r := fleet.Compare(base, cur, t)
	if *rerun != "" {
		if err := atomicfile.Write(*rerun, []byte(strings.Join(r.Jobs(), ",")+"\n")); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		err = enc.Encode(r)
	} else {
		err = r.WriteMarkdown(stdout, baseName, resultsDir)
	}
	if err != nil {
		return err
	}
	if r.Regressed() {
		if *saveAs != "" {
			fmt.Fprintf(stderr, "profile-model: regress: not saved as baseline %s: the results regressed\n", *saveAs)
		}
		fmt.Fprintf(stderr, "profile-model: regress: %d regressions in %d sweeps\n", len(r.Findings), len(r.Rerun()))
		return errSilent
	}
	if err := r.Incomplete(); err != nil {
		// Exit 0 would read as "no regression" to CI.
		return fmt.Errorf("regress: nothing can be said: %w", err)
	}
	if *saveAs != "" {
		return saveBaseline(stderr, *baselines, *saveAs, cur, resultsDir, *force)
	}
	return nil
}

// saveBaseline keeps the merged results s as the named baseline name.
func saveBaseline(stderr io.Writer, dir, name string, s *fleet.Summary, source string, force bool) error {
	path, err := fleet.SaveBaseline(dir, name, s, []string{source}, time.Now(), force)
	if err != nil {
		return fmt.Errorf("regress: %w", err)
	}
	fmt.Fprintf(stderr, "profile-model: regress: saved %s as baseline %s (%s)\n", source, name, path)
	return nil
}

// parseInterspersed parses flags given before, between or after the
// positional arguments, which it returns.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, usageError{err.Error()}
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
