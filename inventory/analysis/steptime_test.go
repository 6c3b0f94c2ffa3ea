package analysis

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
)

// handTrace is a trace small enough to reconcile by hand (times in µs):
//
//	decode A bs 2 at 0:    prologue 0-10, layer 10-40 with 12-30 on a
//	                       second stream, epilogue 45-50; a sampler at 60-70
//	                       in no step
//	decode B bs 2 at 100:  10 + 30 + 5 kernels, a memcpy 150-160
//	prefill C bs 1 at 200: 200-280
//	decode D bs 3 at 300:  10 + 30 + 5
//	decode E bs 3 at 400:  the last step, not timed
func handTrace() *tracing.Trace {
	us := int64(1000)
	type k struct {
		start, end int64
		stream     int32
		step       int32
		kind       tracing.ActivityKind
	}
	ks := []k{
		{0, 10, 0, 0, 0}, {10, 40, 0, 0, 0}, {12, 30, 1, 0, 0}, {45, 50, 0, 0, 0}, {60, 70, 0, -1, 0},
		{100, 110, 0, 1, 0}, {110, 140, 0, 1, 0}, {145, 150, 0, 1, 0}, {150, 160, 0, 1, tracing.KindMemcpy},
		{200, 280, 0, 2, 0},
		{300, 310, 0, 3, 0}, {310, 340, 0, 3, 0}, {345, 350, 0, 3, 0},
		{400, 410, 0, 4, 0},
	}
	tr := &tracing.Trace{}
	steps := []tracing.Step{
		{Kind: tracing.StepDecode, BS: 2, Start: 0, End: 50 * us},
		{Kind: tracing.StepDecode, BS: 2, Start: 100 * us, End: 160 * us},
		{Kind: tracing.StepPrefill, BS: 1, Start: 200 * us, End: 280 * us},
		{Kind: tracing.StepDecode, BS: 3, Start: 300 * us, End: 350 * us},
		{Kind: tracing.StepDecode, BS: 3, Start: 400 * us, End: 410 * us},
	}
	for i, x := range ks {
		tr.AddKernel("k", tracing.Kernel{Start: x.start * us, Dur: (x.end - x.start) * us,
			Stream: x.stream, Step: x.step, Kind: x.kind, Graph: -1})
		if x.step >= 0 {
			steps[x.step].Kernels = append(steps[x.step].Kernels, int32(i))
		}
	}
	tr.Steps = steps
	return tr
}

func TestStepTimesByHand(t *testing.T) {
	table := &inventory.LayerTable{Layers: 1, Prologue: []string{"p"}, Epilogue: []string{"e"},
		Positions: []inventory.Position{{AvgUS: 30, Count: 3}}}
	got := StepTimes(handTrace(), table)
	// Weights: A 2, B 2, D 3 (7 tokens); the prefill holds up D's batch
	// less the sequence it added: min(2, 3-1) = 2.
	want := StepTime{
		DecodeSteps: 4, Timed: 3,
		StepUS:   100,
		BusyUS:   (2*55 + 2*55 + 3*45) / 7.0, // A: 10+30+5+10 (the second stream counts once), B: 10+30+5+10 (memcpy), D: 45
		KernelUS: (2*73 + 2*55 + 3*45) / 7.0, // A sums the overlapping 18 too
		CopyUS:   2 * 10 / 7.0,
		Layers:   1, LayerUS: 30,
		PrologueUS: 10,
		EpilogueUS: (2*15 + 2*5 + 3*5) / 7.0, // A: its last kernel and the sampler after the step
		WindowUS:   400, PrefillSteps: 1, PrefillUS: 100, PrefillPct: 25,
		PrefillPerTokenUS: 2 * 100 / 7.0,
	}
	want.GapUS = want.StepUS - want.BusyUS
	want.TableBusyUS = 30 + want.PrologueUS + want.EpilogueUS + want.CopyUS
	want.TokenUS = want.StepUS + want.PrefillPerTokenUS
	if d := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); d != "" {
		t.Fatalf("step times (-want +got):\n%s", d)
	}
}

func TestStepTimesDegenerate(t *testing.T) {
	for _, tt := range []struct {
		name          string
		trace         *tracing.Trace
		decode, timed int
	}{
		{"no steps", &tracing.Trace{}, 0, 0},
		{"one decode step, nothing after it", func() *tracing.Trace {
			tr := handTrace()
			tr.Steps = tr.Steps[4:]
			return tr
		}(), 1, 0},
		{"prefill only", func() *tracing.Trace {
			tr := handTrace()
			tr.Steps = tr.Steps[2:3]
			return tr
		}(), 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := StepTimes(tt.trace, nil)
			require.Equal(t, tt.decode, got.DecodeSteps)
			require.Equal(t, tt.timed, got.Timed)
			require.Zero(t, got.StepUS)
			require.Zero(t, got.TokenUS)
		})
	}
}

// TestStepTimesSynth reconciles generated traces: the step time splits
// exactly into GPU-busy and gaps, and the layer table predicts GPU-busy
// within 3% — the summed kernel time when two streams overlap, which is
// then more than the busy time.
func TestStepTimesSynth(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts synth.GenerateOptions
	}{
		{"one stream", synth.GenerateOptions{BS: 8, DecodeSteps: 12, PrefillSteps: 3, Layers: 8}},
		{"two streams", synth.GenerateOptions{BS: 8, DecodeSteps: 12, PrefillSteps: 3, Layers: 8, TwoStreams: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := synthResult(t, tt.opts)
			st := StepTimes(r.Trace, r.Decode)
			require.Equal(t, 12, st.DecodeSteps)
			require.Equal(t, 11, st.Timed)
			require.Equal(t, 2, st.PrefillSteps, "the prefill steps inside the decode window (the first runs before it)")
			require.InDelta(t, st.StepUS, st.BusyUS+st.GapUS, 1e-6)
			require.Greater(t, st.GapUS, 0.0)
			require.InDelta(t, st.TokenUS, st.StepUS+st.PrefillPerTokenUS, 1e-6)
			require.Greater(t, st.PrefillPct, 0.0)
			require.Equal(t, 8, st.Layers)
			require.InEpsilon(t, st.KernelUS, st.TableBusyUS, 0.03)
			if tt.opts.TwoStreams {
				require.Less(t, st.BusyUS, st.KernelUS-1, "overlapping streams count once")
			} else {
				require.InDelta(t, st.KernelUS, st.BusyUS, 1e-6)
				require.InEpsilon(t, st.BusyUS, st.TableBusyUS, 0.03)
			}
		})
	}
}

func synthResult(t *testing.T, opts synth.GenerateOptions) *Result {
	t.Helper()
	if opts.PythonPerStep == 0 {
		opts.PythonPerStep = -1
	}
	path := filepath.Join(t.TempDir(), "trace.json")
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = synth.Generate(context.Background(), f, opts)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	r, err := Load(context.Background(), path, Options{})
	require.NoError(t, err)
	return r
}
