package profiling

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/report"
)

// TestSimTelemetryPowerCap runs the simulated engine with a power cap
// planted below what its prefill and large decode batches draw: every
// level carries the GPU's telemetry (its warm-up apart), energy per output
// token falls with concurrency, the cap shows as time at the power limit
// with the clock lowered, and the report leads with it.
func TestSimTelemetryPowerCap(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulated engine; skipped with -short")
	}
	t.Parallel()
	s := sweepNamed(t, "sim-minimax-m2.5")
	o := sweepOptions(t, s, []int{4, 16})
	plan, err := s.Plan(filepath.Join(t.TempDir(), "run"), o)
	require.NoError(t, err)
	// 900 W: above a small decode batch's draw, below a prefill's.
	plan.Engine.ExtraArgs = append(plan.Engine.ExtraArgs, "--power-cap-w", "900")
	plan.Sweep.OSL = 24
	plan.GPUPrice = 2
	var log bytes.Buffer
	plan.Log, plan.Sweep.Log = &log, &log
	plan.Report = func(_ context.Context, dir string) error {
		_, err := report.Build(dir, report.Options{})
		return err
	}
	res, err := Run(context.Background(), plan)
	require.NoError(t, err, "log:\n%s", log.String())
	require.Contains(t, res.Info.Telemetry, "/debug/telemetry every 200ms")

	run := results.Run(res.Dir)
	var jpt []float64
	for _, conc := range []int{4, 16} {
		l, err := results.LoadLevel(run.LevelResult(conc))
		require.NoError(t, err)
		require.NotNil(t, l.Telemetry, "conc %d", conc)
		require.NotNil(t, l.WarmupTelemetry, "conc %d: the warm-up is sampled apart", conc)
		tel := l.Telemetry
		require.Equal(t, "sim", tel.Tool)
		require.GreaterOrEqual(t, tel.Rounds, 3, "conc %d", conc)
		require.Len(t, tel.GPUs, 1)
		g := tel.GPUs[0]
		require.LessOrEqual(t, g.PeakPowerW, 900.0, "conc %d: the cap holds", conc)
		require.Greater(t, g.MeanPowerW, 180.0)
		require.Greater(t, tel.ThrottleS(), 0.0, "conc %d: its prefills ran at the cap", conc)
		require.Equal(t, "power cap", g.Throttle[0].Limit)
		require.Less(t, g.MinSMClockMHz, 2400.0, "conc %d: the cap lowered the clock", conc)
		e, ok := results.EnergyOf(l)
		require.True(t, ok)
		require.InDelta(t, tel.MeanPowerW()*l.DurationS/float64(l.TotalOutputTokens), e.JPerOutToken, 1e-9)
		jpt = append(jpt, e.JPerOutToken)
	}
	require.Less(t, jpt[1], jpt[0], "more tokens share the GPU's power at conc 16")

	sum, err := results.LoadSummary(run.Summary())
	require.NoError(t, err)
	require.Len(t, sum[0].GPU, len(results.TelemetryHeader))
	bench, err := os.ReadFile(run.Bench())
	require.NoError(t, err)
	require.Contains(t, string(bench), " J/token ")
	require.Contains(t, string(bench), "Unit tok/J better=higher")

	readme, err := os.ReadFile(run.Readme())
	require.NoError(t, err)
	md := string(readme)
	for _, s := range []string{"## GPU power and energy", "### Energy per layer role (decode)", "| MoE experts |",
		"**Energy per output token falls", "An apportionment, not a measurement", "$ / M output tok"} {
		require.Contains(t, md, s)
	}
	obs := md[strings.Index(md, "## Key observations"):]
	require.True(t, strings.HasPrefix(strings.SplitN(obs, "\n- ", 3)[1], "**The GPUs were held by their power cap**: conc 4 at its power cap for "), obs[:400])
}

func TestOnThisMachine(t *testing.T) {
	t.Parallel()
	host, _ := os.Hostname()
	for u, want := range map[string]bool{
		"http://127.0.0.1:8000": true, "http://localhost:8000": true, "http://[::1]:8000": true, "http://0.0.0.0:1": true,
		"http://" + host + ":8000": host != "", "http://10.1.2.3:8000": false, "http://gpu-node-7:8000": false, "::": false,
	} {
		require.Equal(t, want, onThisMachine(u), u)
	}
}
