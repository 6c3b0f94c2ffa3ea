package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTrimCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.json.gz")
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"synth", "--out", trace, "--layers", "3", "--decode-steps", "20", "--prefill-steps", "1", "--bs", "8", "--python-per-step", "20"}, &stdout, &stderr), stderr.String())

	out := filepath.Join(dir, "cut.json.gz")
	stdout.Reset()
	require.NoError(t, run(context.Background(), []string{"trim", trace, "-o", out, "--decode", "2"}, &stdout, &stderr), stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Regexp(t, `^wrote .*cut\.json\.gz: \d+ of \d+ events \(\d+ GPU kernels and copies\), [0-9.]+ MB \(from [0-9.]+ MB\) in [0-9.]+ s$`, lines[0])
	require.Equal(t, "kept 2 of 21 steps:", lines[1])
	require.Regexp(t, `^\s+step\s+kind\s+bs\s+start_us\s+cpu_dur_us\s+label$`, lines[2])
	step := regexp.MustCompile(`^\s+(\d+)\s+decode\s+8\s+[0-9.]+\s+[0-9.]+\s+decode\[bs=8 `)
	require.Regexp(t, step, lines[3])
	require.Regexp(t, step, lines[4])

	// inspect reads the result: two decode steps.
	stdout.Reset()
	require.NoError(t, run(context.Background(), []string{"inspect", out, "--json"}, &stdout, &stderr))
	var s struct {
		Steps map[string]int `json:"steps"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &s))
	require.Equal(t, map[string]int{"decode": 2}, s.Steps)

	// An existing OUT is kept unless --force.
	err := run(context.Background(), []string{"trim", trace, "-o", out, "--steps", "0:1"}, &stdout, &stderr)
	var u usageError
	require.True(t, errors.As(err, &u), "err = %v", err)
	require.Contains(t, err.Error(), "--force")
	require.NoError(t, run(context.Background(), []string{"trim", trace, "-o", out, "--steps", "0:1", "--force"}, &stdout, &stderr))

	// --list numbers the steps as --steps takes them.
	stdout.Reset()
	require.NoError(t, run(context.Background(), []string{"trim", trace, "--list"}, &stdout, &stderr))
	require.Contains(t, stdout.String(), ": 21 steps\n")
	require.Regexp(t, `\n\s+0\s+(decode|prefill)\s`, stdout.String())
	require.Regexp(t, `\n\s+20\s+(decode|prefill)\s`, stdout.String())
}

func TestTrimCommandUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.json")
	require.NoError(t, os.WriteFile(trace, []byte(`{"traceEvents": []}`), 0o644))
	out := filepath.Join(dir, "o.json")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no output", []string{trace, "--decode", "2"}, "-o OUT"},
		{"two choices", []string{trace, "-o", out, "--decode", "2", "--steps", "1:2"}, "one of"},
		{"bad steps", []string{trace, "-o", out, "--steps", "3"}, "a:b"},
		{"bad window", []string{trace, "-o", out, "--window", "9:1"}, "t0 < t1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"trim"}, c.args...), &stdout, &stderr)
			var u usageError
			require.True(t, errors.As(err, &u), "err = %v", err)
			require.Contains(t, err.Error(), c.want)
		})
	}
	// No steps in the trace: a plain error that says what to do.
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"trim", trace, "-o", out, "--decode", "1"}, &stdout, &stderr)
	require.ErrorContains(t, err, "--window")
	_, statErr := os.Stat(out)
	require.True(t, os.IsNotExist(statErr), "nothing written on error")
}
