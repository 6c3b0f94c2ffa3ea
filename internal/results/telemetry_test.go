package results

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// telemetryLevel is sampleLevel with two GPUs sampled over its requests
// (12.5 s, 1550 output tokens, 31 requests) and its warm-up.
func telemetryLevel() *Level {
	l := sampleLevel(false)
	l.Telemetry = &Telemetry{Tool: "sim", PeriodMS: 200, DurationS: 12.6, Rounds: 63,
		GPUs: []GPUTelemetry{
			{Index: 0, Samples: 63, MeanPowerW: 600, PeakPowerW: 750, MeanSMClockMHz: 2000, MinSMClockMHz: 1700, MaxSMClockMHz: 2400,
				PeakTempC: 80, MeanUtilPct: 90, PeakMemUsedMiB: 180000, MemTotalMiB: 196592,
				Throttle: []LimitTime{{"power cap", 4.2}}},
			{Index: 1, Samples: 63, MeanPowerW: 400, PeakPowerW: 500, MeanSMClockMHz: 2400, MinSMClockMHz: 2400, MaxSMClockMHz: 2400,
				PeakMemUsedMiB: 170000, MemTotalMiB: 196592, Throttle: []LimitTime{{"power cap", 1}, {"thermal", 2}}},
		},
		Power: []PowerPoint{{0, 900}, {0.2, 1250}, {0.4, 1000}}}
	l.WarmupTelemetry = &Telemetry{Tool: "sim", PeriodMS: 200, DurationS: 1, Rounds: 5, GPUs: []GPUTelemetry{{Index: 0, Samples: 5, MeanPowerW: 200}}}
	return l
}

func TestTelemetryRoundTrip(t *testing.T) {
	t.Parallel()
	l := telemetryLevel()
	var b bytes.Buffer
	require.NoError(t, l.Write(&b))
	require.Contains(t, b.String(), `"gpu_telemetry": {`)
	require.Contains(t, b.String(), `"warmup_gpu_telemetry": {`)
	back, err := parseLevel(b.Bytes())
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(l, back))

	// Without telemetry the document has none of its keys.
	b.Reset()
	require.NoError(t, sampleLevel(false).Write(&b))
	require.NotContains(t, b.String(), "telemetry")
}

func TestEnergyOf(t *testing.T) {
	t.Parallel()
	_, ok := EnergyOf(sampleLevel(false))
	require.False(t, ok)
	e, ok := EnergyOf(telemetryLevel())
	require.True(t, ok)
	// 1000 W over the requests' 12.5 s, not the sampler's 12.6 s.
	require.Equal(t, 1000.0, e.MeanW)
	require.Equal(t, 1250.0, e.PeakW)
	require.Equal(t, 12500.0, e.J)
	require.InDelta(t, 12500.0/1550, e.JPerOutToken, 1e-12)
	require.InDelta(t, 1550.0/12500, e.OutTokensPerJ, 1e-12)
	require.InDelta(t, 12500.0/31, e.JPerRequest, 1e-12)
	require.Equal(t, 4.2, e.ThrottleS)
	require.Equal(t, []LimitTime{{"power cap", 4.2}, {"thermal", 2}}, e.ThrottleLimits)
	require.Equal(t, 180000.0, e.MemUsedMiB)
	require.Equal(t, 196592.0, e.MemTotalMiB)
	require.Equal(t, 2200.0, e.SMClockMeanMHz)
	require.Equal(t, 1700.0, e.SMClockMinMHz)
	// Two GPUs for 12.5 s at $2/GPU-hour: $0.013889, over 31 000 input
	// and 1550 output tokens.
	in, out := e.CostPerMTokens(2)
	require.InDelta(t, 2*2*12.5/3600/31000*1e6, in, 1e-9)
	require.InDelta(t, 2*2*12.5/3600/1550*1e6, out, 1e-9)
}

func TestSummaryTelemetryColumns(t *testing.T) {
	t.Parallel()
	// No level sampled: the header is the one it always was.
	plain := FormatSummary([]SummaryRow{SummaryRowOf(sampleLevel(false))})
	require.True(t, strings.HasPrefix(string(plain), strings.Join(SummaryHeader, ",")+"\n"))
	require.NotContains(t, string(plain), "gpu_")

	rows := []SummaryRow{SummaryRowOf(telemetryLevel()), SummaryRowOf(sampleLevel(false))}
	data := FormatSummary(rows)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Equal(t, strings.Join(append(append([]string{}, SummaryHeader...), TelemetryHeader...), ","), lines[0])
	require.True(t, strings.HasSuffix(lines[1], ",1000.0000,1250.0000,12500.0000,8.0645,403.2258,0.1240,4.2000,180000.0000,196592.0000,2200.0000,1700.0000"), lines[1])
	require.True(t, strings.HasSuffix(lines[2], ",,,,,,,,,,,"), "a level without telemetry has empty gpu cells: %s", lines[2])
	back, err := readSummary(bytes.NewReader(data))
	require.NoError(t, err)
	require.Nil(t, back[1].GPU)
	require.InDelta(t, 12500.0/1550, back[0].GPU[3], 1e-4)
	require.Equal(t, 4.2, back[0].GPU[6])
}

func TestBenchTelemetryUnits(t *testing.T) {
	t.Parallel()
	var plain bytes.Buffer
	require.NoError(t, WriteBench(&plain, []BenchResult{BenchResultOf(sampleLevel(false), 1024, 50)}))
	require.NotContains(t, plain.String(), "tok/J")

	rs := []BenchResult{BenchResultOf(telemetryLevel(), 1024, 50)}
	units := map[string]float64{}
	for _, m := range rs[0].Metrics {
		units[m.Unit] = m.Value
	}
	require.Equal(t, 1000.0, units["W-mean"])
	require.Equal(t, 1250.0, units["W-peak"])
	require.InDelta(t, 12500.0/1550, units["J/token"], 1e-12)
	require.InDelta(t, 1550.0/12500, units["tok/J"], 1e-12)
	require.Equal(t, 4.2, units["throttle-s"])
	var b bytes.Buffer
	require.NoError(t, WriteBench(&b, rs))
	require.Contains(t, b.String(), "Unit tok/J better=higher")
	back, err := ReadBench(&b, "bench.txt")
	require.NoError(t, err)
	require.Equal(t, rs, back)
	require.False(t, math.IsNaN(units["J/req"]))
}
