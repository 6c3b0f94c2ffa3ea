package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/profiling/synth"
)

func TestSynthCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, truthPath := filepath.Join(dir, "t.json.gz"), filepath.Join(dir, "truth.json")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"synth", "--out", out, "--truth", truthPath, "--layers", "3", "--decode-steps", "12", "--prefill-steps", "1", "--bs", "16", "--seed", "4", "--python-per-step", "10"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("synth: %v\n%s", err, stderr.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		t.Errorf("%s is not gzip", out)
	}
	raw, err := os.ReadFile(truthPath)
	if err != nil {
		t.Fatal(err)
	}
	var truth synth.Truth
	if err := json.Unmarshal(raw, &truth); err != nil {
		t.Fatalf("truth file: %v", err)
	}
	if truth.Steps["decode"] != 12 || truth.Steps["prefill"] != 1 || truth.DecodeBS != 16 || len(truth.Positions) == 0 {
		t.Errorf("truth = steps %v, decode bs %d, %d positions", truth.Steps, truth.DecodeBS, len(truth.Positions))
	}
	if !strings.Contains(stdout.String(), "12 decode + 1 prefill steps") {
		t.Errorf("stdout = %q", stdout.String())
	}
}

func TestSynthCommandFromLayerCSVAndSize(t *testing.T) {
	t.Parallel()
	csv := filepath.Join(corpus.Dir(t), "atom-minimax-m2.5", "conc32_layer.csv")
	dir := t.TempDir()
	out, truthPath := filepath.Join(dir, "t.json"), filepath.Join(dir, "truth.json")
	var stdout, stderr bytes.Buffer
	// --target-mb sizes the trace before any GPU-window drop, so check it alone.
	sized := filepath.Join(dir, "sized.json")
	if err := run(context.Background(), []string{"synth", "--out", sized, "--layer-csv", csv, "--bs", "32", "--target-mb", "20"}, &stdout, &stderr); err != nil {
		t.Fatalf("synth --target-mb: %v\n%s", err, stderr.String())
	}
	st, err := os.Stat(sized)
	if err != nil {
		t.Fatal(err)
	}
	// --target-mb picks whole decode steps: within one step (~2 MB) of 20 MB.
	if mb := float64(st.Size()) / 1e6; mb < 17 || mb > 23 {
		t.Errorf("--target-mb 20 wrote %.1f MB", mb)
	}
	stdout.Reset()
	err = run(context.Background(), []string{"synth", "--out", out, "--truth", truthPath, "--layer-csv", csv, "--bs", "32", "--decode-steps", "7", "--gpu-window", "0.05"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("synth: %v\n%s", err, stderr.String())
	}
	raw, err := os.ReadFile(truthPath)
	if err != nil {
		t.Fatal(err)
	}
	var truth synth.Truth
	if err := json.Unmarshal(raw, &truth); err != nil {
		t.Fatal(err)
	}
	if len(truth.KernelsPerLayer) != 1 || truth.KernelsPerLayer[0] != 20 {
		t.Errorf("kernels per layer = %v, want conc32_layer.csv's 20", truth.KernelsPerLayer)
	}
	if truth.DecodeStepsWithoutKernels == 0 || !strings.Contains(stdout.String(), "decode steps have no kernels") {
		t.Errorf("--gpu-window 0.05 dropped %d decode steps; stdout %q", truth.DecodeStepsWithoutKernels, stdout.String())
	}
}

func TestSynthCommandErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"no output", []string{"synth"}, true, "--out"},
		{"both outputs", []string{"synth", "--out", "a.json", "--atom-dir", dir}, true, "exactly one"},
		{"bad flag", []string{"synth", "--bogus"}, true, "bogus"},
		{"stray argument", []string{"synth", "--out", "a.json", "extra"}, true, "extra"},
		{"negative window", []string{"synth", "--out", "a.json", "--gpu-window", "-1"}, true, "out of range"},
		{"negative window duration", []string{"synth", "--out", "a.json", "--gpu-window", "-1s"}, true, "negative"},
		{"window not a time", []string{"synth", "--out", "a.json", "--gpu-window", "soon"}, true, "not a duration"},
		{"truth over the trace", []string{"synth", "--out", filepath.Join(dir, "t.json"), "--truth", filepath.Join(dir, ".", "t.json")}, true, "--out and --truth are the same file"},
		{"zero batch", []string{"synth", "--out", filepath.Join(dir, "z.json"), "--bs", "0"}, true, "--bs 0: out of range (want 1 to"},
		{"missing table", []string{"synth", "--out", filepath.Join(dir, "m.json"), "--layer-csv", filepath.Join(dir, "conc8_layer.csv")}, false, "conc8_layer.csv"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), c.args, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want one mentioning %q", err, c.want)
			}
			var u usageError
			if errors.As(err, &u) != c.usage {
				t.Errorf("usage error = %v, want %v", errors.As(err, &u), c.usage)
			}
		})
	}
}

func TestSynthCommandATOMDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"synth", "--atom-dir", dir, "--model", "Qwen/Qwen3-8B", "--layers", "2", "--decode-steps", "3", "--python-per-step", "-1"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("synth: %v\n%s", err, stderr.String())
	}
	files, err := filepath.Glob(filepath.Join(dir, "rank_0", "Qwen3-8B_ts_*_*.pt.trace.json.gz"))
	if err != nil || len(files) != 1 {
		t.Fatalf("rank_0 holds %v (%v), want one Qwen3-8B_ts_<time>_<ms>.pt.trace.json.gz", files, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "rank_0", "*.json")); len(left) != 0 {
		t.Errorf("the .json was left behind: %v", left)
	}
}

// The compatible layer CSV byte for byte: a trace regenerated from each
// corpus conc{N}_layer.csv with synth --exact gives that file back from
// layers --mode compat, CRLF line ends, Python's quoting and "void "
// stripped included.
func TestSynthExactCompatByteForByte(t *testing.T) {
	for _, bs := range []int{4, 8, 16, 32} {
		t.Run(fmt.Sprintf("conc%d", bs), func(t *testing.T) {
			src := corpus.Path(t, fmt.Sprintf("atom-minimax-m2.5/conc%d_layer.csv", bs))
			dir := t.TempDir()
			trace := filepath.Join(dir, "trace.json")
			var out, errb bytes.Buffer
			require.NoError(t, run(context.Background(), []string{"synth", "--exact", "--layer-csv", src, "--bs", fmt.Sprint(bs), "--python-per-step", "-1", "--prefill-steps", "1", "--out", trace}, &out, &errb), errb.String())
			raw, err := os.ReadFile(trace)
			require.NoError(t, err)
			require.Contains(t, string(raw), `"name": "void `, "the trace names kernels as a demangler does")
			got := filepath.Join(dir, "compat.csv")
			require.NoError(t, run(context.Background(), []string{"layers", trace, "--mode", "compat", "--csv", got}, &out, &errb), errb.String())
			want, err := os.ReadFile(src)
			require.NoError(t, err)
			have, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("conc%d_compat.csv", bs)))
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, have), "cmp %s %s: differ\n%s", src, got, cmp.Diff(string(want), string(have)))
		})
	}
}

// The GPU-event windows of synth and serve-sim take a duration or seconds.
func TestParseWindow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"30s", 30 * time.Second}, {"250ms", 250 * time.Millisecond}, {"1.5m", 90 * time.Second},
		{"30", 30 * time.Second}, {"0.02", 20 * time.Millisecond}, {"0", 0},
	} {
		got, err := parseWindow(c.in)
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got, c.in)
	}
	for _, bad := range []string{"-1", "-2s", "x", "", "NaN", "1e30"} {
		_, err := parseWindow(bad)
		require.Error(t, err, bad)
	}
}
