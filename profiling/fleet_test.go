package profiling_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling"
	"github.com/profile-model/profile-model/profiling/fleet"
)

// TestFleetReadsTheDeclarations: the job matrix reads the same name,
// engine, GPU and corpus need from each declaration as the harness does,
// and its -run pattern names the test that runs the sweep.
func TestFleetReadsTheDeclarations(t *testing.T) {
	t.Parallel()
	sweeps := profiling.LoadSweepsForTest(t, profiling.DeclaredSweepsForTest)
	files, err := fleet.LoadSweepFiles(profiling.DeclaredSweepsForTest)
	require.NoError(t, err)
	require.Len(t, files, len(sweeps))
	for i, s := range sweeps {
		f := files[i]
		require.Equal(t, s.Name, f.Name)
		require.Equal(t, s.Kind(), f.Kind())
		require.Equal(t, s.GPU, f.GPU)
		require.Equal(t, s.NeedsCorpus(), f.NeedsCorpus(), s.Name)
	}
}

// TestKeptRunsMerge: a sweep run with PROFILE_MODEL_KEEP_RUNS set lands
// where the fleet's merge finds it, named after the sweep, a second run
// beside the first.
func TestKeptRunsMerge(t *testing.T) {
	root := t.TempDir()
	t.Setenv(profiling.KeepRunsVar, root)
	s := profiling.SweepNamedForTest(t, "sim-minimax-m2.5")
	for range 2 {
		profiling.RunSweepForTest(t, s, profiling.SweepOptionsForTest(t, s, []int{4}))
	}
	sum, err := fleet.Merge(root)
	require.NoError(t, err)
	require.Len(t, sum.Sweeps, 1)
	ss := sum.Sweeps[0]
	require.Equal(t, s.Name, ss.Sweep)
	require.Len(t, ss.Runs, 2)
	require.Len(t, ss.Levels, 1)
	l := ss.Levels[0]
	require.Equal(t, 4, l.Conc)
	require.Equal(t, 2, l.OK)
	for _, u := range []string{"out-tok/s", "tpot-p50-ms", fleet.LayerUnit, fleet.CategoryUnit("MoE expert GEMM")} {
		m, ok := l.Metric(u)
		require.True(t, ok, u)
		require.Len(t, m.Values, 2, u)
		require.Positive(t, m.Median, u)
	}
}
