package report_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/profiling/report"
)

// headRow is the throughput table's row of a concurrency.
func headRow(t *testing.T, md string, conc string) string {
	t.Helper()
	for line := range strings.Lines(md) {
		if strings.HasPrefix(line, "| "+conc+" | ") && strings.Count(line, "|") == 14 {
			return line
		}
	}
	t.Fatalf("no throughput row of conc %s", conc)
	return ""
}

// A level whose trace lost events loses its trace figures in the
// headline; a flagged profiler overhead loses every level's latencies
// and throughputs; both say why.
func TestTrustLeavesOut(t *testing.T) {
	dir := runCopy(t)
	rd := results.Run(dir)
	path := rd.LevelAnalysis(16)
	lf, err := analysis.LoadLevelFile(path)
	require.NoError(t, err)
	lf.Summary.Warnings = append(lf.Summary.Warnings, diag.New(diag.Coverage, "GPU kernels cover 40% of the profiled window"))
	require.NoError(t, lf.Write(path))

	_, err = report.Build(dir, report.Options{})
	require.NoError(t, err)
	md := readme(t, rd)
	require.Contains(t, md, "Profiler overhead: not checked")
	row16, row4 := headRow(t, md, "16"), headRow(t, md, "4")
	require.Equal(t, 2, strings.Count(row16, "—†"), "decode bs and step ÷ SOL: %s", row16)
	require.NotContains(t, row4, "—†")
	require.Contains(t, md, "conc 16: decode batch and step ÷ SOL: the profiler lost GPU events (coverage warning)")

	require.NoError(t, results.WriteOverhead(rd.Overhead(), &results.Overhead{Conc: 4, ProfiledTPOTMS: 26.37, UnprofiledTPOTMS: 15.84, DiffPct: 66.5, ThresholdPct: 5, Flagged: true}))
	_, err = report.Build(dir, report.Options{Force: true})
	require.NoError(t, err)
	md = readme(t, rd)
	require.Contains(t, md, "had a mean TPOT of 15.84 ms against 26.37 ms profiled (+66.5%, threshold 5%): **above the threshold**")
	row4 = headRow(t, md, "4")
	require.Equal(t, 7, strings.Count(row4, "—†"), "req/s, throughputs, TTFT and TPOT: %s", row4)
	require.Contains(t, md, "conc 4: req/s, throughputs, TTFT and TPOT: the profiler slows TPOT by +66.5%")
}

func readme(t *testing.T, rd results.Run) string {
	t.Helper()
	b, err := os.ReadFile(rd.Readme())
	require.NoError(t, err)
	return string(b)
}
