package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/sim"
)

// TestLevelTraceIncomplete: a level whose trace lost events is marked
// trace_incomplete in its JSON and summary.csv, carries the trace's
// warnings, stays in bench.txt with a note, and does not stop the sweep.
func TestLevelTraceIncomplete(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a profiled sweep against the simulated engine; skipped with -short")
	}
	t.Parallel()
	traceDir := t.TempDir()
	url, _ := startSim(t, sim.Config{ProfilerDir: traceDir, TimeScale: 50, PythonPerStep: -1})
	lost := diag.New(diag.Coverage, "GPU kernels cover 61% of the profile window: the profiler buffer dropped events")
	res, err := Sweep(context.Background(), SweepConfig{
		URL: url, Model: simModel, Shaper: &shaper{PerWord: 1}, ISL: 16, OSL: 8,
		Concurrencies: []int{2, 4}, Profile: true, TraceDir: traceDir, PollInterval: 10 * time.Millisecond,
		OutDir: t.TempDir(),
		// The analysis's answer, made up: the level of 2 lost events.
		ReadTraces: func(_ context.Context, conc int, files []string) (int, []diag.Warning, error) {
			if conc == 2 {
				return conc, []diag.Warning{lost}, nil
			}
			return conc, nil, nil
		},
	})
	require.NoError(t, err, "a trace that lost events does not fail the run")
	require.Len(t, res.Levels, 2)
	require.Equal(t, statusTraceIncomplete, res.Levels[0].Status)
	require.Contains(t, res.Levels[0].Warnings, lost, "the trace's warning, with its code")
	require.Equal(t, statusOK, res.Levels[1].Status)

	doc, err := results.LoadLevel(res.Levels[0].ResultFile)
	require.NoError(t, err)
	require.Equal(t, "trace_incomplete", doc.Status)
	require.True(t, diag.Has(doc.Warnings, diag.Coverage))
	rows, err := results.LoadSummary(res.SummaryCSV)
	require.NoError(t, err)
	require.Equal(t, []string{"trace_incomplete", "ok"}, []string{rows[0].Status, rows[1].Status})
	b, err := os.ReadFile(res.BenchFile)
	require.NoError(t, err)
	require.Contains(t, string(b), "# conc=2: trace_incomplete: its trace lost events")
	bench, err := results.ReadBench(strings.NewReader(string(b)), "bench.txt")
	require.NoError(t, err)
	require.Len(t, bench, 2, "the client's figures of both levels are results")
}

// TestFailedCountsAgree: a failed level's failed and not_sent are the same
// in its JSON and in summary.csv, and bench.txt says it left it out.
func TestFailedCountsAgree(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(neverEnds))
	defer srv.Close()
	res, err := Sweep(context.Background(), SweepConfig{
		URL: srv.URL, Model: "m", Shaper: &shaper{PerWord: 1}, ISL: 8, OSL: 4,
		Concurrencies: []int{3}, NumPromptsMul: 3, LevelTimeout: 300 * time.Millisecond, OutDir: t.TempDir(),
	})
	require.Error(t, err)
	doc, err := results.LoadLevel(res.Levels[0].ResultFile)
	require.NoError(t, err)
	rows, err := results.LoadSummary(res.SummaryCSV)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, "failed", doc.Status)
	require.Equal(t, 3, doc.Failed, "the first wave, cancelled at the deadline")
	require.Equal(t, 6, doc.NotSent)
	require.Equal(t, []any{doc.Status, doc.Failed, doc.NotSent}, []any{rows[0].Status, rows[0].Failed, rows[0].NotSent})
	b, err := os.ReadFile(res.BenchFile)
	require.NoError(t, err)
	require.Contains(t, string(b), "# conc=3 left out: failed (3 of 9 requests failed (3 cancelled), 6 not sent)")
	bench, err := results.ReadBench(strings.NewReader(string(b)), "bench.txt")
	require.NoError(t, err)
	require.Empty(t, bench)
}
