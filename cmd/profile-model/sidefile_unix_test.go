//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/sidefile"
	"github.com/profile-model/profile-model/profiling/report/reporttest"
)

// TestSideFilesRefused: every flag that reads a side file (16 of them)
// refuses a FIFO with no writer (it once blocked forever, deaf to
// Ctrl-C), /dev/zero (it once filled memory) and a file beyond its kind's
// size, at once and saying what the path is.
func TestSideFilesRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	huge := filepath.Join(dir, "huge")
	f, err := os.Create(huge)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(sidefile.Large+1)) // sparse: no disk used
	require.NoError(t, f.Close())
	trace := filepath.Join(dir, "t.json")
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), synthArgs(trace), &stdout, &stderr))
	cfg := filepath.Join("..", "..", "fixtures", "models", "minimax-m2", "config.json")
	sweeps := filepath.Join(dir, "sweeps")
	require.NoError(t, os.MkdirAll(sweeps, 0o755))
	resume := filepath.Join(dir, "sweep")
	require.NoError(t, os.MkdirAll(resume, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(resume, "sweep.json"), []byte("{}"), 0o644))
	runDir := filepath.Join(dir, "run")
	reporttest.MakeRun(t, runDir, cfg)

	cases := map[string]func(bad string) []string{
		"run --config": func(b string) []string {
			return []string{"run", "--engine", "sim", "--model", "m", "--out", dir, "--config", b}
		},
		"run --tokenizer": func(b string) []string {
			return []string{"run", "--engine", "sim", "--model", "m", "--out", dir, "--tokenizer", b}
		},
		"run --plan":            func(b string) []string { return []string{"run", "--plan", b, "--dry-run"} },
		"run --resume":          func(b string) []string { return []string{"run", "--resume", resume, "--dry-run"} },
		"bench --tokenizer":     func(b string) []string { return []string{"bench", "--url", "http://127.0.0.1:1", "--tokenizer", b} },
		"serve-sim --tokenizer": func(b string) []string { return []string{"serve-sim", "--model", "m", "--tokenizer", b} },
		"serve-sim --kernels":   func(b string) []string { return []string{"serve-sim", "--model", "m", "--kernels", b} },
		"synth --layer-csv":     func(b string) []string { return synthArgs(filepath.Join(dir, "never.json"), "--layer-csv", b) },
		"layers --config":       func(b string) []string { return []string{"layers", trace, "--out", dir, "--config", b} },
		"layers --peaks":        func(b string) []string { return []string{"layers", trace, "--out", dir, "--config", cfg, "--peaks", b} },
		"layers --rules":        func(b string) []string { return []string{"layers", trace, "--out", dir, "--rules", b} },
		"kernels --rules":       func(b string) []string { return []string{"kernels", trace, "--out", dir, "--rules", b} },
		"diff --rules":          func(b string) []string { return []string{"diff", trace, trace, "--rules", b} },
		"report --peaks":        func(b string) []string { return []string{"report", runDir, "--peaks", b} },
		"matrix --runner-map":   func(b string) []string { return []string{"matrix", "--runner-map", b, sweeps} },
	}
	for name, args := range cases {
		for _, bad := range []struct{ path, want string }{
			{fifo, "a FIFO"}, {"/dev/zero", "a character device"}, {huge, "more than the"},
		} {
			t.Run(name+" "+filepath.Base(bad.path), func(t *testing.T) {
				if name == "run --resume" {
					plan := filepath.Join(resume, "plan.json")
					_ = os.Remove(plan)
					require.NoError(t, os.Symlink(bad.path, plan))
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				start := time.Now()
				var stdout, stderr bytes.Buffer
				err := run(ctx, args(bad.path), &stdout, &stderr)
				require.Error(t, err)
				require.Less(t, time.Since(start), time.Second, "refused, but not at once")
				require.ErrorContains(t, err, bad.want)
			})
		}
	}
	// report --config reads the config as an option: a side file it cannot
	// read is a note of the readme, also at once.
	start := time.Now()
	require.NoError(t, run(context.Background(), []string{"report", runDir, "--config", fifo, "--force"}, &stdout, &stderr))
	require.Less(t, time.Since(start), 10*time.Second)
	readme, err := os.ReadFile(filepath.Join(runDir, "readme.md"))
	require.NoError(t, err)
	require.Contains(t, string(readme), "a FIFO")
}
