package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/report/reporttest"
)

// TestReportCommand regenerates the report of a run directory, then of a
// copy of it elsewhere without its traces: the readme is the same.
func TestReportCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	reporttest.MakeRun(t, dir, filepath.Join("..", "..", "fixtures", "models", "minimax-m2", "config.json"))
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"report", dir}, &stdout, &stderr))
	require.Empty(t, stderr.String(), "a complete run has nothing to note")
	want := "wrote RUN/latency.svg\nwrote RUN/throughput.svg\nwrote RUN/throughput_tpot.svg\nwrote RUN/layer_time.svg\n" +
		"wrote RUN/positions.svg\nwrote RUN/token_time.svg\nwrote RUN/roofline.svg\nwrote RUN/readme.md\n"
	require.Equal(t, want, strings.ReplaceAll(stdout.String(), dir, "RUN"))
	readme, err := os.ReadFile(filepath.Join(dir, "readme.md"))
	require.NoError(t, err)

	copied := filepath.Join(t.TempDir(), "moved", "run")
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel == "traces" || rel == "readme.md" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(copied, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(copied, rel), data, 0o644)
	}))
	stdout.Reset()
	require.NoError(t, run(context.Background(), []string{"report", copied}, &stdout, &stderr))
	again, err := os.ReadFile(filepath.Join(copied, "readme.md"))
	require.NoError(t, err)
	require.Equal(t, string(readme), string(again))

	// Without the model's config the report says so, on stderr too.
	require.NoError(t, os.Remove(filepath.Join(copied, "config.json")))
	stdout.Reset()
	require.NoError(t, run(context.Background(), []string{"report", copied}, &stdout, &stderr))
	require.Equal(t, "note: no model config (config.json): the architecture comes from the traces alone\n", stderr.String())
	// --config names one instead.
	stderr.Reset()
	require.NoError(t, run(context.Background(), []string{"report", copied, "--config", filepath.Join("..", "..", "fixtures", "models", "minimax-m2", "config.json")}, &stdout, &stderr))
	require.Empty(t, stderr.String())
	again, err = os.ReadFile(filepath.Join(copied, "readme.md"))
	require.NoError(t, err)
	require.Equal(t, string(readme), string(again))
}

func TestReportCommandErrors(t *testing.T) {
	for _, tt := range []struct {
		name  string
		args  []string
		want  string
		usage bool
	}{
		{"no directory", []string{"report"}, "report: want one run directory, got 0", true},
		{"two directories", []string{"report", "a", "b"}, "report: want one run directory, got 2", true},
		{"missing directory", []string{"report", filepath.Join(t.TempDir(), "nope")}, "reading the run directory", false},
		{"empty directory", []string{"report", t.TempDir()}, "holds no level results", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, &stdout, &stderr)
			require.ErrorContains(t, err, tt.want)
			var u usageError
			require.Equal(t, tt.usage, errors.As(err, &u))
		})
	}
}
