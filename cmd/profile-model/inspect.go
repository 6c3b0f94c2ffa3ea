package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/tracing"
)

// runInspect summarises one or more traces: device, era, event counts,
// kernels, graph replays, steps, decode batch size, coverage, warnings.
func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the summary as JSON (an array of summaries for several traces)")
	ndjson := fs.Bool("ndjson", false, "print one JSON summary per line")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile-model inspect TRACE... [--json | --ndjson]\n\nSummarise PyTorch profiler traces (.json or .json.gz; - reads standard input;\na directory: the traces of its rank directories).")
		fs.PrintDefaults()
	}
	// Accept flags after the trace names too.
	var files []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return usageError{err.Error()}
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) == 0 {
		fs.Usage()
		return usageError{"inspect: no trace given"}
	}
	// A directory is the traces of its ranks (rank_<r>/, dp<d>_tp<r>).
	var expanded []string
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.IsDir() {
			ranks, err := analysis.RankFiles([]string{f})
			if err != nil {
				return fmt.Errorf("inspect: %w", err)
			}
			expanded = append(expanded, ranks...)
			continue
		}
		expanded = append(expanded, f)
	}
	files = expanded
	// A trace's kept kernels are most of the heap and live to the end: a
	// lower GC target keeps peak memory near that instead of twice it.
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	var sums []tracing.Summary
	failed := 0
	for _, f := range files {
		res, err := loadForInspect(ctx, f, stderr)
		if err != nil {
			if ctx.Err() != nil || len(files) == 1 {
				return err
			}
			// Go on with the other traces; the exit status says it.
			fmt.Fprintf(stderr, "profile-model: %v\n", err)
			failed++
			continue
		}
		switch {
		case *ndjson:
			b, err := json.Marshal(res.Summary)
			if err != nil {
				return fmt.Errorf("writing summary: %w", err)
			}
			fmt.Fprintf(stdout, "%s\n", b)
		case *asJSON:
			sums = append(sums, res.Summary)
		default:
			if len(sums) > 0 {
				fmt.Fprintln(stdout)
			}
			sums = append(sums, res.Summary)
			if err := analysis.WriteSummaryText(stdout, res.Summary); err != nil {
				return fmt.Errorf("writing summary: %w", err)
			}
		}
	}
	if *asJSON && !*ndjson {
		var v any = sums
		if len(files) == 1 {
			v = sums[0]
		}
		if err := writeJSON(stdout, v); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("inspect: %d of %d traces could not be read (messages above)", failed, len(files))
	}
	return nil
}

// loadForInspect reads one trace for its summary; "-" is standard input.
func loadForInspect(ctx context.Context, path string, stderr io.Writer) (*analysis.Result, error) {
	opt := analysis.Options{Parts: analysis.Summary}
	if path != "-" {
		opt.Progress = loadProgress(stderr, path)
		return analysis.Load(ctx, path, opt)
	}
	tr, err := tracing.Read(ctx, os.Stdin, "stdin", tracing.Options{})
	if err != nil {
		return nil, err
	}
	return analysis.Analyze(ctx, tr, opt)
}

// loadProgress draws a bar of the bytes read on a terminal (a large trace
// takes a while), nothing otherwise.
func loadProgress(w io.Writer, path string) func(done, total int64) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	var bar *progressbar.ProgressBar
	return func(done, total int64) {
		if bar == nil {
			bar = progressbar.NewOptions64(total,
				progressbar.OptionSetWriter(w),
				progressbar.OptionSetDescription("reading "+filepath.Base(path)),
				progressbar.OptionShowBytes(true),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionClearOnFinish())
		}
		_ = bar.Set64(done)
		if done == total {
			_ = bar.Finish()
		}
	}
}
