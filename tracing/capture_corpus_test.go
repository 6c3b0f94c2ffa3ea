package tracing_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/tracing"
)

// The two real capture traces of the corpus load with the capture reader,
// are recognised as capture traces, and name the module and shapes of the
// launches their module scopes hold.
func TestCaptureCorpus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file         string
		label        string
		minKernels   int
		moduleSubstr string
	}{
		{"traces/vllm-piecewise-capture-mi300x.pt.trace.json.gz", "capture_8192_PIECEWISE", 300, "GraphModule_0"},
		{"traces/sglang-capture-bs32-mi300x.json.gz", "capture_32_DECODE", 400, "DecoderLayer"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			c, err := tracing.LoadCapture(context.Background(), corpus.Path(t, tc.file))
			require.NoError(t, err)
			ok, why := c.IsCapture()
			require.True(t, ok, why)
			require.Contains(t, c.Labels, tc.label)
			require.GreaterOrEqual(t, len(c.Kernels), tc.minKernels)
			named, shaped := 0, 0
			for _, k := range c.Kernels {
				require.NotEmpty(t, k.Name, "ROCm launches name their kernel")
				if k.Module != "" {
					named++
				}
				if k.InputDims != "" {
					shaped++
				}
			}
			// Both were recorded with module scopes and shapes: every
			// captured launch hangs under a module and an op with shapes.
			require.Equal(t, len(c.Kernels), named)
			require.Equal(t, len(c.Kernels), shaped)
			t.Logf("%s: %d captured launches (%d ran), %d under a module scope, %d with input shapes, %d module scopes; %s", tc.file, len(c.Kernels), c.Eager, named, shaped, c.Modules, why)
			require.Contains(t, c.Kernels[len(c.Kernels)/2].Module, tc.moduleSubstr)
			for _, k := range c.Kernels[:3] {
				t.Logf("  %s | %s | %s %s", k.Name[:min(40, len(k.Name))], k.Module, k.Op, k.InputDims)
			}
		})
	}
}

// BenchmarkLoadCapture reads the corpus vLLM capture trace (122 257
// events, 2.3 MB gzip).
func BenchmarkLoadCapture(b *testing.B) {
	path := corpus.Path(b, "traces/vllm-piecewise-capture-mi300x.pt.trace.json.gz")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tracing.LoadCapture(context.Background(), path); err != nil {
			b.Fatal(err)
		}
	}
}

// The SGLang capture is of Qwen3-8B (36 decoder layers, hidden 4096) at
// batch 32: each layer's QKV projection is an aten::mm of [32, 4096] rows
// under Qwen3DecoderLayer_<i>.
func TestCaptureCorpusQwen3(t *testing.T) {
	t.Parallel()
	c, err := tracing.LoadCapture(context.Background(), corpus.Path(t, "traces/sglang-capture-bs32-mi300x.json.gz"))
	require.NoError(t, err)
	layers := map[string]bool{}
	for _, k := range c.Kernels {
		if strings.Contains(k.Module, ".QKVParallelLinear_") {
			require.Equal(t, "aten::mm", k.Op, k.Module)
			require.True(t, strings.HasPrefix(k.InputDims, "[[32,4096],"), "%s: %s", k.Module, k.InputDims)
			layers[strings.Split(k.Module, ".")[1]] = true
		}
	}
	require.Len(t, layers, 36)
}
