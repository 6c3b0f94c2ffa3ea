package inventory_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/profiling/kernelmodel"
	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
)

// genTrace writes a synthetic ATOM trace from a compatible layer CSV of the
// corpus into a temporary directory and loads it.
func genTrace(t *testing.T, csv string, opts synth.GenerateOptions) (*tracing.Trace, *synth.Truth) {
	t.Helper()
	m, err := kernelmodel.FromLayerCSV(csv)
	require.NoError(t, err)
	opts.Model = m
	if opts.PythonPerStep == 0 {
		opts.PythonPerStep = -1
	}
	path := filepath.Join(t.TempDir(), "trace.json")
	f, err := os.Create(path)
	require.NoError(t, err)
	truth, err := synth.Generate(context.Background(), f, opts)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	tr, err := tracing.Load(context.Background(), path, tracing.Options{})
	require.NoError(t, err)
	return tr, truth
}

func layerCSV(t *testing.T, bs int) string {
	return corpus.Path(t, fmt.Sprintf("atom-minimax-m2.5/conc%d_layer.csv", bs))
}

// truthPositions returns the truth's positions in (kind, pos) order.
func truthPositions(ps []synth.TruthPos) []synth.TruthPos {
	out := append([]synth.TruthPos(nil), ps...)
	slices.SortFunc(out, func(a, b synth.TruthPos) int { return cmp.Or(a.LayerKind-b.LayerKind, a.Pos-b.Pos) })
	return out
}

// requireMatchesTruth checks a table's positions against the generator's
// truth: same kernels in the same order, statistics within 0.05 µs.
func requireMatchesTruth(t *testing.T, got []inventory.Position, truth []synth.TruthPos) {
	t.Helper()
	truth = truthPositions(truth)
	require.Len(t, got, len(truth))
	for i, p := range got {
		w := truth[i]
		require.Equal(t, w.Kernel, p.Kernel, "pos %d", i)
		require.Equal(t, w.LayerKind, p.LayerKind, "pos %d", i)
		require.InDelta(t, w.MeanUS, p.AvgUS, 0.05, "pos %d avg", i)
		require.InDelta(t, w.StdUS, p.StdUS, 0.05, "pos %d std", i)
		require.InDelta(t, w.MinUS, p.MinUS, 0.05, "pos %d min", i)
		require.InDelta(t, w.MaxUS, p.MaxUS, 0.05, "pos %d max", i)
		require.Equal(t, w.Count, p.Count, "pos %d count", i)
	}
}

// Golden: traces generated from the recorded per-layer tables of the corpus give back
// the same table (positions, kernel names, short names) in compatible mode,
// with the generator's statistics; robust mode finds the same 19-kernel layer
// without an anchor.
func TestLayersGoldenFromSeedCSVs(t *testing.T) {
	t.Parallel()
	for _, bs := range []int{4, 8, 16, 32} {
		t.Run(fmt.Sprintf("conc%d", bs), func(t *testing.T) {
			t.Parallel()
			csv := layerCSV(t, bs)
			src, err := inventory.ReadLayerCSV(csv)
			require.NoError(t, err)
			tr, truth := genTrace(t, csv, synth.GenerateOptions{DecodeSteps: 8, PrefillSteps: 1, BS: bs, Seed: uint64(bs)})

			compat, err := inventory.DecodeLayers(context.Background(), tr, inventory.LayerOptions{Mode: inventory.ModeCompat})
			require.NoError(t, err)
			rows := compat.Rows()
			require.Len(t, rows, len(src))
			for i, r := range rows {
				require.Equal(t, src[i].Pos, r.Pos)
				require.Equal(t, src[i].Kernel, r.Kernel, "pos %d", i)
				require.Equal(t, src[i].ShortName, r.ShortName, "pos %d", i)
			}
			requireMatchesTruth(t, compat.Positions, truth.CompatPositions)
			// The CSV as written parses back to the same table.
			back, err := inventory.ParseLayerCSV(bytes.NewReader(inventory.FormatLayerCSV(rows)))
			require.NoError(t, err)
			require.Len(t, back, len(src))

			robust, err := inventory.DecodeLayers(context.Background(), tr, inventory.LayerOptions{})
			require.NoError(t, err)
			require.Equal(t, truth.Layers, robust.Layers)
			require.Equal(t, []int{len(src)}, robust.KernelsPerLayer)
			require.Empty(t, robust.Irregular)
			for i, p := range robust.Positions {
				require.Equal(t, src[i].Kernel, p.Kernel, "pos %d", i)
			}
			requireMatchesTruth(t, robust.Positions, truth.Positions)

			// Prefill steps get the same breakdown, separately.
			prefill, err := inventory.PrefillLayers(context.Background(), tr, inventory.LayerOptions{})
			require.NoError(t, err)
			require.Equal(t, truth.Steps["prefill"], prefill.Steps)
			require.Equal(t, truth.Layers, prefill.Layers)
			requireMatchesTruth(t, prefill.Positions, truth.PrefillPositions)
		})
	}
}

// Robust mode on the generator's hard cases: no pa_bf16 anchor, two
// overlapping streams, alternating layer kinds, eager prefill-labelled decode.
func TestRobustLayersVariants(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts synth.GenerateOptions
	}{
		{"renamed anchor", synth.GenerateOptions{RenameAnchor: "aiter::paged_attention_decode_v2"}},
		{"two streams", synth.GenerateOptions{TwoStreams: true}},
		{"alternating layers", synth.GenerateOptions{Alternate: true}},
		{"eager prefill-labelled decode", synth.GenerateOptions{EagerDecode: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.DecodeSteps, opts.PrefillSteps, opts.BS, opts.Seed = 6, 1, 8, 7
			tr, truth := genTrace(t, layerCSV(t, 8), opts)
			lt, err := inventory.DecodeLayers(context.Background(), tr, inventory.LayerOptions{NumLayers: 62})
			require.NoError(t, err)
			require.Equal(t, truth.Steps["decode"], lt.Steps)
			require.Equal(t, truth.Layers, lt.Layers)
			require.Equal(t, truth.KernelsPerLayer, lt.KernelsPerLayer)
			require.Empty(t, lt.Irregular)
			require.Empty(t, lt.Warnings)
			requireMatchesTruth(t, lt.Positions, truth.Positions)
			t.Logf("%s: %d decode steps, %d layers, kernels per layer %v, %d irregular", tt.name, lt.Steps, lt.Layers, lt.KernelsPerLayer, len(lt.Irregular))
			if opts.RenameAnchor != "" {
				_, err := inventory.DecodeLayers(context.Background(), tr, inventory.LayerOptions{Mode: inventory.ModeCompat})
				require.ErrorContains(t, err, "--mode robust", "compat mode needs its anchor")
			}
		})
	}
}
