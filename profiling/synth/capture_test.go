package synth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/kernelmodel"
	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
)

// A written capture trace reads back with the capture reader as the
// forward pass it was written from, each kernel with its module and
// shapes, and the trace loader calls it a capture trace.
func TestWriteCaptureRoundTrip(t *testing.T) {
	t.Parallel()
	m := kernelmodel.Default()
	runs := m.DecodeStep(32, 0, rand.New(rand.NewPCG(1, 2)))
	var buf bytes.Buffer
	n, err := synth.WriteCapture(context.Background(), &buf, synth.CaptureOptions{Runs: runs, BS: 32, MaxQ: 1})
	require.NoError(t, err)
	capPath := filepath.Join(t.TempDir(), "capture.json")
	require.NoError(t, os.WriteFile(capPath, buf.Bytes(), 0o644))
	c, err := tracing.LoadCapture(context.Background(), capPath)
	require.NoError(t, err)
	ok, why := c.IsCapture()
	require.True(t, ok, why)
	require.Equal(t, []string{"capture_graph_bs_32"}, c.Labels)
	mods := kernelmodel.Modules(runs, 32)
	var want []tracing.CapturedKernel
	for i, r := range runs {
		if r.Section == kernelmodel.SectionForward {
			want = append(want, tracing.CapturedKernel{Name: r.Name, Launch: r.Launch, Module: mods[i].Path, Op: mods[i].Op})
		}
	}
	require.Len(t, c.Kernels, n)
	require.Len(t, c.Kernels, len(want))
	for i, k := range c.Kernels {
		require.Equal(t, want[i].Name, k.Name, "kernel %d", i)
		require.Equal(t, want[i].Module, k.Module, "kernel %d", i)
		require.Equal(t, want[i].Op, k.Op, "kernel %d", i)
		require.True(t, strings.HasPrefix(k.InputDims, "[["), "kernel %d dims %q", i, k.InputDims)
	}
	// Layer 3's expert GEMMs take the graph's 32 rows.
	found := false
	for _, k := range c.Kernels {
		if k.Module == "model.layers.3.mlp.experts" && k.Op == "aiter::ck_moe_stage1" {
			require.Equal(t, "[[32,3072],[256,3072,3072]]", k.InputDims)
			found = true
		}
	}
	require.True(t, found, "layer 3's first expert GEMM")

	path := filepath.Join(t.TempDir(), tracing.CaptureDir, tracing.CaptureFileName(32, 1, 0))
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	tr, err := tracing.Load(context.Background(), path, tracing.Options{})
	require.NoError(t, err)
	require.Equal(t, tracing.KindCapture, tr.Kind)
}

// The warmup forward before the capture, as ATOM's own trace parser reads
// it: the window from the file's first event to capture_graph_bs_<bs>
// holds every kernel of the step but the sampler, run once in order, each
// correlated to a launch in the window and inside a GPU annotation of its
// module on its own track; the capture span comes after.
func TestWriteCaptureWarmupForward(t *testing.T) {
	t.Parallel()
	m := kernelmodel.Default()
	runs := m.DecodeStep(8, 0, rand.New(rand.NewPCG(3, 4)))
	var buf bytes.Buffer
	_, err := synth.WriteCapture(context.Background(), &buf, synth.CaptureOptions{Runs: runs, BS: 8, MaxQ: 1})
	require.NoError(t, err)
	var doc struct {
		TraceEvents []struct {
			Ph, Cat, Name string
			PID, TID      int64
			TS, Dur       float64
			Args          map[string]any
		} `json:"traceEvents"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	first, capAt := math.Inf(1), math.NaN()
	for _, e := range doc.TraceEvents {
		if e.Ph == "X" {
			first = min(first, e.TS)
			if e.Cat == "user_annotation" && e.Name == "capture_graph_bs_8" {
				capAt = e.TS
			}
		}
	}
	require.False(t, math.IsNaN(capAt), "a capture_graph_bs_8 span")
	launches := map[float64]bool{}
	type ev = struct {
		name     string
		ts, end  float64
		pid, tid int64
	}
	var kernels, gpuAnns []ev
	for _, e := range doc.TraceEvents {
		if e.Ph != "X" || e.TS < first || e.TS >= capAt {
			continue
		}
		switch e.Cat {
		case "cuda_runtime":
			launches[e.Args["correlation"].(float64)] = true
		case "kernel":
			require.True(t, launches[e.Args["correlation"].(float64)], "%s: launched in the window", e.Name)
			kernels = append(kernels, ev{e.Name, e.TS, e.TS + e.Dur, e.PID, e.TID})
		case "gpu_user_annotation":
			gpuAnns = append(gpuAnns, ev{e.Name, e.TS, e.TS + e.Dur, e.PID, e.TID})
		}
	}
	var want []string
	mods := kernelmodel.Modules(runs, 8)
	wantMod := map[int]string{}
	for i, r := range runs {
		if r.Section != kernelmodel.SectionSample {
			if mods[i].Path != "" {
				wantMod[len(want)] = "nn.Module: " + mods[i].Path
			}
			want = append(want, r.Name)
		}
	}
	require.Len(t, kernels, len(want))
	for i, k := range kernels {
		require.Equal(t, want[i], k.name, "warmup kernel %d", i)
		in := ""
		for _, a := range gpuAnns {
			if a.pid == k.pid && a.tid == k.tid && a.ts <= k.ts && k.end <= a.end {
				in = a.name
			}
		}
		if w, ok := wantMod[i]; ok {
			require.Equal(t, w, in, "warmup kernel %d (%s) is inside its module's GPU annotation", i, k.name)
		}
	}
}

// With two streams, the warmup forward runs each side-stream kernel on
// its own stream (ATOM's parser matches the replay stream by stream).
func TestWriteCaptureSideStream(t *testing.T) {
	t.Parallel()
	runs := kernelmodel.Default().DecodeStep(8, 0, rand.New(rand.NewPCG(3, 4)))
	synth.SideStream(runs)
	side := 0
	for _, r := range runs {
		if r.Stream != 0 {
			side++
		}
	}
	require.Positive(t, side)
	var buf bytes.Buffer
	_, err := synth.WriteCapture(context.Background(), &buf, synth.CaptureOptions{Runs: runs, BS: 8, MaxQ: 1})
	require.NoError(t, err)
	var doc struct {
		TraceEvents []struct {
			Ph, Cat string
			TID     int64
			Args    map[string]any
		} `json:"traceEvents"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	onSide := 0
	for _, e := range doc.TraceEvents {
		if e.Ph == "X" && e.Cat == "kernel" && e.TID == 1 {
			require.Equal(t, float64(1), e.Args["stream"])
			onSide++
		}
	}
	require.Equal(t, side, onSide, "every side-stream kernel of the warmup on stream 1")
}
