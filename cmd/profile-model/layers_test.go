package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/tracing"
	"github.com/stretchr/testify/require"
)

func TestLayersCommand(t *testing.T) {
	t.Parallel()
	trace := corpus.Path(t, "traces/vllm-decode-fullgraph-mi300x.json.gz")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(cfg, []byte(`{"model_type":"gpt_oss","num_hidden_layers":24}`), 0o644))
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"layers", trace, "--csv", filepath.Join(dir, "t.csv"), "--config", cfg, "--json"}, &out, &errb)
	require.NoError(t, err, errb.String())
	var got struct {
		Mode            string               `json:"mode"`
		Layers          int                  `json:"layers"`
		KernelsPerLayer []int                `json:"kernels_per_layer"`
		Positions       []inventory.Position `json:"positions"`
		Irregular       []any                `json:"irregular"`
		Warnings        []string             `json:"warnings"`
		CSV             string               `json:"csv"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.Equal(t, "robust", got.Mode)
	require.Equal(t, 24, got.Layers)
	require.Equal(t, []int{17, 18}, got.KernelsPerLayer)
	require.Len(t, got.Positions, 35)
	require.Len(t, got.Irregular, 1)
	require.Empty(t, got.Warnings, "the config's 24 layers agree")
	// decode bs 32: the conc32_ prefix goes in front of the given name.
	require.Equal(t, filepath.Join(dir, "conc32_t.csv"), got.CSV)
	rows, err := inventory.ReadLayerCSV(got.CSV)
	require.NoError(t, err)
	require.Len(t, rows, 35)

	// A second run does not overwrite the table without --force.
	err = run(context.Background(), []string{"layers", "--csv", filepath.Join(dir, "t.csv"), trace}, &out, &errb)
	require.ErrorContains(t, err, got.CSV+" exists: pass --force")

	// The text table names the irregular layer.
	out.Reset()
	require.NoError(t, run(context.Background(), []string{"layers", "--force", "--csv", filepath.Join(dir, "t.csv"), trace}, &out, &errb))
	require.Contains(t, out.String(), "24 layers per step, kernels per layer [17 18]")
	require.Contains(t, out.String(), "irregular layers: 1")
}

func TestLayersCommandErrors(t *testing.T) {
	t.Parallel()
	trace := corpus.Path(t, "traces/vllm-decode-fullgraph-mi300x.json.gz")
	dir := t.TempDir()
	bad := filepath.Join(dir, "rules.csv")
	require.NoError(t, os.WriteFile(bad, []byte("priority,pattern,category,provider,short_name\nx,foo,GEMM,a,\n"), 0o644))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad mode", []string{"layers", trace, "--mode", "magic"}, `--mode is "magic"`},
		{"no trace", []string{"layers"}, "no trace given"},
		{"compat without anchor", []string{"layers", trace, "--mode", "compat", "--csv", filepath.Join(dir, "x.csv")}, `anchor "pa_bf16" occurs 0 times`},
		{"bad rules", []string{"kernels", trace, "--rules", bad, "--csv", filepath.Join(dir, "k.csv")}, bad + ":2: priority"},
		{"bad config", []string{"layers", trace, "--config", bad}, "not a model config.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			err := run(context.Background(), tt.args, &out, &errb)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

// kernels: the inventory's totals add up to inspect's kernel_time_us.
func TestKernelsCommand(t *testing.T) {
	t.Parallel()
	trace := corpus.Path(t, "traces/sglang-qwen3-8b-decode-mi300x.json.gz")
	dir := t.TempDir()
	var out, errb bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"kernels", trace, "--json", "--csv", filepath.Join(dir, "kernels.csv")}, &out, &errb), errb.String())
	var got struct {
		KernelTime    json.Number        `json:"kernel_time_us"`
		OtherPct      float64            `json:"other_pct"`
		Categories    map[string]float64 `json:"categories"`
		KernelsCSV    string             `json:"kernels_csv"`
		CategoriesCSV string             `json:"categories_csv"`
		Kernels       []struct {
			Kind  string      `json:"kind"`
			Total json.Number `json:"total_us"`
		} `json:"kernels"`
	}
	dec := json.NewDecoder(&out)
	dec.UseNumber()
	require.NoError(t, dec.Decode(&got))
	tr, err := tracing.Load(context.Background(), trace, tracing.Options{})
	require.NoError(t, err)
	inspect := tr.Summarize().KernelTime.String()
	require.Equal(t, inspect, got.KernelTime.String())
	var sum int64
	for _, k := range got.Kernels {
		if k.Kind == "kernel" {
			sum += micros(t, k.Total.String())
		}
	}
	require.Equal(t, micros(t, inspect), sum, "per-kernel totals sum to inspect's kernel_time_us")
	require.Less(t, got.OtherPct, 1.0)
	require.Contains(t, got.Categories, "Paged attention (decode)")
	for _, p := range []string{got.KernelsCSV, got.CategoriesCSV} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.Positive(t, fi.Size())
	}
	require.Equal(t, filepath.Join(dir, "conc32_categories.csv"), got.CategoriesCSV)
}

// micros parses "123.456" into integer nanoseconds.
func micros(t *testing.T, s string) int64 {
	t.Helper()
	var whole, frac int64
	var dot bool
	var digits int
	for _, c := range s {
		switch {
		case c == '.':
			dot = true
		case c >= '0' && c <= '9' && !dot:
			whole = whole*10 + int64(c-'0')
		case c >= '0' && c <= '9' && dot:
			frac = frac*10 + int64(c-'0')
			digits++
		default:
			t.Fatalf("not a microsecond value: %q", s)
		}
	}
	require.Equal(t, 3, digits, "three decimals: %q", s)
	return whole*1000 + frac
}

// A trace without engine steps (a Hugging Face forward pass) gets the table
// of its profiler steps.
func TestLayersCommandProfilerSteps(t *testing.T) {
	t.Parallel()
	trace := corpus.Path(t, "traces/qwen1.5-0.5b-forward-h100.json.gz")
	var out, errb bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"layers", trace, "--json", "--csv", filepath.Join(t.TempDir(), "l.csv")}, &out, &errb), errb.String())
	var got struct {
		StepKind string `json:"step_kind"`
		Layers   int    `json:"layers"`
		CSV      string `json:"csv"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.Equal(t, "profiler_step", got.StepKind)
	require.Equal(t, 24, got.Layers, "Qwen1.5-0.5B has 24 layers")
	require.FileExists(t, got.CSV)
}

// TestLayersCommandPrefillCSV: robust mode writes the prefill steps' table
// beside the decode one, and it holds what --json reports for prefill.
func TestLayersCommandPrefillCSV(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.json.gz")
	var errb bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"synth", "--out", trace, "--layers", "4", "--decode-steps", "6", "--prefill-steps", "3", "--bs", "4"}, &bytes.Buffer{}, &errb), errb.String())
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"layers", trace, "--csv", filepath.Join(dir, "layer.csv"), "--json"}, &out, &errb), errb.String())
	var got struct {
		CSV        string `json:"csv"`
		PrefillCSV string `json:"prefill_csv"`
		Prefill    struct {
			Steps     int                  `json:"steps"`
			Positions []inventory.Position `json:"positions"`
		} `json:"prefill"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.Equal(t, filepath.Join(dir, "conc4_layer.csv"), got.CSV)
	require.Equal(t, filepath.Join(dir, "conc4_prefill_layer.csv"), got.PrefillCSV)
	require.Equal(t, 3, got.Prefill.Steps)
	require.NotEmpty(t, got.Prefill.Positions)
	rows, err := inventory.ReadLayerCSV(got.PrefillCSV)
	require.NoError(t, err)
	require.Len(t, rows, len(got.Prefill.Positions))
	for i, p := range got.Prefill.Positions {
		require.Equal(t, p.Kernel, rows[i].Kernel, "pos %d", i)
		require.InDelta(t, p.AvgUS, rows[i].AvgUS, 0.05, "pos %d", i)
	}
}

// TestTraceWarningsReachLayersAndKernels: what the reader found in the
// trace (here a kernel that gives "dur" twice) is said by layers and
// kernels too, on stderr so that --csv - stays a CSV, not only by inspect.
func TestTraceWarningsReachLayersAndKernels(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.json")
	var errb bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"synth", "--out", trace, "--layers", "2", "--decode-steps", "3", "--python-per-step", "-1"}, &bytes.Buffer{}, &errb), errb.String())
	data, err := os.ReadFile(trace)
	require.NoError(t, err)
	// The first kernel's duration, given a second time.
	at := bytes.Index(data, []byte(`"cat": "kernel"`))
	require.Positive(t, at)
	dur := at + bytes.Index(data[at:], []byte(`"dur": `))
	end := dur + bytes.IndexByte(data[dur:], ',')
	doubled := append(append(append([]byte{}, data[:end]...), []byte(`, "dur": 900.0`)...), data[end:]...)
	require.NoError(t, os.WriteFile(trace, doubled, 0o644))
	for _, args := range [][]string{
		{"layers", trace, "--csv", "-"},
		{"kernels", trace, "--csv", "-"},
		{"layers", trace, "--out", filepath.Join(dir, "l")},
		{"kernels", trace, "--out", filepath.Join(dir, "k")},
	} {
		t.Run(args[0]+" "+args[2], func(t *testing.T) {
			var out, errb bytes.Buffer
			require.NoError(t, run(context.Background(), args, &out, &errb))
			require.Contains(t, errb.String(), `warning: `+trace+`: traceEvents[`)
			require.Contains(t, errb.String(), `gives "dur" more than once: the last value (900.0) was used`)
			require.NotContains(t, out.String(), "warning:")
		})
	}
}

// kernels --explain: an SGEMM that cuDNN's convolution launched is
// Convolution by its op, cuBLAS's by its name, and the evidence says so;
// nothing is written; a name no kernel has is an error that says where to
// look.
func TestKernelsExplain(t *testing.T) {
	t.Parallel()
	trace := corpus.Path(t, "traces/ns-resolution-absolute-ts-cuda.pt.trace.json.gz")
	dir := t.TempDir()
	var out, errb bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"kernels", trace, "--out", dir, "--explain", "volta_sgemm_64x64_nt"}, &out, &errb), errb.String())
	text := out.String()
	require.Contains(t, text, "category:   Convolution (decided by launch_op)")
	require.Contains(t, text, "provider:   cuBLAS / cuBLASLt")
	require.Contains(t, text, "launching op (most of its time): aten::convolution_backward")
	require.Contains(t, text, "a whole convolution")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "--explain writes nothing")
	err = run(context.Background(), []string{"kernels", trace, "--explain", "no_such_kernel"}, &out, &errb)
	require.ErrorContains(t, err, `has "no_such_kernel" in its name`)
}

// TestLayersRoofline: with the model config, the robust table gets the
// roofline columns (every GEMM, and attention with the --context given);
// the compatible table stays the script's byte for byte.
func TestLayersRoofline(t *testing.T) {
	t.Parallel()
	trace := corpus.Path(t, "traces/sglang-qwen3-8b-decode-mi300x.json.gz")
	cfg := filepath.Join("..", "..", "fixtures", "models", "qwen3-8b", "config.json")
	dir := t.TempDir()
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"layers", trace, "--config", cfg, "--context", "1024", "--csv", "-"}, &out, &errb)
	require.NoError(t, err, errb.String())
	rows, err := inventory.ParseLayerCSV(bytes.NewReader(out.Bytes()))
	require.NoError(t, err)
	require.Contains(t, out.String(), ",role,achieved_tbs,achieved_tflops,intensity,bound,pct_roofline\n")
	roles := map[string]*inventory.Roof{}
	for _, r := range rows {
		if r.Roof != nil {
			roles[r.Role] = r.Roof
		}
	}
	for _, role := range []string{"QKV", "O-proj", "gate_up", "down", "attention"} {
		r := roles[role]
		require.NotNil(t, r, "%s has no roofline columns", role)
		require.Greater(t, r.PctRoof, 0.0, role)
		require.Greater(t, r.TBS, 0.0, role)
	}
	// Decode at batch 32: the weights dominate, the GEMMs are memory-bound.
	require.Equal(t, "memory", roles["QKV"].Bound)

	compat := func(args ...string) []byte {
		var o, e bytes.Buffer
		require.NoError(t, run(context.Background(), append([]string{"layers", trace, "--mode", "compat", "--anchor", "Cijk", "--csv", "-"}, args...), &o, &e), e.String())
		return o.Bytes()
	}
	require.Equal(t, compat(), compat("--config", cfg), "the compatible CSV does not change with the config")

	err = run(context.Background(), []string{"layers", trace, "--peaks", filepath.Join(dir, "p.csv"), "--csv", "-"}, &out, &errb)
	require.ErrorContains(t, err, "need --config")
	bad := filepath.Join(dir, "bad-peaks.csv")
	require.NoError(t, os.WriteFile(bad, []byte("gpu,match\n"), 0o644))
	err = run(context.Background(), []string{"layers", trace, "--config", cfg, "--peaks", bad, "--csv", "-"}, &out, &errb)
	require.ErrorContains(t, err, bad+": header")
}

// TestLayersConfigWrongType: a config field of the wrong type is an error
// naming it (it was dropped without a word, leaving roofline positions
// blank), and so are more KV heads than heads (they gave 127%).
func TestLayersConfigWrongType(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.json")
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), synthArgs(trace), &stdout, &stderr))
	good, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "models", "minimax-m2", "config.json"))
	require.NoError(t, err)
	for name, c := range map[string]struct{ from, to, want string }{
		"string count":  {`"num_key_value_heads": 8`, `"num_key_value_heads": "8"`, `num_key_value_heads: "8" is not a number`},
		"more kv heads": {`"num_key_value_heads": 8`, `"num_key_value_heads": 4096`, "num_key_value_heads 4096 is more than num_attention_heads"},
	} {
		require.Contains(t, string(good), c.from)
		cfg := filepath.Join(dir, name+".json")
		require.NoError(t, os.WriteFile(cfg, []byte(strings.Replace(string(good), c.from, c.to, 1)), 0o644))
		err := run(context.Background(), []string{"layers", trace, "--out", filepath.Join(dir, name), "--config", cfg}, &stdout, &stderr)
		require.ErrorContains(t, err, c.want, name)
		require.ErrorContains(t, err, cfg, name)
	}
}

// TestJSONAloneWritesNothing: layers --json and kernels --json without
// --csv or --out print and write nothing, so CSVs of an earlier run do
// not make them fail (layers --json once refused: "exists: pass --force").
func TestJSONAloneWritesNothing(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	var out, errb bytes.Buffer
	require.NoError(t, run(context.Background(), synthArgs("t.json"), &out, &errb))
	for _, cmd := range []string{"layers", "kernels"} {
		require.NoError(t, run(context.Background(), []string{cmd, "t.json"}, &out, &errb), errb.String())
		before, err := os.ReadDir(filepath.Join(dir, "profile-model-out", "t"))
		require.NoError(t, err)
		out.Reset()
		require.NoError(t, run(context.Background(), []string{cmd, "t.json", "--json"}, &out, &errb), "%s --json: %s", cmd, errb.String())
		require.True(t, json.Valid(out.Bytes()), "%s --json printed JSON", cmd)
		after, err := os.ReadDir(filepath.Join(dir, "profile-model-out", "t"))
		require.NoError(t, err)
		require.Equal(t, len(before), len(after))
	}
}

// TestLayersUnknownBatch: a trace whose steps carry no batch labels says
// its decode batch size is unknown (it said 0), and --bs gives the
// roofline it could not compute.
func TestLayersUnknownBatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := filepath.Join(dir, "pw.json")
	var out, errb bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"synth", "--out", trace, "--piecewise", "--layers", "4", "--decode-steps", "16"}, &out, &errb))
	cfg := filepath.Join("..", "..", "fixtures", "models", "minimax-m2", "config.json")
	out.Reset()
	errb.Reset()
	require.NoError(t, run(context.Background(), []string{"layers", trace, "--out", filepath.Join(dir, "a"), "--config", cfg}, &out, &errb))
	require.Contains(t, out.String(), "decode batch size unknown")
	require.NotContains(t, out.String(), "decode batch size 0")
	require.Contains(t, errb.String(), "no decode batch size in the trace")
	require.Contains(t, errb.String(), "--bs")
	out.Reset()
	errb.Reset()
	require.NoError(t, run(context.Background(), []string{"layers", trace, "--out", filepath.Join(dir, "b"), "--config", cfg, "--bs", "8", "--json"}, &out, &errb))
	var got struct {
		Roofline *struct {
			Points []json.RawMessage `json:"points"`
		} `json:"roofline"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.NotNil(t, got.Roofline, errb.String())
	require.NotEmpty(t, got.Roofline.Points)
	require.NotContains(t, errb.String(), "no decode batch size")
}
