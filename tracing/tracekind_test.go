package tracing_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/diag"
	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/tracing"
)

// A capture trace and a GPU-only trace say what they are and what cannot be
// derived from them; execution traces, dense or sparse, are not mistaken
// for either.
func TestTraceKind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		kind string
		code diag.Code
	}{
		{"traces/vllm-piecewise-capture-mi300x.pt.trace.json.gz", tracing.KindCapture, diag.CaptureTrace},
		{"traces/sglang-capture-bs32-mi300x.json.gz", tracing.KindCapture, diag.CaptureTrace},
		{"traces/gpu-only-mi210.json.gz", tracing.KindGPUOnly, diag.GPUOnly},
		{"traces/vllm-decode-fullgraph-mi300x.json.gz", tracing.KindExecution, ""},
		{"traces/sglang-qwen3-8b-decode-mi300x.json.gz", tracing.KindExecution, ""},
		{"traces/triton-example-cuda.json.gz", tracing.KindExecution, ""},
		{"traces/trace-diff-test-v100-graphs.json.gz", tracing.KindExecution, ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			tr, err := tracing.Load(context.Background(), corpus.Path(t, tt.file), tracing.Options{})
			require.NoError(t, err)
			require.Equal(t, tt.kind, tr.Kind)
			require.Equal(t, tt.kind, tr.Summarize().TraceKind)
			for _, c := range []diag.Code{diag.CaptureTrace, diag.GPUOnly} {
				require.Equal(t, c == tt.code, diag.Has(tr.Warnings, c), "warning %s", c)
			}
		})
	}
}
