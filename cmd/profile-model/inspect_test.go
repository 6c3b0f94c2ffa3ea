package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/corpus"
)

// The JSON field names are the command's interface (issue: events, kernels,
// distinct_kernels, kernel_time_us, graph_launches, device, steps,
// decode_bs, decode_bs_hist, coverage{gpu_span_s, window_s,
// steps_without_kernels}, warnings); the values are the corpus README's.
func TestInspectJSON(t *testing.T) {
	t.Parallel()
	path := corpus.Path(t, "traces/sglang-qwen3-8b-decode-mi300x.json.gz")
	var stdout, stderr bytes.Buffer
	// The flag may follow the trace.
	require.NoError(t, run(context.Background(), []string{"inspect", path, "--json"}, &stdout, &stderr))
	var got map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got))
	for _, k := range []string{"events", "kernels", "distinct_kernels", "kernel_time_us", "graph_launches", "device", "steps", "decode_bs", "decode_bs_hist", "coverage", "warnings"} {
		assert.Contains(t, got, k)
	}
	assert.Equal(t, "2058", string(got["events"]))
	assert.Equal(t, "555", string(got["kernels"]))
	assert.Equal(t, "27", string(got["distinct_kernels"]))
	assert.Equal(t, "9765.437", string(got["kernel_time_us"]), "exact to 0.001 µs, as written")
	assert.Equal(t, "1", string(got["graph_launches"]))
	assert.Equal(t, `"AMD Instinct MI300X"`, string(got["device"]))
	assert.JSONEq(t, `{"decode": 1}`, string(got["steps"]))
	assert.Equal(t, "32", string(got["decode_bs"]))
	assert.JSONEq(t, `{"32": 1}`, string(got["decode_bs_hist"]))
	assert.JSONEq(t, `[]`, string(got["warnings"]))
	var cov map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(got["coverage"], &cov))
	for _, k := range []string{"gpu_span_s", "window_s", "steps_without_kernels"} {
		assert.Contains(t, cov, k)
	}
}

// A generated ATOM-style trace with the profiler-buffer drop: the text
// summary shows the steps, the batch size and the coverage warning.
func TestInspectText(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "atom.json.gz")
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"synth", "--out", out, "--layers", "4", "--decode-steps", "40", "--prefill-steps", "1", "--bs", "16", "--python-per-step", "20", "--gpu-window", "0.02"}, &stdout, &stderr), stderr.String())
	stdout.Reset()
	require.NoError(t, run(context.Background(), []string{"inspect", out}, &stdout, &stderr))
	text := stdout.String()
	assert.Contains(t, text, "device       AMD Instinct MI3")
	assert.Contains(t, text, "decode bs    16")
	assert.Contains(t, text, "python_function")
	assert.Regexp(t, `steps        .*decode`, text)
	assert.Regexp(t, `warning: GPU kernels cover .* of a .* profile window \(\d+%\): \d+ of \d+ decode steps have no kernels`, text)
}

func TestInspectErrors(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"inspect"}, &stdout, &stderr)
	var u usageError
	require.True(t, errors.As(err, &u), "no trace is a usage error: %v", err)

	missing := filepath.Join(t.TempDir(), "none.json.gz")
	err = run(context.Background(), []string{"inspect", missing}, &stdout, &stderr)
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), missing), "names the file: %v", err)
}
