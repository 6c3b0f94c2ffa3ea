package inventory_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
)

// vLLM's piecewise graphs: N+1 graph launches per decode step with the
// attention launched eagerly between them and no step annotation. Steps
// come from the period of the launch sequence, and the robust layers across
// the pieces and the eager kernels find the real layer and its count,
// with and without tensor-parallel all-reduces inside the pieces.
func TestPiecewiseStepsAndLayers(t *testing.T) {
	t.Parallel()
	for _, layers := range []int{4, 16, 62} {
		for _, tp := range []bool{false, true} {
			t.Run(fmt.Sprintf("layers=%d tp=%v", layers, tp), func(t *testing.T) {
				t.Parallel()
				path := filepath.Join(t.TempDir(), "pw.json")
				f, err := os.Create(path)
				require.NoError(t, err)
				truth, err := synth.Generate(context.Background(), f, synth.GenerateOptions{
					Layers: layers, DecodeSteps: 7, PrefillSteps: 1, BS: 8, Seed: uint64(layers), PythonPerStep: -1,
					Piecewise: true, TPAllReduce: tp,
				})
				require.NoError(t, err)
				require.NoError(t, f.Close())
				tr, err := tracing.Load(context.Background(), path, tracing.Options{})
				require.NoError(t, err)
				require.Len(t, tr.Graphs, truth.Steps["decode"]*(layers+1), "N+1 graph launches per decode step")
				require.Empty(t, tr.Annotations, "no step annotation to go by")
				got := map[string]int{}
				for _, st := range tr.Steps {
					got[string(st.Kind)]++
					require.Equal(t, "launch_period", st.Source, "steps found by the period of the launch sequence")
				}
				require.Equal(t, truth.Steps, got)
				lt, err := inventory.DecodeLayers(context.Background(), tr, inventory.LayerOptions{})
				require.NoError(t, err)
				require.Equal(t, truth.Layers, lt.Layers)
				require.Equal(t, truth.KernelsPerLayer, lt.KernelsPerLayer)
				require.Empty(t, lt.Irregular)
				requireMatchesTruth(t, lt.Positions, truth.Positions)
			})
		}
	}
}

// On a fast GPU the host is slow to launch each graph piece: the GPU idles
// between the pieces of a step as long as between steps, and gaps cannot
// tell them apart. The engine's step function (vLLM's execute_model in the
// Python frames) still does, and without the frames the period of the
// launch sequence does: the true steps and the layer count come back.
func TestPiecewiseEqualGapsStepsFromStepFunction(t *testing.T) {
	t.Parallel()
	const layers = 16
	path := filepath.Join(t.TempDir(), "pw.json")
	f, err := os.Create(path)
	require.NoError(t, err)
	truth, err := synth.Generate(context.Background(), f, synth.GenerateOptions{
		Layers: layers, DecodeSteps: 9, PrefillSteps: 1, BS: 8, Seed: 5, PythonPerStep: 20,
		Piecewise: true, PiecewiseEqualGaps: true,
	})
	require.NoError(t, err)
	require.NoError(t, f.Close())
	tr, err := tracing.Load(context.Background(), path, tracing.Options{})
	require.NoError(t, err)

	// The trace has the property: the GPU's idle time before a step's
	// first kernel is like the idle time before its other graph pieces.
	var between, inside []int64
	for _, st := range tr.Steps {
		prevEnd := int64(-1)
		for j, k := range st.Kernels {
			kr := &tr.Kernels[k]
			if j > 0 && kr.Graph >= 0 && tr.Kernels[st.Kernels[j-1]].Graph != kr.Graph && kr.Start > prevEnd {
				inside = append(inside, kr.Start-prevEnd)
			}
			prevEnd = max(prevEnd, kr.End())
		}
	}
	for i := 1; i < len(tr.Steps); i++ {
		prev, cur := tr.Steps[i-1], tr.Steps[i]
		end := int64(0)
		for _, k := range prev.Kernels {
			end = max(end, tr.Kernels[k].End())
		}
		between = append(between, tr.Kernels[cur.Kernels[0]].Start-end)
	}
	slices.Sort(between)
	slices.Sort(inside)
	mb, mi := between[len(between)/2], inside[len(inside)/2]
	require.InDelta(t, 1, float64(mi)/float64(mb), 0.5, "median idle between pieces %d ns, between steps %d ns", mi, mb)
	t.Logf("median GPU idle: %d ns between the pieces of a step, %d ns between steps", mi, mb)

	got := map[string]int{}
	for _, st := range tr.Steps {
		got[string(st.Kind)]++
		require.Equal(t, "step_function", st.Source)
	}
	require.Equal(t, truth.Steps, got)
	require.Equal(t, tr.Summarize().StepSources, map[string]int{"step_function": len(tr.Steps)})
	lt, err := inventory.DecodeLayers(context.Background(), tr, inventory.LayerOptions{})
	require.NoError(t, err)
	require.Equal(t, truth.Layers, lt.Layers)
	require.Equal(t, truth.KernelsPerLayer, lt.KernelsPerLayer)

	// Without the Python frames: the period of the launch sequence.
	var buf bytes.Buffer
	_, err = synth.Generate(context.Background(), &buf, synth.GenerateOptions{
		Layers: layers, DecodeSteps: 9, PrefillSteps: 1, BS: 8, Seed: 5, PythonPerStep: -1,
		Piecewise: true, PiecewiseEqualGaps: true,
	})
	require.NoError(t, err)
	bare, err := tracing.Read(context.Background(), &buf, "bare.json", tracing.Options{})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"launch_period": len(bare.Steps)}, bare.Summarize().StepSources)
	got = map[string]int{}
	for _, st := range bare.Steps {
		got[string(st.Kind)]++
	}
	require.Equal(t, truth.Steps, got)
	lt, err = inventory.DecodeLayers(context.Background(), bare, inventory.LayerOptions{})
	require.NoError(t, err)
	require.Equal(t, truth.Layers, lt.Layers)
	require.Equal(t, truth.KernelsPerLayer, lt.KernelsPerLayer)
	requireMatchesTruth(t, lt.Positions, truth.Positions)
}
