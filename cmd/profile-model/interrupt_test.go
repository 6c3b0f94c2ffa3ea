package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
)

// TestRunInterruptKeepsAnalysis: Ctrl-C during a plain run's second level
// keeps the first level's analysis, marks the second interrupted in
// run.json, and the report neither calls the cut level's throughput a
// fall (it once said "falls to 0.00×") nor prints an empty reason under
// the roofline ("Not computed: ."); report --reanalyse redoes the analysis
// from the traces on disk.
func TestRunInterruptKeepsAnalysis(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &cancelOn{mark: "conc 4: sending", cancel: cancel}
	args := append([]string{"run", "--conc", "2,4", "--isl", "64", "--osl", "64", "--num-prompts-mul", "8", "--time-scale", "4", "--out", out}, simArgs(t)...)
	var stdout bytes.Buffer
	err := run(ctx, args, &stdout, log)
	require.ErrorContains(t, err, "interrupted")
	dir := onlyDir(t, out)
	run1 := results.Run(dir)
	info, err := results.LoadRunInfo(run1.RunInfo())
	require.NoError(t, err)
	require.Equal(t, "interrupted", info.Status)
	concs := map[int]results.LevelInfo{}
	for _, l := range info.Levels {
		concs[l.Conc] = l
	}
	require.Equal(t, "ok", concs[2].Status, "%+v", info.Levels)
	require.Contains(t, concs[2].Files, filepath.Join("levels", "conc2", "analysis.json"))
	require.FileExists(t, run1.LevelAnalysis(2))
	require.Equal(t, "interrupted", concs[4].Status, "%+v", info.Levels)

	stdout.Reset()
	var stderr bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"report", dir}, &stdout, &stderr), stderr.String())
	readme, err := os.ReadFile(run1.Readme())
	require.NoError(t, err)
	require.NotContains(t, string(readme), "falls to 0.00×")
	require.NotContains(t, string(readme), "Not computed: .")

	// No analysis left at all: the report says how to redo it, and
	// --reanalyse does, from the traces.
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "levels")))
	require.NoError(t, run(context.Background(), []string{"report", dir, "--force"}, &stdout, &stderr), stderr.String())
	readme, err = os.ReadFile(run1.Readme())
	require.NoError(t, err)
	require.Contains(t, string(readme), "Not computed: no level has a trace analysis")
	require.Contains(t, string(readme), "--reanalyse")
	stderr.Reset()
	require.NoError(t, run(context.Background(), []string{"report", dir, "--reanalyse", "--force"}, &stdout, &stderr), stderr.String())
	require.Contains(t, stderr.String(), "conc 2: analysing")
	require.FileExists(t, run1.LevelAnalysis(2))
	info, err = results.LoadRunInfo(run1.RunInfo())
	require.NoError(t, err)
	i := slices.IndexFunc(info.Levels, func(l results.LevelInfo) bool { return l.Conc == 2 })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, "ok", info.Levels[i].Status)
	require.Contains(t, info.Levels[i].Files, filepath.Join("levels", "conc2", "analysis.json"))
	readme, err = os.ReadFile(run1.Readme())
	require.NoError(t, err)
	require.Contains(t, string(readme), "## Roofline per position")
	require.NotContains(t, string(readme), "Not computed: no level has a trace analysis")
}
