package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/diff"
)

// benchstatCommand runs the benchstat of the version go.mod pins from any
// directory (go tool benchstat works only inside the repository);
// TestBenchstatVersion keeps the two equal.
const benchstatCommand = "go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da"

// runDiff compares two traces, two levels' analysis files or two run
// directories.
func runDiff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the comparison as JSON instead of Markdown")
	benchDir := fs.String("benchstat", "", "write old.txt (A) and new.txt (B) in `DIR`: Go benchmark files for benchstat")
	rulesPath := fs.String("rules", "", "category rule table `FILE` for both sides (default: the built-in one)")
	top := fs.Int("top", 25, "kernel rows per table in Markdown (0: all; --json has them all)")
	force := fs.Bool("force", false, "overwrite old.txt and new.txt in the --benchstat directory")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile-model diff A B [--json] [--benchstat DIR] [--rules FILE] [--top N]\n\n"+
			"Compares B with A: two traces, two levels' analysis files (a directory holding conc{bs}_layer.csv\n"+
			"and its siblings, or that CSV), or two run directories (level by level, matched by concurrency).")
		fs.PrintDefaults()
	}
	var paths []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return usageError{err.Error()}
		}
		if fs.NArg() == 0 {
			break
		}
		paths = append(paths, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(paths) != 2 {
		fs.Usage()
		return usageError{fmt.Sprintf("diff: want two traces, levels or runs (A B), got %d", len(paths))}
	}
	if *top < 0 {
		return usageError{"diff: --top must not be negative"}
	}
	opt, err := analysisOptions(*rulesPath, "")
	if err != nil {
		return err
	}
	dopt := diff.Options{Rules: opt.Rules}
	var kinds [2]string
	for i, p := range paths {
		if kinds[i], err = diff.KindOf(p); err != nil {
			return fmt.Errorf("diff: %w", err)
		}
	}
	var oldPath, newPath string
	if *benchDir != "" {
		oldPath, newPath = filepath.Join(*benchDir, "old.txt"), filepath.Join(*benchDir, "new.txt")
		if err := atomicfile.CheckOutputs(*force, append([]string{*rulesPath}, paths...), oldPath, newPath); err != nil {
			return err
		}
	}
	mopt := diff.MarkdownOptions{Top: *top}
	var report interface {
		WriteMarkdown(io.Writer, diff.MarkdownOptions) error
		BenchResults() (a, b []results.BenchResult)
	}
	switch {
	case kinds[0] == diff.Run && kinds[1] == diff.Run:
		rr, err := diff.CompareRuns(ctx, paths[0], paths[1], dopt)
		if err != nil {
			return err
		}
		report = rr
	case kinds[0] == diff.Run || kinds[1] == diff.Run:
		return usageError{fmt.Sprintf("diff: %s is a %s and %s a %s: compare two run directories, or two traces or levels", paths[0], kinds[0], paths[1], kinds[1])}
	default:
		var ps [2]*diff.Profile
		for i, p := range paths {
			if ps[i], err = diff.LoadProfile(ctx, p, dopt); err != nil {
				return err
			}
		}
		report = diff.Compare(ps[0], ps[1])
	}
	if *benchDir != "" {
		a, b := report.BenchResults()
		if err := os.MkdirAll(*benchDir, 0o755); err != nil {
			return fmt.Errorf("creating the --benchstat directory: %w", err)
		}
		for _, f := range []struct {
			path string
			rs   []results.BenchResult
		}{{oldPath, a}, {newPath, b}} {
			if err := atomicfile.WriteFunc(f.path, func(w io.Writer) error { return results.WriteBench(w, f.rs) }); err != nil {
				return err
			}
		}
	}
	if *asJSON {
		return writeJSON(stdout, report)
	}
	if err := report.WriteMarkdown(stdout, mopt); err != nil {
		return err
	}
	if *benchDir != "" {
		fmt.Fprintf(stdout, "\nwrote %s and %s (one sample per side: benchstat shows no confidence interval or significance until each side has several; concatenate the files of repeated runs)\ncompare them, from any directory, with: %s %s %s\n", oldPath, newPath, benchstatCommand, oldPath, newPath)
	}
	return nil
}
