package analysis_test

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/units"
	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/profiling/kernelmodel"
	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
	"github.com/profile-model/profile-model/tracing/kineto"
)

// planted is a level generated step by step from the kernel model with
// one thing changed.
type planted struct {
	real, padded int     // decode batch; padded 0: a graph of exactly the batch
	moeScale     float64 // MoE expert GEMM kernels this many times slower; 0: 1
	hostGapNS    int64   // extra host time before each step; 0: the recorder's own gap
}

// plantedLevel writes the level's trace (40 decode steps, 4 layers, the
// same random draws whatever is planted) and analyses it.
func plantedLevel(t *testing.T, p planted) *analysis.LevelFile {
	t.Helper()
	m := kernelmodel.Default()
	m.Layers = 4
	rng := rand.New(rand.NewPCG(1, 2))
	rec := synth.NewRecorder(synth.RecorderOptions{Model: "m", PythonPerStep: -1})
	gpuBS := max(p.real, p.padded)
	var at int64
	for i := range 40 {
		ks := m.DecodeStep(gpuBS, gpuBS*1000, rng)
		var dur int64
		for j := range ks {
			if p.moeScale != 0 && strings.Contains(ks[j].Name, "moe") {
				ks[j].Dur = units.Duration(float64(ks[j].Dur) * p.moeScale)
			}
			if ks[j].Stream == 0 {
				dur += int64(ks[j].Dur + ks[j].Gap)
			}
		}
		st := synth.Step{Kind: tracing.StepDecode, BS: p.real, Tokens: p.real, ContextTokens: p.real * 1000, Kernels: ks}
		if p.padded > p.real {
			st.PaddedBS = p.padded
		}
		if p.hostGapNS > 0 {
			st.Start = at + p.hostGapNS
		}
		at = max(at+p.hostGapNS, st.Start) + dur
		if i == 0 {
			rec.Start(1)
		}
		rec.Record(st)
	}
	path := filepath.Join(t.TempDir(), "level.pt.trace.json")
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = rec.WriteTrace(context.Background(), f, kineto.WriterOptions{})
	require.NoError(t, err)
	require.NoError(t, f.Close())
	r, err := analysis.Load(context.Background(), path, analysis.Options{})
	require.NoError(t, err)
	return analysis.NewLevelFile(r)
}

// side is a level with a client whose TPOT is the trace's time per token.
func side(name string, f *analysis.LevelFile) analysis.Side {
	return analysis.Side{Name: name, TPOTMS: f.StepTime.TokenUS / 1000, File: f}
}

// TestWaterfallPlanted: on levels that differ in one planted way, the
// waterfall puts at least 90% of the TPOT change in the planted term.
func TestWaterfallPlanted(t *testing.T) {
	t.Parallel()
	base := plantedLevel(t, planted{real: 12})
	slope, ok := analysis.BatchSlope([]*analysis.LevelFile{plantedLevel(t, planted{real: 8}), base, plantedLevel(t, planted{real: 16})})
	require.True(t, ok)
	require.Greater(t, slope, 0.0, "a decode step costs more with more sequences")

	cases := []struct {
		name string
		b    planted
		term string
	}{
		{"MoE expert GEMMs 20% slower", planted{real: 12, moeScale: 1.2}, "kernels at matched batch"},
		{"the same kernels at a larger batch", planted{real: 16}, "workload: decode batch"},
		{"more padding: 12 sequences in a graph of 16", planted{real: 12, padded: 16}, "workload: graph padding"},
		{"a slower host: 300 µs more before each step", planted{real: 12, hostGapNS: 300_000}, "host: gaps between kernels"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := analysis.NewWaterfall(side("a", base), side("b", plantedLevel(t, c.b)), slope)
			require.Greater(t, w.DeltaUS, 0.0, "the planted change makes TPOT worse")
			var sum float64
			var planted *analysis.Term
			for i, term := range w.Terms {
				sum += term.US
				if term.Name == c.term {
					planted = &w.Terms[i]
				}
			}
			require.InDelta(t, w.DeltaUS, sum, 1e-6*math.Abs(w.DeltaUS), "the terms sum to the change")
			require.NotNil(t, planted, "%+v", w.Terms)
			require.GreaterOrEqual(t, planted.US/w.DeltaUS, 0.9, "%s takes %.0f%% of %+.1f µs: %+v", c.term, 100*planted.US/w.DeltaUS, w.DeltaUS, w.Terms)
			require.InDelta(t, 100, w.ExplainedPct, 1e-9, "client and trace agree: nothing is outside the trace")
			require.Contains(t, w.Lead(), c.term, "the lead line names the planted term")
			t.Log(w.Lead())
		})
	}
}

// TestWaterfallArithmetic checks the terms by hand on two level files
// whose step times are written out.
func TestWaterfallArithmetic(t *testing.T) {
	lf := func(hist map[string]int, padPct float64, st analysis.StepTime) *analysis.LevelFile {
		f := &analysis.LevelFile{StepTime: st}
		f.Summary.DecodeBSHist = hist
		f.Summary.PaddingPct = padPct
		return f
	}
	// A: every step at 10 sequences, no padding. B: half the steps at 10
	// and half at 20 (token-weighted mean (100+400)/30 = 16.67), 20% of
	// the graph rows padding (padded mean 16.67/0.8 = 20.83).
	a := lf(map[string]int{"10": 4}, 0, analysis.StepTime{Timed: 4, BusyUS: 1000, GapUS: 100, StepUS: 1100, TokenUS: 1150, PrefillPerTokenUS: 50})
	b := lf(map[string]int{"10": 2, "20": 2}, 20, analysis.StepTime{Timed: 4, BusyUS: 1600, GapUS: 150, StepUS: 1750, TokenUS: 1830, PrefillPerTokenUS: 80})
	w := analysis.NewWaterfall(analysis.Side{Name: "a", TPOTMS: 1.2, File: a}, analysis.Side{Name: "b", TPOTMS: 1.9, File: b}, 10)
	got := map[string]float64{}
	for _, term := range w.Terms {
		got[term.Name] = term.US
	}
	real, pad := 500.0/30, 500.0/30/0.8
	require.InDelta(t, 700, w.DeltaUS, 1e-9)
	require.InDelta(t, 10*(real-10), got["workload: decode batch"], 1e-9)
	require.InDelta(t, 10*(pad-real), got["workload: graph padding"], 1e-9)
	require.InDelta(t, 30, got["workload: prefill and other steps"], 1e-9)
	require.InDelta(t, 600-10*(pad-10), got["kernels at matched batch"], 1e-9)
	require.InDelta(t, 50, got["host: gaps between kernels"], 1e-9)
	require.InDelta(t, 700-680, got["outside the trace (client, streaming, host stalls)"], 1e-9)
	require.InDelta(t, 100*(1-20.0/700), w.ExplainedPct, 1e-9)
}

// TestCaptureSizesFor: the batches that make up at least 1% of the decode
// steps join the captured sizes; rarer ones and those already captured
// change nothing.
func TestCaptureSizesFor(t *testing.T) {
	for _, c := range []struct {
		name    string
		hist    map[string]int
		current []int
		want    string
	}{
		{"12 and 24 uncaptured", map[string]int{"12": 51, "24": 30, "16": 19, "3": 1}, []int{1, 2, 4, 8, 16, 32}, "[1,2,4,8,12,16,24,32]"},
		{"a batch in under 1% of the steps is left padded", map[string]int{"12": 990, "5": 9}, []int{1, 2, 4, 8, 16}, "[1,2,4,8,12,16]"},
		{"every batch captured already", map[string]int{"8": 10, "16": 10}, []int{8, 16}, ""},
		{"nothing captured known: the batches alone", map[string]int{"7": 3, "9": 1}, nil, "[7,9]"},
		{"no histogram", nil, []int{1, 2}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, analysis.CaptureSizesFor(c.hist, c.current))
		})
	}
}
