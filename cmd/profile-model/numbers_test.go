package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFlagNumbersOutOfRange: a number too large for its type, or one no
// command can use, is a usage error that says "out of range" and names the
// flag, in every command that reads numbers (trim's --window and --steps
// are the trace reader's).
func TestFlagNumbersOutOfRange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "never.json")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"synth steps beyond int64", []string{"synth", "--out", out, "--decode-steps", "99999999999999999999"}, "value out of range"},
		{"synth negative steps", []string{"synth", "--out", out, "--decode-steps", "-3"}, "--decode-steps -3: out of range"},
		{"synth window of a billion seconds and more", []string{"synth", "--out", out, "--gpu-window", "1e10"}, "out of range"},
		{"synth window beyond a duration", []string{"synth", "--out", out, "--gpu-window", "9999999999h"}, "out of range"},
		{"serve-sim port", []string{"serve-sim", "--model", "m", "--server-port", "70000"}, "--server-port 70000: out of range (want 0 to 65535)"},
		{"serve-sim share", []string{"serve-sim", "--model", "m", "--stream-error-rate", "2"}, "--stream-error-rate 2: out of range (want 0 to 1)"},
		{"serve-sim capture size", []string{"serve-sim", "--model", "m", "--cudagraph-capture-sizes", "1,99999999999999999999"}, "size 99999999999999999999: out of range"},
		{"serve-sim delay", []string{"serve-sim", "--model", "m", "--export-delay", "99999999999h"}, "out of range"},
		{"run port", []string{"run", "--engine", "sim", "--model", "m", "--port", "-1"}, "--port -1: out of range"},
		{"run level", []string{"run", "--engine", "sim", "--model", "m", "--level", "99999999999999999999"}, "--level 99999999999999999999: out of range"},
		{"run time scale", []string{"run", "--engine", "sim", "--model", "m", "--time-scale", "1e999"}, "value out of range"},
		{"bench goodput", []string{"bench", "--url", "http://x", "--goodput", "ttft:1e999"}, "ttft 1e999: out of range"},
		{"kernels top", []string{"kernels", "t.json", "--top", "-1"}, "--top -1: out of range"},
		{"layers rank", []string{"layers", "t.json", "--rank", "99999999999999999999"}, "value out of range"},
		{"trim decode", []string{"trim", "t.json", "-o", out, "--decode", "-4"}, "--decode -4: out of range"},
		{"trim lag", []string{"trim", "t.json", "-o", out, "--decode", "4", "--max-lag", "99999999999h"}, "out of range"},
		{"diff top", []string{"diff", "a", "b", "--top", "-2"}, "--top -2: out of range"},
		{"bench prompts of a level", []string{"bench", "--url", "http://x", "--conc", "1048576", "--num-prompts-mul", "1048576"}, "more than 1048576 requests a level"},
		{"matrix count", []string{"matrix", "--count", "4611686018427387904", "sweeps"}, "--count 4611686018427387904: out of range"},
		{"regress threshold", []string{"regress", "--throughput-drop", "NaN", "a", "b"}, "--throughput-drop NaN: out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tc.args, &stdout, &stderr)
			var u usageError
			require.True(t, errors.As(err, &u), "want a usage error, got %v", err)
			require.ErrorContains(t, err, tc.want)
		})
	}
	require.NoFileExists(t, out)
}

func TestDurationOverflows(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"9999999999h": true, "1h99999999999999m": true, "+3000000h": true,
		"1h": false, "soon": false, "5x": false, "": false, "1.5.2s": false,
	} {
		require.Equal(t, want, durationOverflows(s), s)
	}
}
