package inventory_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
)

// vLLM's piecewise graphs: N+1 graph launches per decode step with the
// attention launched eagerly between them and no step annotation. Steps
// come from the structure of the timeline, and the robust layers across
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
					require.Equal(t, "structure", st.Source, "steps found by the structure of the timeline")
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
