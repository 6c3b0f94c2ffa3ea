package tracing_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/tracing"
)

// corpusTable is the table of ../shared/corpus/README.md, typed in: it is
// independent truth about the real traces (counted by other tools).
var corpusTable = []struct {
	file          string
	events        int64
	kernels       int
	distinct      int
	kernelTimeUS  string
	graphLaunches int
	device        string // README's device column; see deviceOK
	vendor        string
	era           string // from the README's description of each file
}{
	{"sglang-qwen3-8b-decode-mi300x.json.gz", 2058, 555, 27, "9765.437", 1, "AMD Instinct MI300X", "amd", "kineto-relative-ts/roctracer"},
	{"sglang-qwen3-8b-prefilldecode-mi300x.json.gz", 60315, 527, 27, "492773.592", 0, "AMD Instinct MI300X", "amd", "kineto-relative-ts/roctracer"},
	{"vllm-decode-fullgraph-mi300x.json.gz", 1993, 425, 24, "10674.517", 1, "(none given)", "amd", "kineto-relative-ts/roctracer"},
	{"qwen1.5-0.5b-forward-mi300x.json.gz", 18090, 1516, 28, "43062.042", 0, "AMD Instinct MI300X VF", "amd", "kineto-relative-ts/roctracer"},
	{"qwen1.5-0.5b-forward-h100.json.gz", 18221, 1465, 26, "45432.698", 0, "NVIDIA H100 80GB HBM3", "nvidia", "kineto-relative-ts/cupti"},
	{"minitoy-train-mi250-rocm62.json.gz", 220, 14, 12, "110.881", 0, "MI250 (ROCm 6.2)", "amd", "kineto-relative-ts/roctracer"},
	{"triton-example-cuda.json.gz", 71, 1, 1, "1.760", 0, "NVIDIA A100", "nvidia", "kineto-relative-ts/cupti"},
	{"ns-resolution-absolute-ts-cuda.pt.trace.json.gz", 68692, 4350, 77, "468153.602", 0, "Tesla V100", "nvidia", "kineto-absolute-ns/cupti"},
	{"resnet50-legacy-2021-v100.pt.trace.json.gz", 75718, 8772, 67, "591532.000", 0, "Tesla V100", "nvidia", "legacy-2021/cupti"},
	{"trace-diff-control-a100.json.gz", 109123, 8568, 170, "446813.000", 0, "NVIDIA A100", "nvidia", "kineto-absolute-us/cupti"},
	{"trace-diff-test-v100-graphs.json.gz", 105167, 9876, 131, "801858.000", 12, "Tesla V100", "nvidia", "kineto-absolute-us/cupti"},
}

// deviceOK compares the device name with the README's column, which
// abbreviates names ("NVIDIA A100" for "NVIDIA A100-PG509-200"), writes
// "(none given)" for empty names, and describes the MI250 file whose ROCm 6.2
// deviceProperties only say "AMD Radeon Graphics".
func deviceOK(readme, got string) bool {
	switch {
	case readme == "(none given)":
		return got == ""
	case strings.HasPrefix(readme, "MI250"):
		return got == "AMD Radeon Graphics"
	}
	return strings.HasPrefix(got, readme)
}

func TestCorpusTable(t *testing.T) {
	t.Parallel()
	for _, row := range corpusTable {
		t.Run(row.file, func(t *testing.T) {
			t.Parallel()
			path := corpus.Path(t, "traces/"+row.file)
			var calls, last, size int64
			tr, err := tracing.Load(context.Background(), path, tracing.Options{Progress: func(done, total int64) {
				require.GreaterOrEqual(t, done, last, "progress only grows")
				calls, last, size = calls+1, done, total
			}})
			require.NoError(t, err)
			fi, err := os.Stat(path)
			require.NoError(t, err)
			assert.Positive(t, calls)
			assert.Equal(t, fi.Size(), size, "progress total is the file size")
			assert.Equal(t, fi.Size(), last, "the whole file was read")
			s := tr.Summarize()
			assert.Equal(t, row.events, s.Events, "events")
			assert.Equal(t, row.kernels, s.Kernels, "kernels")
			assert.Equal(t, row.distinct, s.DistinctKernels, "distinct kernels")
			assert.Equal(t, row.kernelTimeUS, s.KernelTime.String(), "Σ kernel dur (µs)")
			assert.Equal(t, row.graphLaunches, s.GraphLaunches, "graph launches")
			assert.True(t, deviceOK(row.device, s.Device), "device %q, README says %q", s.Device, row.device)
			assert.Equal(t, row.vendor, tr.Vendor, "vendor")
			assert.Equal(t, row.era, tr.Era, "format era")
			var sum int64
			for _, n := range s.EventsByCategory {
				sum += n
			}
			assert.Equal(t, s.Events, sum, "events by category add up to all events")
			for i := 1; i < len(tr.Kernels); i++ {
				require.LessOrEqual(t, tr.Kernels[i-1].Start, tr.Kernels[i].Start, "kernels sorted by start")
			}
		})
	}
}

// The two MI300X decode traces replay one HIP graph that owns all but the
// few eagerly launched kernels (README: "one hipGraphLaunch owns hundreds of
// kernels that share its correlation id"; replayed kernels are written with
// kind "Dispatch Task").
func TestCorpusGraphReplay(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"sglang-qwen3-8b-decode-mi300x.json.gz", "vllm-decode-fullgraph-mi300x.json.gz"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			tr, err := tracing.Load(context.Background(), corpus.Path(t, "traces/"+file), tracing.Options{})
			require.NoError(t, err)
			require.Len(t, tr.Graphs, 1)
			g := tr.Graphs[0]
			assert.Contains(t, g.Launch.Name, "GraphLaunch")
			kernels := 0
			for i := range tr.Kernels {
				k := &tr.Kernels[i]
				if k.Kind != tracing.KindKernel {
					continue
				}
				kernels++
				assert.Equal(t, k.Graph >= 0, k.Replayed, "kernel %d: replayed iff owned by a graph", i)
				if k.Graph >= 0 {
					assert.Equal(t, g.Launch.Correlation, k.Correlation)
				}
			}
			owned := len(g.Kernels)
			eager := kernels - owned
			t.Logf("%s: graph owns %d of %d kernels, %d eager", file, owned, kernels, eager)
			assert.Greater(t, owned, 400, "the graph owns hundreds of kernels")
			assert.LessOrEqual(t, eager, 15, "all but a handful of kernels are replayed")
			for i := 1; i < len(g.Kernels); i++ {
				assert.Less(t, g.Kernels[i-1], g.Kernels[i], "graph kernels in start order")
			}
		})
	}
}

// The engine-labelled corpus traces: SGLang's step[DECODE bs=32] inside
// vLLM-style execute_32_context_0(...)_generation_32(...), and vLLM's
// execute label, each one decode step of 32 sequences.
func TestCorpusSteps(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file   string
		kind   tracing.StepKind
		bs     int
		decode int
	}{
		{"sglang-qwen3-8b-decode-mi300x.json.gz", tracing.StepDecode, 32, 32},
		{"vllm-decode-fullgraph-mi300x.json.gz", tracing.StepDecode, 32, 32},
		{"sglang-qwen3-8b-prefilldecode-mi300x.json.gz", tracing.StepPrefill, 15, 0},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			tr, err := tracing.Load(context.Background(), corpus.Path(t, "traces/"+c.file), tracing.Options{})
			require.NoError(t, err)
			require.Len(t, tr.Steps, 1)
			st := tr.Steps[0]
			assert.Equal(t, c.kind, st.Kind)
			assert.Equal(t, c.bs, st.BS)
			assert.Equal(t, tracing.SourceCPUAnnotation, st.Source)
			assert.NotEmpty(t, st.Kernels)
			assert.Equal(t, c.decode, tr.DecodeBS)
			assert.Empty(t, tr.Warnings)
		})
	}
}

// Timestamps: relative traces get baseTimeNanoseconds added (exact integer
// ns); the 19-digit absolute era keeps its last digit.
func TestCorpusTimestamps(t *testing.T) {
	t.Parallel()
	tr, err := tracing.Load(context.Background(), corpus.Path(t, "traces/triton-example-cuda.json.gz"), tracing.Options{})
	require.NoError(t, err)
	require.Len(t, tr.Kernels, 1)
	// "ts": 2413669097444.592 µs after baseTimeNanoseconds 1727743122000000000.
	assert.Equal(t, int64(1727743122000000000+2413669097444592), tr.Kernels[0].Start)
	assert.Equal(t, int64(1760), tr.Kernels[0].Dur)
	// Launched by the driver call cuLaunchKernel (cat cuda_driver), correlation 35.
	li, ok := tr.LaunchIndex()[tr.Kernels[0].Correlation]
	require.True(t, ok)
	assert.Equal(t, "cuLaunchKernel", tr.Launches[li].Name)
	assert.Equal(t, int64(35), tr.Launches[li].Correlation)

	tr, err = tracing.Load(context.Background(), corpus.Path(t, "traces/ns-resolution-absolute-ts-cuda.pt.trace.json.gz"), tracing.Options{})
	require.NoError(t, err)
	found := false
	for _, k := range tr.Kernels {
		// "ts": 1712195495505582.988, "dur": 4.928 (a CatArrayBatchedCopy kernel).
		if k.Start == 1712195495505582988 {
			found = true
			assert.Equal(t, int64(4928), k.Dur)
			// "grid": [4, 106, 1], "block": [128, 1, 1], "stream": 7, "correlation": 135071.
			assert.Equal(t, tracing.Dims{Grid: [3]int32{4, 106, 1}, Block: [3]int32{128, 1, 1}}, tr.Dims[k.Dims])
			assert.Equal(t, int32(7), k.Stream)
			assert.Equal(t, int64(135071), k.Correlation)
		}
	}
	assert.True(t, found, "kernel at ts 1712195495505582.988 µs kept to the nanosecond")
	// A Kernel stays small and pointer-free: a large trace keeps millions.
	assert.LessOrEqual(t, unsafe.Sizeof(tracing.Kernel{}), uintptr(64))
	assert.Zero(t, tr.BaseNS)
}
