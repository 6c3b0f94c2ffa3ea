package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/profile-model/profile-model/tracing/trim"
)

// runTrim writes a small trace holding chosen steps (or a time window) of a
// large one, so that Perfetto or chrome://tracing can open it.
func runTrim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "write the trimmed trace to `OUT` (gzip when it ends in .gz)")
	decode := fs.Int("decode", 0, "keep `N` consecutive decode steps from the steady middle of the profile")
	steps := fs.String("steps", "", "keep steps `a:b` (a to b-1, numbered from 0 in start order as --list shows)")
	window := fs.String("window", "", "keep what overlaps `t0:t1`, in microseconds as the trace writes ts")
	force := fs.Bool("force", false, "replace OUT when it exists")
	maxLag := fs.Duration("max-lag", 0, "how far the GPU may run behind the chosen steps (default: their length, at least 10ms)")
	list := fs.Bool("list", false, "print the trace's steps (index, kind, batch size, start, duration, label) and stop")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile-model trim TRACE -o OUT (--decode N | --steps a:b | --window t0:t1) [--force]\n       profile-model trim TRACE --list\n\nWrite a small valid trace holding chosen steps of a large one (metadata, the steps'\nCPU and GPU events, their launches, flows and annotations), reading it once.")
		fs.PrintDefaults()
	}
	trace, err := parseOneTrace(fs, args, "trim")
	if err != nil {
		return err
	}
	if *list {
		return listSteps(ctx, trace, stdout)
	}
	opts := trim.Options{MaxLag: *maxLag}
	chosen := 0
	if *decode != 0 {
		chosen++
		opts.Decode = *decode
	}
	if *steps != "" {
		chosen++
		r, err := trim.ParseStepRange(*steps)
		if err != nil {
			return usageError{"trim: --" + err.Error()}
		}
		opts.Steps = &r
	}
	if *window != "" {
		chosen++
		w, err := trim.ParseWindow(*window)
		if err != nil {
			return usageError{"trim: --" + err.Error()}
		}
		opts.Window = &w
	}
	if chosen != 1 || *out == "" {
		fs.Usage()
		return usageError{"trim: give -o OUT and one of --decode N, --steps a:b, --window t0:t1"}
	}
	if *decode < 0 {
		return usageError{"trim: --decode wants a positive number of steps"}
	}
	start := time.Now()
	res, err := trim.File(ctx, trace, *out, *force, opts)
	if err != nil {
		if errors.Is(err, trim.ErrExists) || errors.Is(err, trim.ErrInput) {
			return usageError{err.Error()}
		}
		return err
	}
	in := int64(-1)
	if fi, err := os.Stat(trace); err == nil {
		in = fi.Size()
	}
	outSize := int64(-1)
	if fi, err := os.Stat(*out); err == nil {
		outSize = fi.Size()
	}
	fmt.Fprintf(stdout, "wrote %s: %d of %d events (%d GPU kernels and copies), %s (from %s) in %.2f s\n",
		*out, res.EventsOut, res.EventsIn, res.KernelsOut, mb(outSize), mb(in), time.Since(start).Seconds())
	if len(res.Steps) > 0 {
		fmt.Fprintf(stdout, "kept %d of %d steps:\n", len(res.Steps), len(res.TraceSteps))
		printSteps(stdout, res.Steps)
	} else {
		fmt.Fprintf(stdout, "kept the window %s:%s µs\n", trim.FormatMicros(res.StartNS), trim.FormatMicros(res.EndNS))
	}
	if res.FlowsDropped > 0 {
		fmt.Fprintf(stdout, "left out %d flow events whose other end is not in the trimmed trace\n", res.FlowsDropped)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	return nil
}

func listSteps(ctx context.Context, path string, w io.Writer) error {
	steps, err := trim.ListFile(ctx, path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(steps) == 0 {
		fmt.Fprintf(w, "%s: no step annotations (engine labels or ProfilerStep#N): use trim --window t0:t1\n", path)
		return nil
	}
	fmt.Fprintf(w, "%s: %d steps\n", path, len(steps))
	printSteps(w, steps)
	return nil
}

func printSteps(w io.Writer, steps []trim.Step) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  step\tkind\tbs\tstart_us\tcpu_dur_us\tlabel")
	for _, s := range steps {
		fmt.Fprintf(tw, "  %d\t%s\t%d\t%s\t%s\t%s\n", s.Index, s.Kind, s.BS, trim.FormatMicros(s.StartNS), trim.FormatMicros(s.EndNS-s.StartNS), s.Label)
	}
	tw.Flush()
}

func mb(n int64) string {
	if n < 0 {
		return "? MB"
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}
