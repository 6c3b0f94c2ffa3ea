package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/profiling/sim"
	"github.com/profile-model/profile-model/tracing"
)

// decodeSteps counts the decode steps of a trace.
func decodeSteps(t *testing.T, file string) int {
	t.Helper()
	tr, err := tracing.Load(context.Background(), file, tracing.Options{})
	require.NoError(t, err)
	n := 0
	for _, c := range tr.DecodeBSHist {
		n += c
	}
	return n
}

// A profile window stops the profiler within the level: after about N
// decode steps or S seconds of steady load. The trace holds that window;
// the level's metrics still cover every request.
func TestProfileWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("runs profiled levels against the simulated engine; skipped with -short")
	}
	t.Parallel() // the cases one after another: each needs the CPU to itself
	const conc, osl = 4, 240
	for _, tc := range []struct {
		name    string
		steps   int
		seconds time.Duration
		by      string
	}{
		{"steps", 30, 0, stopAtSteps},
		{"seconds", 0, 150 * time.Millisecond, stopAtSeconds},
		{"not reached", 100000, 0, stopAtLevelEnd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			traceDir := t.TempDir()
			lv, doc := sweepSim(t, sim.Config{ProfilerDir: traceDir, TimeScale: 5, PythonPerStep: -1},
				SweepConfig{ISL: 32, OSL: osl, Concurrencies: []int{conc}, Profile: true, TraceDir: traceDir,
					ExportTimeout: time.Minute, PollInterval: 20 * time.Millisecond, ReadTraces: analysis.TraceFacts,
					ProfileSteps: tc.steps, ProfileFor: tc.seconds})
			require.Equal(t, conc, doc.Completed, "the level ran to its end")
			require.Equal(t, conc*osl, doc.TotalOutputTokens)
			w := doc.Window
			require.NotNil(t, w)
			require.Equal(t, lv.Window, w, "the file holds the window")
			require.Equal(t, tc.by, w.StoppedBy)
			require.LessOrEqual(t, w.StartS, 0.0, "the profiler starts before the first request")
			require.GreaterOrEqual(t, w.SteadyS, 0.0, "all slots were busy")
			require.Len(t, lv.TraceFiles, 1)
			steps := decodeSteps(t, lv.TraceFiles[0])
			t.Logf("window %.3f–%.3f s of a %.3f s level (steady from %.3f s; stop took %.3f s); about %.1f decode steps estimated, %d in the trace",
				w.StartS, w.StopS, doc.DurationS, w.SteadyS, w.StopWaitS, w.DecodeSteps, steps)
			switch tc.by {
			case stopAtSteps:
				require.GreaterOrEqual(t, w.DecodeSteps, float64(tc.steps))
				require.GreaterOrEqual(t, steps, tc.steps-2, "the trace holds the steps counted")
				// A few more for the stop's round trip; a loaded machine
				// that starves the watch adds more.
				require.LessOrEqual(t, steps, osl/2, "a part of the level's %d steps", osl)
				require.Less(t, w.StopS, doc.DurationS)
			case stopAtSeconds:
				require.GreaterOrEqual(t, w.StopS-w.SteadyS, tc.seconds.Seconds())
				require.Less(t, w.StopS, doc.DurationS)
				require.Less(t, steps, osl*3/4, "the trace holds a part of the level")
			case stopAtLevelEnd:
				require.InDelta(t, doc.DurationS, w.StopS, 1e-6, "stopped at the level's end")
				require.GreaterOrEqual(t, steps, osl-2, "every decode step is in the trace")
			}
		})
	}
}

// The profiler starts a moment before the level's clock: the console line
// says 0.00, not -0.00.
func TestPrintProfileWindowStart(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	cfg := &SweepConfig{ISL: 8, OSL: 8}
	printLevel(&b, cfg, "m", &LevelResult{Conc: 4, Window: &results.ProfileWindow{StartS: -0.000695, StopS: 0.025, StoppedBy: "steps"}})
	require.Contains(t, b.String(), "profile window: 0.00 s to 0.03 s of the level (stopped by steps)\n")
}
