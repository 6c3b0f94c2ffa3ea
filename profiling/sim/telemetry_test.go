package sim

import (
	"encoding/json"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/telemetry"
	"github.com/profile-model/profile-model/tracing"
)

func TestStepPower(t *testing.T) {
	t.Parallel()
	// Power rises with the batch, and a prefill's GEMMs draw more than any
	// decode step.
	p1, p64, p128, p512 := stepPower(tracing.StepDecode, 1), stepPower(tracing.StepDecode, 64), stepPower(tracing.StepDecode, 128), stepPower(tracing.StepDecode, 512)
	require.Less(t, p1, p64)
	require.Less(t, p64, p128)
	require.Equal(t, p128, p512)
	require.InDelta(t, 180+1220*(0.35+0.5*64.0/128), p64, 1e-9)
	require.Greater(t, stepPower(tracing.StepPrefill, 1), p512)
	require.Greater(t, stepPower(tracing.StepMixed, 8), stepPower(tracing.StepDecode, 8))

	w, clk, lim := capped(p128, 0)
	require.Equal(t, p128, w)
	require.Equal(t, simMaxClockMHz, clk)
	require.False(t, lim)
	w, clk, lim = capped(p128, 800) // 1217 W wanted
	require.Equal(t, 800.0, w)
	require.InDelta(t, 2400*(800.0-180)/(p128-180), clk, 1e-9)
	require.True(t, lim)
}

// A reading is the mean since the previous one: busy steps at their power,
// the rest of the time idle.
func TestMeterRead(t *testing.T) {
	t.Parallel()
	var m gpuMeter
	t0 := time.Unix(100, 0)
	// 60 ms of decode at batch 64 under an 800 W cap, in 100 ms of the
	// engine's clock (a time scale of 2: 50 ms of wall time).
	m.step(tracing.StepDecode, 64, 30e6, 800, 1000)
	m.step(tracing.StepDecode, 64, 30e6, 800, 1000)
	doc := m.read(t0.Add(50*time.Millisecond), t0, 2, 2)
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	ss, err := telemetry.ParseAMDSMI(b, t0)
	require.NoError(t, err)
	require.Len(t, ss, 2)
	p64 := stepPower(tracing.StepDecode, 64) // 973 W
	require.Greater(t, p64, 800.0)
	require.Equal(t, math.Round((800*0.06+180*0.04)/0.1), ss[0].PowerW)
	require.Equal(t, math.Round(2400*(800-180)/(p64-180)), ss[0].SMClockMHz)
	require.Equal(t, 60.0, ss[0].UtilPct)
	require.Equal(t, []string{telemetry.LimitPower}, ss[0].Limits)
	require.Equal(t, simWeightsMiB+500, ss[1].MemUsedMiB) // 1000 blocks over 2 ranks
	require.Equal(t, simVRAMMiB, ss[1].MemTotMiB)

	// Nothing ran since: idle power, full clock, no limit.
	ss2, err := telemetry.ParseAMDSMI(mustJSON(t, m.read(t0.Add(100*time.Millisecond), t0, 2, 1)), t0)
	require.NoError(t, err)
	require.Equal(t, simIdleW, ss2[0].PowerW)
	require.Equal(t, simMaxClockMHz, ss2[0].SMClockMHz)
	require.Empty(t, ss2[0].Limits)
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// The route answers in amd-smi's shape, one object per TP rank, with the
// cap's limit once a step ran above it.
func TestTelemetryRoute(t *testing.T) {
	t.Parallel()
	for _, cap := range []float64{0, 300} {
		ts := start(t, Config{TP: 2, PowerCapW: cap, backend: &recBackend{}})
		code, _ := post(t, ts.URL+"/v1/completions", map[string]any{"model": "m", "prompt": "a b c", "max_tokens": 20, "ignore_eos": true})
		require.Equal(t, http.StatusOK, code)
		code, body := get(t, ts.URL+"/debug/telemetry")
		require.Equal(t, http.StatusOK, code)
		ss, err := telemetry.ParseAMDSMI(body, time.Now())
		require.NoError(t, err)
		require.Len(t, ss, 2)
		if cap == 0 {
			require.Empty(t, ss[0].Limits)
			require.Equal(t, simMaxClockMHz, ss[0].SMClockMHz)
		} else {
			require.Equal(t, []string{telemetry.LimitPower}, ss[0].Limits)
			require.Less(t, ss[0].SMClockMHz, simMaxClockMHz)
			require.LessOrEqual(t, ss[0].PowerW, cap)
		}
		require.Greater(t, ss[0].PowerW, simIdleW-1)
	}
	_, err := New(Config{Model: "m", PowerCapW: 100})
	require.ErrorContains(t, err, "above the simulated GPU's idle power of 180 W")
}
