package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/sim"
)

func TestBenchWindowAndScrapeUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"steps without profile", []string{"--url", "http://x", "--profile-steps", "10"}, "need --profile"},
		{"seconds without profile", []string{"--url", "http://x", "--profile-seconds", "5s"}, "need --profile"},
		{"negative steps", []string{"--url", "http://x", "--profile", "--trace-dir", "d", "--profile-steps", "-1"}, "--profile-steps -1: out of range (want 0 to"},
		{"negative stall timeout", []string{"--url", "http://x", "--stall-timeout", "-1s"}, `invalid value "-1s" for flag -stall-timeout: out of range (want 0s to`},
		{"negative request timeout", []string{"--url", "http://x", "--timeout", "-5s"}, "out of range"},
		{"request timeout too large", []string{"--url", "http://x", "--timeout", "99999999999h"}, "out of range"},
		{"concurrency too large", []string{"--url", "http://x", "--conc", "4,99999999999999999999"}, "--conc 99999999999999999999: out of range"},
		{"rate too large", []string{"--url", "http://x", "--request-rate", "1e999"}, "--request-rate 1e999: out of range"},
		{"osl too large", []string{"--url", "http://x", "--osl", "99999999999"}, "--osl 99999999999: out of range (want 1 to 16777216)"},
		{"osl beyond int64", []string{"--url", "http://x", "--osl", "99999999999999999999"}, "value out of range"},
		{"negative export timeout", []string{"--url", "http://x", "--export-timeout", "-1m"}, "out of range"},
		{"trace dir without profile", []string{"--url", "http://x", "--trace-dir", "d"}, "add --profile"},
		{"bad scrape mode", []string{"--url", "http://x", "--scrape-metrics", "yes"}, "want auto, on or off"},
	} {
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

// bench against a simulated engine that merges frames, profiled with a
// window of 20 steps: the level JSON says 4 tokens per frame, holds the
// server's metrics and the window.
func TestBenchCommandWindowAndMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a profiled level against the simulated engine; skipped with -short")
	}
	t.Parallel()
	traces := t.TempDir()
	url := benchSim(t, sim.Config{TimeScale: 5, MergeFrames: 4, ProfilerDir: traces, PythonPerStep: -1})
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"bench", "--url", url, "--isl", "32", "--osl", "64", "--random-range-ratio", "1",
		"--conc", "4", "--num-prompts-mul", "1", "--out", out, "--profile", "--trace-dir", traces, "--profile-steps", "20"}, &stdout, &stderr)
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	// A level this short (0.3 s) is not sampled between its first and last
	// /metrics readings, so only the counters are printed.
	require.Regexp(t, `server metrics: .*generated_tokens=256\b`, stdout.String())
	require.Contains(t, stdout.String(), "(stopped by steps)")
	files, err := filepath.Glob(filepath.Join(out, "*", "conc4.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	l, err := results.LoadLevel(files[0])
	require.NoError(t, err)
	require.InDelta(t, 4.0, l.TokensPerFrame, 1e-9)
	require.NotNil(t, l.Server)
	require.NotNil(t, l.Window)
	require.Equal(t, "steps", l.Window.StoppedBy)
}
