package tracing_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/tracing"
)

// A hand-written capture trace: PyTorch module scopes (python_function
// "nn.Module: …") around ops around launches, an op without shapes inside
// one with them, a warm-up launch that ran, and a launch on another thread
// outside every scope.
const smallCapture = `{"traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "capture_32_DECODE", "pid": 1, "tid": 1, "ts": 100.000, "dur": 900.000},
 {"ph": "X", "cat": "python_function", "name": "nn.Module: Qwen3Model_0", "pid": 1, "tid": 1, "ts": 110.000, "dur": 800.000},
 {"ph": "X", "cat": "python_function", "name": "nn.Module: Qwen3DecoderLayer_3", "pid": 1, "tid": 1, "ts": 120.000, "dur": 300.000},
 {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 130.000, "dur": 50.000,
  "args": {"External id": 7, "Input Dims": [[32, 4096], [6144, 4096], []], "Input type": ["c10::BFloat16", "c10::BFloat16", ""]}},
 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 135.000, "dur": 40.000,
  "args": {"External id": 8, "Input Dims": [], "Input type": []}},
 {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": 140.000, "dur": 5.000,
  "args": {"External id": 8, "kernel": "Cijk_gemm", "correlation": 21}},
 {"ph": "X", "cat": "cpu_op", "name": "aiter::rmsnorm", "pid": 1, "tid": 1, "ts": 200.000, "dur": 20.000,
  "args": {"External id": 9, "Input Dims": [[32, 4096]], "Input type": ["c10::BFloat16"]}},
 {"ph": "X", "cat": "cuda_runtime", "name": "hipModuleLaunchKernel", "pid": 1, "tid": 1, "ts": 205.000, "dur": 5.000,
  "args": {"External id": 9, "kernel": "rmsnorm_kernel", "correlation": 22}},
 {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": 50.000, "dur": 5.000,
  "args": {"External id": 3, "kernel": "warmup_fill", "correlation": 20}},
 {"ph": "X", "cat": "cuda_runtime", "name": "hipMemcpyAsync", "pid": 1, "tid": 1, "ts": 210.000, "dur": 5.000, "args": {"correlation": 23}},
 {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 2, "ts": 150.000, "dur": 5.000,
  "args": {"kernel": "side_kernel", "correlation": 24}},
 {"ph": "X", "cat": "kernel", "name": "warmup_fill", "pid": 0, "tid": 7, "ts": 60.000, "dur": 2.000, "args": {"correlation": 20}}
], "displayTimeUnit": "ms"}`

func TestReadCapture(t *testing.T) {
	t.Parallel()
	c, err := tracing.ReadCapture(context.Background(), strings.NewReader(smallCapture), "small.json")
	require.NoError(t, err)
	want := []tracing.CapturedKernel{
		{Name: "Cijk_gemm", Launch: "hipLaunchKernel", TS: 140_000, Module: "Qwen3Model_0.Qwen3DecoderLayer_3", Op: "aten::mm",
			InputDims: "[[32,4096],[6144,4096],[]]", InputTypes: `["c10::BFloat16","c10::BFloat16",""]`},
		{Name: "side_kernel", Launch: "hipLaunchKernel", TS: 150_000},
		{Name: "rmsnorm_kernel", Launch: "hipModuleLaunchKernel", TS: 205_000, Module: "Qwen3Model_0.Qwen3DecoderLayer_3", Op: "aiter::rmsnorm",
			InputDims: "[[32,4096]]", InputTypes: `["c10::BFloat16"]`},
	}
	require.Empty(t, cmp.Diff(want, c.Kernels))
	require.Equal(t, 1, c.Eager, "the warm-up launch ran")
	require.Equal(t, []string{"capture_32_DECODE"}, c.Labels)
	require.Equal(t, 2, c.Modules)
	ok, why := c.IsCapture()
	require.True(t, ok, why)
	require.Equal(t, `3 of 4 kernel launches never ran, annotated "capture_32_DECODE"`, why)
}

func TestReadCaptureErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"not an object", `[1, 2]`, "not a JSON object"},
		{"no traceEvents", `{"schemaVersion": 1}`, "no traceEvents array"},
		{"traceEvents not an array", `{"traceEvents": {}}`, "traceEvents is not an array"},
		{"truncated", `{"traceEvents": [{"ph": "X", "cat": "kernel"`, "capture trace is damaged"},
		{"bad event", `{"traceEvents": [{"ph": 3}]}`, "event 0"},
		{"gzip-like", "\x1f\x8bxx", "gzip header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tracing.ReadCapture(context.Background(), strings.NewReader(tt.in), "in.json")
			require.ErrorContains(t, err, tt.want)
			require.ErrorContains(t, err, "in.json")
		})
	}
}

// A directory given as the capture trace is named as one, not as a
// damaged file.
func TestLoadCaptureDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := tracing.LoadCapture(context.Background(), dir)
	require.ErrorContains(t, err, dir+" is a directory: pass one of its files")
	require.NotContains(t, err.Error(), "damaged")
}

func TestParseCaptureFileName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path        string
		bs, q, rank int
		ok          bool
	}{
		{"run/rank_1/capture_traces/bs_32_q_1_rank1.json.gz", 32, 1, 1, true},
		{"bs_8_rank0.json.gz", 8, 0, 0, true},
		{"bs_16_q_4_rank3.json", 16, 4, 3, true},
		{"m_ts_20260101_120000_1.pt.trace.json.gz", 0, 0, 0, false},
		{"bs_x_rank0.json.gz", 0, 0, 0, false},
	}
	for _, tt := range tests {
		bs, q, rank, ok := tracing.ParseCaptureFileName(tt.path)
		require.Equal(t, []any{tt.bs, tt.q, tt.rank, tt.ok}, []any{bs, q, rank, ok}, tt.path)
	}
	bs, q, rank, ok := tracing.ParseCaptureFileName(tracing.CaptureFileName(48, 2, 5))
	require.Equal(t, []any{48, 2, 5, true}, []any{bs, q, rank, ok})
}

func FuzzReadCapture(f *testing.F) {
	f.Add([]byte(smallCapture))
	f.Add([]byte(`{"traceEvents": []}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := tracing.ReadCapture(context.Background(), strings.NewReader(string(b)), "fuzz.json")
		if err == nil {
			c.IsCapture()
		}
	})
}
