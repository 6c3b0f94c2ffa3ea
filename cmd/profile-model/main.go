// Command profile-model profiles LLM serving engines: it runs concurrency
// sweeps with the torch profiler on and turns the traces into per-layer
// kernel tables, inventories and reports. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := startCPUProfile(os.Getenv("PROFILE_MODEL_CPUPROFILE"))
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stopProfile()
	stop()
	if err != nil {
		if !errors.Is(err, errSilent) {
			fmt.Fprintf(os.Stderr, "profile-model: %v\n", err)
		}
		var u usageError
		if errors.As(err, &u) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// startCPUProfile writes a CPU profile of the whole command to path (for
// `go tool pprof`) when path is set: the way to see where a slow trace's
// time goes without a special build.
func startCPUProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "profile-model: PROFILE_MODEL_CPUPROFILE: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// errSilent is returned when the message was already printed.
var errSilent = errors.New("failed")

// usageError marks bad command-line use (exit status 2).
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands lists the subcommands; each lives in its own file.
func commands() []command {
	return []command{
		{"run", "the whole workflow: engine up with the profiler, profiled sweep, per-level analysis, report", runRun},
		{"inspect", "summarise a trace: device, kernels, steps, decode batch size, coverage", runInspect},
		{"layers", "per-layer kernel table of the decode steps of a trace", runLayers},
		{"kernels", "kernel inventory and category totals of a trace", runKernels},
		{"trim", "cut a large trace to chosen steps that Perfetto or chrome://tracing opens", runTrim},
		{"synth", "write an ATOM-style synthetic trace and its truth file", runSynth},
		{"serve-sim", "run the simulated ATOM engine (OpenAI server, no GPU)", runServeSim},
		{"bench", "streaming OpenAI benchmark client and profiled concurrency sweep", runBench},
		{"report", "write a run directory's readme.md and charts from its files", runReport},
		{"diff", "compare two traces, levels or runs: kernels, layers, categories, client metrics", runDiff},
		{"matrix", "GitHub Actions job matrices of the declared sweeps, one job per sweep on its GPU's runners", runMatrix},
		{"merge", "merge the run directories of a fleet's sweep jobs into one summary", runMerge},
		{"regress", "compare a fleet's results with a baseline's: throughput, latency and kernel-time regressions", runRegress},
		{"version", "print the version, commit and Go version of this build", runVersion},
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return usageError{"no command given"}
		}
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(ctx, args[1:], stdout, stderr)
			if isHelp(err) {
				return nil // -h printed the command's usage
			}
			return err
		}
	}
	usage(stderr)
	return usageError{fmt.Sprintf("unknown command %q", args[0])}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: profile-model COMMAND [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'profile-model COMMAND -h' for a command's flags.")
}

// isHelp reports whether err is -h's flag.ErrHelp, possibly carried as a
// usageError's message.
func isHelp(err error) bool {
	var u usageError
	return errors.Is(err, flag.ErrHelp) || (errors.As(err, &u) && u.msg == flag.ErrHelp.Error())
}
