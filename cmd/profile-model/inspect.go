package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/profile-model/profile-model/analysis"
)

// runInspect summarises one or more traces: device, era, event counts,
// kernels, graph replays, steps, decode batch size, coverage, warnings.
func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile-model inspect TRACE... [--json]\n\nSummarise PyTorch profiler traces (.json or .json.gz).")
		fs.PrintDefaults()
	}
	// Accept flags after the trace names too.
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
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
	// A trace's kept kernels are most of the heap and live to the end: a
	// lower GC target keeps peak memory near that instead of twice it.
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	for i, f := range files {
		res, err := analysis.Load(ctx, f, analysis.Options{Parts: analysis.Summary, Progress: loadProgress(stderr, f)})
		if err != nil {
			return err
		}
		if *asJSON {
			err = analysis.WriteSummaryJSON(stdout, res.Summary)
		} else {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			err = analysis.WriteSummaryText(stdout, res.Summary)
		}
		if err != nil {
			return fmt.Errorf("writing summary: %w", err)
		}
	}
	return nil
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
