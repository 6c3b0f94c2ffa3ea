package tracing_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/profiling/kernelmodel"
	"github.com/profile-model/profile-model/profiling/synth"
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

// ATOM's capture traces are recognised by their name and place even when
// the graph is too small for the launch count to tell: the same file
// elsewhere is an (odd) execution trace.
func TestTraceKindCaptureFile(t *testing.T) {
	t.Parallel()
	var runs []kernelmodel.KernelRun
	for i := range 5 {
		runs = append(runs, kernelmodel.KernelRun{Name: fmt.Sprintf("k%d", i), ShortName: "Embedding", Section: kernelmodel.SectionForward, Layer: -1, Pos: -1, Launch: "hipLaunchKernel"})
	}
	var buf bytes.Buffer
	_, err := synth.WriteCapture(context.Background(), &buf, synth.CaptureOptions{Runs: runs, BS: 1, MaxQ: 1})
	require.NoError(t, err)
	dir := t.TempDir()
	for _, tt := range []struct {
		path string
		kind string
	}{
		{filepath.Join(dir, "rank_0", tracing.CaptureDir, tracing.CaptureFileName(1, 1, 0)), tracing.KindCapture},
		{filepath.Join(dir, "rank_0", tracing.CaptureDir, "bs_1_rank0.json.gz"), tracing.KindCapture},
		{filepath.Join(dir, "rank_0", "bs_1_q_1_rank0.json.gz"), tracing.KindExecution},
		{filepath.Join(dir, "x.json.gz"), tracing.KindExecution},
	} {
		require.NoError(t, os.MkdirAll(filepath.Dir(tt.path), 0o755))
		require.NoError(t, os.WriteFile(tt.path, buf.Bytes(), 0o644))
		tr, err := tracing.Load(context.Background(), tt.path, tracing.Options{})
		require.NoError(t, err)
		require.Equal(t, tt.kind, tr.Kind, tt.path)
		require.Equal(t, tt.kind == tracing.KindCapture, diag.Has(tr.Warnings, diag.CaptureTrace), tt.path)
		// Its capture_graph_bs_1 step has no kernel by nature: no
		// profiler-buffer advice.
		require.False(t, diag.Has(tr.Warnings, diag.Coverage), "%s: %v", tt.path, tr.Warnings)
	}
}
