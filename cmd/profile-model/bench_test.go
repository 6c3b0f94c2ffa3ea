package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/sim"
)

// benchSim runs the simulated engine in this process until the test ends.
func benchSim(t *testing.T, cfg sim.Config) string {
	t.Helper()
	cfg.Model = "MiniMaxAI/MiniMax-M2.5"
	cfg.Exit = func(int) {}
	srv, err := sim.New(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ctx, ln)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String()
}

func TestBenchUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no url", []string{}, "--url is required"},
		{"bad conc list", []string{"--url", "http://x", "--conc", "4,x"}, "--conc"},
		{"start above end", []string{"--url", "http://x", "--conc-start", "8", "--conc-end", "4"}, "--conc-start 8"},
		{"bad percentile", []string{"--url", "http://x", "--percentiles", "50,100"}, "--percentiles"},
		{"bad goodput", []string{"--url", "http://x", "--goodput", "ttft=5"}, "--goodput"},
		{"unknown goodput metric", []string{"--url", "http://x", "--goodput", "itl:5"}, "unknown metric"},
		{"bad rate", []string{"--url", "http://x", "--request-rate", "-1"}, "--request-rate"},
		{"profile without trace dir", []string{"--url", "http://x", "--profile"}, "--trace-dir"},
		{"stray argument", []string{"--url", "http://x", "extra"}, "unexpected argument"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			err := run(context.Background(), append([]string{"bench"}, tc.args...), &out, &errb)
			var u usageError
			require.True(t, errors.As(err, &u), "want a usage error, got %v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestConcurrencies(t *testing.T) {
	t.Parallel()
	got, err := concurrencies("", 4, 32)
	require.NoError(t, err)
	require.Equal(t, []int{4, 8, 16, 32}, got, "doubling from start to end")
	got, err = concurrencies("", 3, 20)
	require.NoError(t, err)
	require.Equal(t, []int{3, 6, 12}, got)
	got, err = concurrencies("16, 4,8", 1, 1)
	require.NoError(t, err)
	require.Equal(t, []int{16, 4, 8}, got, "an explicit list is kept as given")
}

func TestBenchCommandAgainstSim(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a small sweep against the simulated engine; skipped with -short")
	}
	t.Parallel()
	url := benchSim(t, sim.Config{TimeScale: 50})
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"bench", "--url", url, "--isl", "64", "--osl", "8",
		"--conc", "2,4", "--num-prompts-mul", "2", "--out", out, "--goodput", "ttft:60000"}, &stdout, &stderr)
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	require.Contains(t, stdout.String(), "model: MiniMaxAI/MiniMax-M2.5 (from")
	require.Equal(t, 2, strings.Count(stdout.String(), "Serving Benchmark Result"))
	require.Contains(t, stdout.String(), "Request goodput (req/s):")
	require.Contains(t, stderr.String(), "conc 2: sending 4 requests", "plain progress lines when stderr is not a terminal")
	require.Contains(t, stderr.String(), "conc 4: 8/8 done")
	runs, err := filepath.Glob(filepath.Join(out, "MiniMax-M2.5-*Z"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	for _, f := range []string{"conc2.json", "conc4.json", "summary.csv", "bench.txt"} {
		_, err := os.Stat(filepath.Join(runs[0], f))
		require.NoError(t, err, f)
	}
}

func TestBenchCommandFailsWhenServerDies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a small sweep against the simulated engine; skipped with -short")
	}
	t.Parallel()
	// Calibration probes (2) and the warmup (1) complete; the level's third request crashes the engine.
	url := benchSim(t, sim.Config{TimeScale: 50, CrashAfterRequests: 5})
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"bench", "--url", url, "--isl", "32", "--osl", "16",
		"--conc", "2,4", "--num-prompts-mul", "4", "--out", t.TempDir()}, &stdout, &stderr)
	require.Error(t, err, "a failed level is a non-zero exit")
	require.Contains(t, err.Error(), "concurrency 2")
	require.Contains(t, err.Error(), "skipped levels [4]")
	require.Contains(t, stdout.String(), "status: failed")
}

// The last level failing skips nothing, and the error does not list an
// empty "skipped levels []".
func TestBenchCommandLastLevelFails(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a level against the simulated engine; skipped with -short")
	}
	t.Parallel()
	url := benchSim(t, sim.Config{TimeScale: 50, CrashAfterRequests: 5})
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"bench", "--url", url, "--isl", "32", "--osl", "16",
		"--conc", "2", "--num-prompts-mul", "4", "--out", t.TempDir()}, &stdout, &stderr)
	require.ErrorContains(t, err, "concurrency 2")
	require.ErrorContains(t, err, "partial results in")
	require.NotContains(t, err.Error(), "skipped levels")
}
