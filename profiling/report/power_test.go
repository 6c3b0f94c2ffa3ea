package report_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/profiling/report"
	"github.com/profile-model/profile-model/profiling/report/reporttest"
)

// plantedPower is the telemetry planted in the made run: one GPU drawing
// more with concurrency, held by its power cap at conc 32 for 80% of the
// level with its clock down to 1500 MHz; its readings over the level are
// 100 W apart, so the profiled window's mean differs from the level's.
var plantedPower = map[int]struct {
	meanW, peakW, capFrac, minClock float64
}{
	4:  {400, 450, 0, 2400},
	16: {650, 700, 0.02, 2350},
	32: {750, 800, 0.8, 1500},
}

func plantTelemetry(t *testing.T, dir string) {
	t.Helper()
	run := results.Run(dir)
	for _, conc := range reporttest.Levels {
		l, err := results.LoadLevel(run.LevelResult(conc))
		require.NoError(t, err)
		p := plantedPower[conc]
		g := results.GPUTelemetry{Index: 0, Samples: 10, MeanPowerW: p.meanW, PeakPowerW: p.peakW,
			MeanSMClockMHz: (2400 + p.minClock) / 2, MinSMClockMHz: p.minClock, MaxSMClockMHz: 2400,
			PeakTempC: 70, MeanUtilPct: 90, PeakMemUsedMiB: 150 * 1024, MemTotalMiB: 288 * 1024}
		if p.capFrac > 0 {
			g.Throttle = []results.LimitTime{{Limit: "power cap", Seconds: p.capFrac * l.DurationS}}
		}
		l.Telemetry = &results.Telemetry{Tool: "amd-smi", PeriodMS: 200, DurationS: l.DurationS, Rounds: 10, GPUs: []results.GPUTelemetry{g},
			Power: []results.PowerPoint{{T: 0, W: p.meanW - 50}, {T: l.DurationS, W: p.meanW + 50}}}
		l.WarmupTelemetry = &results.Telemetry{Tool: "amd-smi", DurationS: 1, Rounds: 5, GPUs: []results.GPUTelemetry{{Index: 0, Samples: 5, MeanPowerW: 300}}}
		// The profiled window: the first half of the level, whose one
		// reading is the lower.
		l.Window = &results.ProfileWindow{StartS: 0, StopS: l.DurationS / 2, StoppedBy: "level_end", SteadyS: -1}
		var b bytes.Buffer
		require.NoError(t, l.Write(&b))
		require.NoError(t, os.WriteFile(run.LevelResult(conc), b.Bytes(), 0o644))
	}
	info, err := results.LoadRunInfo(run.RunInfo())
	require.NoError(t, err)
	info.GPUPrice = 2
	info.Telemetry = "amd-smi metric --power --clock --temperature --usage --mem-usage --throttle --json every 200ms"
	var b bytes.Buffer
	require.NoError(t, info.Write(&b))
	require.NoError(t, os.WriteFile(run.RunInfo(), b.Bytes(), 0o644))
}

// row finds the table row that starts with cells.
func row(t *testing.T, readme string, cells ...string) []string {
	t.Helper()
	prefix := "| " + strings.Join(cells, " | ") + " |"
	for _, line := range strings.Split(readme, "\n") {
		if strings.HasPrefix(line, prefix) {
			return strings.Split(strings.Trim(line, "| "), " | ")
		}
	}
	t.Fatalf("no row %q in the readme", prefix)
	return nil
}

// TestPowerSection: the telemetry table, the energy-per-token trend, the
// per-role energy and the power-cap observation, each figure computed here
// from the planted telemetry and the level files.
func TestPowerSection(t *testing.T) {
	dir := runCopy(t)
	plantTelemetry(t, dir)
	_, err := report.Build(dir, report.Options{})
	require.NoError(t, err)
	run := results.Run(dir)
	b, err := os.ReadFile(run.Readme())
	require.NoError(t, err)
	readme := string(b)

	f4 := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	f2 := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	f1 := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	jpt := map[int]float64{}
	for _, conc := range reporttest.Levels {
		l, err := results.LoadLevel(run.LevelResult(conc))
		require.NoError(t, err)
		p := plantedPower[conc]
		j := p.meanW * l.DurationS
		jpt[conc] = j / float64(l.TotalOutputTokens)
		gpuH := l.DurationS / 3600
		cells := row(t, readme, strconv.Itoa(conc), "1", f1(p.meanW), f1(p.peakW))
		require.Equal(t, f1(j), cells[4], "energy at conc %d", conc)
		require.Equal(t, f4(jpt[conc]), cells[5], "J per output token at conc %d", conc)
		require.Equal(t, f2(j/float64(l.Completed)), cells[6])
		require.Equal(t, f2(float64(l.TotalOutputTokens)/j), cells[7])
		require.Equal(t, fmt.Sprintf("%.0f (%.0f)", (2400+p.minClock)/2, p.minClock), cells[8])
		require.Equal(t, "150.0 of 288.0 (52.1%)", cells[10])
		require.Equal(t, f4(2*gpuH/float64(l.TotalInputTokens)*1e6), cells[11], "$ per M input tokens at conc %d", conc)
		require.Equal(t, f4(2*gpuH/float64(l.TotalOutputTokens)*1e6), cells[12], "$ per M output tokens at conc %d", conc)
		// The headline table carries power and J per output token too.
		require.Contains(t, readme, " | "+f1(p.meanW)+" | "+f4(jpt[conc])+" |\n")
	}
	require.Contains(t, readme, fmt.Sprintf("**Energy per output token falls %s× from conc 4 to conc 32** (%s → %s J",
		f2(jpt[4]/jpt[32]), f4(jpt[4]), f4(jpt[32])))
	require.Contains(t, readme, "![Energy per output token against concurrency](energy.svg)")
	require.Contains(t, readme, "The warm-ups drew 300.0 W before conc 4, 300.0 W before conc 16, 300.0 W before conc 32 (mean).")
	_, err = os.Stat(filepath.Join(dir, report.EnergyChart))
	require.NoError(t, err)

	// Per role: the profiled window's mean power (the lower reading, 50 W
	// under the level's mean) × the decode step's time, over its batch,
	// split by the groups' shares.
	head := row(t, readme, "role")
	require.Equal(t, []string{"role", "conc 4 (mJ / token)", "conc 16 (mJ / token)", "conc 32 (mJ / token)"}, head)
	want := map[string][]string{}
	totals := make([]float64, len(reporttest.Levels))
	for i, conc := range reporttest.Levels {
		lf, err := analysis.LoadLevelFile(filepath.Join(run.Level(conc), analysis.LevelFileName))
		require.NoError(t, err)
		perTok := (plantedPower[conc].meanW - 50) * lf.StepTime.StepUS / 1e6 / float64(lf.DecodeBS())
		for _, s := range lf.DecodeShares() {
			want[s.Group] = append(want[s.Group], f2(perTok*s.Share*1000))
			totals[i] += perTok * s.Share * 1000
		}
	}
	for _, g := range []string{analysis.GroupAttention, analysis.GroupExperts, analysis.GroupGEMM, analysis.GroupIdle} {
		require.Len(t, want[g], 3, g)
		require.Equal(t, append([]string{g}, want[g]...), row(t, readme, g), g)
	}
	require.Equal(t, []string{"**decode step, per token**", "**" + f2(totals[0]) + "**", "**" + f2(totals[1]) + "**", "**" + f2(totals[2]) + "**"},
		row(t, readme, "**decode step, per token**"))
	require.Contains(t, readme, "An apportionment, not a measurement")

	// Throttling leads the observations: conc 32 only (conc 16's 2% is
	// under the threshold, and its clock stays above 90% of 2400 MHz).
	obs := readme[strings.Index(readme, "## Key observations"):]
	first := strings.SplitN(obs, "\n- ", 3)[1]
	l32, err := results.LoadLevel(run.LevelResult(32))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(first, "**The GPUs were held by their power cap**: conc 32 at its power cap for "+
		f1(0.8*l32.DurationS)+" s of its "+f1(l32.DurationS)+" s (80.0%) (graphics clock 1950 MHz mean, down to 1500 of the run's 2400 MHz; 750.0 W mean, 800.0 W peak)."), first)
	require.NotContains(t, first, "conc 16")
}

// A run without telemetry has no power section, no energy chart and its
// headline table as it was (TestGoldenReadme holds the rest byte for byte).
func TestNoTelemetryNoPowerSection(t *testing.T) {
	dir := runCopy(t)
	_, err := report.Build(dir, report.Options{GPUPrice: 3})
	require.NoError(t, err)
	b, err := os.ReadFile(results.Run(dir).Readme())
	require.NoError(t, err)
	require.NotContains(t, string(b), "## GPU power and energy")
	require.NotContains(t, string(b), "J / output token")
	_, err = os.Stat(filepath.Join(dir, report.EnergyChart))
	require.True(t, os.IsNotExist(err))
}

// Without --gpu-price, a peaks file's price for the GPU prices the levels.
func TestPowerPriceFromPeaks(t *testing.T) {
	dir := runCopy(t)
	plantTelemetry(t, dir)
	run := results.Run(dir)
	info, err := results.LoadRunInfo(run.RunInfo())
	require.NoError(t, err)
	info.GPUPrice = 0
	var b bytes.Buffer
	require.NoError(t, info.Write(&b))
	require.NoError(t, os.WriteFile(run.RunInfo(), b.Bytes(), 0o644))
	peaks := filepath.Join(t.TempDir(), "peaks.csv")
	require.NoError(t, os.WriteFile(peaks, []byte("gpu,match,bf16_tflops,fp8_tflops,fp4_tflops,vector_tflops,hbm_tbs,memory_gb,kind,source,usd_per_gpu_hour\n"+
		"MI355X,MI355X,2500,5000,10000,157.3,8,288,spec,test,4\n"), 0o644))
	_, err = report.Build(dir, report.Options{Peaks: peaks})
	require.NoError(t, err)
	readme, err := os.ReadFile(run.Readme())
	require.NoError(t, err)
	require.Contains(t, string(readme), "at $4.00 per GPU-hour (the peaks file's price for MI355X)")
	l, err := results.LoadLevel(run.LevelResult(4))
	require.NoError(t, err)
	cells := row(t, string(readme), "4", "1", "400.0")
	require.Equal(t, strconv.FormatFloat(4*l.DurationS/3600/float64(l.TotalOutputTokens)*1e6, 'f', 4, 64), cells[12])
}
