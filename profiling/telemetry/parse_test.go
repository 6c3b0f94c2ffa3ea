package telemetry

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

var at = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// nan marks a figure the tool did not give.
var nan = math.NaN()

// ignoreAt leaves the reading times out of a comparison.
var ignoreAt = cmpopts.IgnoreFields(Sample{}, "At")

func TestParseNvidia(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		sec  int // the first reading's second, from the tool's timestamp
		want []Sample
	}{
		{"nvidia-smi-r535-2gpu.csv", 11, []Sample{
			{GPU: 0, PowerW: 412.37, SMClockMHz: 1980, MemClkMHz: 2619, TempC: 61, UtilPct: 97, MemUsedMiB: 71234, MemTotMiB: 81559},
			{GPU: 1, PowerW: 398.02, SMClockMHz: 1980, MemClkMHz: 2619, TempC: 58, UtilPct: 95, MemUsedMiB: 71234, MemTotMiB: 81559},
			{GPU: 0, PowerW: 699.84, SMClockMHz: 1755, MemClkMHz: 2619, TempC: 66, UtilPct: 100, MemUsedMiB: 71240, MemTotMiB: 81559, Limits: []string{LimitPower}},
			{GPU: 1, PowerW: 701.10, SMClockMHz: 1740, MemClkMHz: 2619, TempC: 64, UtilPct: 100, MemUsedMiB: 71240, MemTotMiB: 81559, Limits: []string{LimitPower}},
			// 0x24: SwPowerCap and SwThermalSlowdown.
			{GPU: 0, PowerW: 700.05, SMClockMHz: 1410, MemClkMHz: 2619, TempC: 84, UtilPct: 100, MemUsedMiB: 71240, MemTotMiB: 81559, Limits: []string{LimitPower, LimitThermal}},
			{GPU: 1, PowerW: nan, SMClockMHz: 1980, MemClkMHz: 2619, TempC: 62, UtilPct: 99, MemUsedMiB: 71240, MemTotMiB: 81559},
		}},
		{"nvidia-smi-r470-1gpu.csv", 0, []Sample{
			{GPU: 0, PowerW: 250.12, SMClockMHz: 1410, MemClkMHz: 1593, TempC: 55, UtilPct: 88, MemUsedMiB: 30110, MemTotMiB: 40960},
			{GPU: 0, PowerW: 301.50, SMClockMHz: 1275, MemClkMHz: 1593, TempC: 71, UtilPct: 100, MemUsedMiB: 30110, MemTotMiB: 40960, Limits: []string{LimitThermal}},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			var got []Sample
			err := ReadNvidia(strings.NewReader(string(readFixture(t, tc.file))), func() time.Time { return at },
				func(s Sample) { got = append(got, s) }, func(line int, err error) { t.Errorf("line %d: %v", line, err) })
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(tc.want, got, ignoreAt, cmpopts.EquateNaNs(), cmpopts.EquateEmpty()))
			// The tool's own timestamps, to the millisecond.
			require.Equal(t, tc.sec, got[0].At.Second())
			require.NotEqual(t, at, got[0].At)
		})
	}
}

func TestParseNvidiaGarbage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ line, want string }{
		{"Failed to initialize NVML: Driver/library version mismatch", "1 cells"},
		{"0, 2024/11/05 14:02:11.104, 412.37, 1980, 2619, 61, 97, 71234, 81559", "9 cells"},
		{"x, 2024/11/05 14:02:11.104, 412.37, 1980, 2619, 61, 97, 71234, 81559, 0x0", `GPU index "x"`},
		{"0, 2024/11/05 14:02:11.104, 41e999, 1980, 2619, 61, 97, 71234, 81559, 0x0", "power.draw"},
		{"0, 2024/11/05 14:02:11.104, -3, 1980, 2619, 61, 97, 71234, 81559, 0x0", "power.draw"},
		{"0, 2024/11/05 14:02:11.104, 412.37, 1980, 2619, 61, 97, 71234, 81559, Active", "hexadecimal"},
	} {
		_, err := ParseNvidiaLine(tc.line, at)
		require.ErrorContains(t, err, tc.want, tc.line)
	}
	// Garbage lines in a stream are reported one by one; the good ones read.
	var good, bad int
	in := "garbage\n0, t, 1, 2, 3, 4, 5, 6, 7, 0x0\n\n{\"json\": 1}\n"
	require.NoError(t, ReadNvidia(strings.NewReader(in), time.Now, func(Sample) { good++ }, func(int, error) { bad++ }))
	require.Equal(t, 1, good)
	require.Equal(t, 2, bad)
}

func TestParseAMDSMI(t *testing.T) {
	t.Parallel()
	got, err := ParseAMDSMI(readFixture(t, "amd-smi-24.5-list.json"), at)
	require.NoError(t, err)
	want := []Sample{
		// Two XCDs' clocks averaged; the PPT violation names the power cap
		// (throttle_status only says THROTTLED).
		{GPU: 0, At: at, PowerW: 738, SMClockMHz: 1800, MemClkMHz: 1300, TempC: 78, UtilPct: 93, MemUsedMiB: 181020, MemTotMiB: 196592, Limits: []string{LimitPower}},
		// No hotspot: the edge temperature.
		{GPU: 1, At: at, PowerW: 142, SMClockMHz: 132, MemClkMHz: 900, TempC: 39, UtilPct: 0, MemUsedMiB: 283, MemTotMiB: 196592},
	}
	require.Empty(t, cmp.Diff(want, got, cmpopts.EquateNaNs(), cmpopts.EquateEmpty()))

	got, err = ParseAMDSMI(readFixture(t, "amd-smi-gpu-data.json"), at)
	require.NoError(t, err)
	want = []Sample{{GPU: 3, At: at, PowerW: 604, SMClockMHz: 2400, MemClkMHz: 1900, TempC: 71, UtilPct: 55, MemUsedMiB: 250112, MemTotMiB: 294896, Limits: []string{LimitThermal}}}
	require.Empty(t, cmp.Diff(want, got, cmpopts.EquateNaNs()))

	// throttle_status alone names no limit.
	got, err = ParseAMDSMI([]byte(`[{"gpu": 0, "power": {"socket_power": 100, "throttle_status": "THROTTLED"}}]`), at)
	require.NoError(t, err)
	require.Equal(t, []string{LimitUnnamed}, got[0].Limits)
	require.True(t, math.IsNaN(got[0].SMClockMHz))
}

func TestParseROCmSMI(t *testing.T) {
	t.Parallel()
	got, err := ParseROCmSMI(readFixture(t, "rocm-smi-3.0-2gpu.json"), at)
	require.NoError(t, err)
	want := []Sample{
		{GPU: 0, At: at, PowerW: 561, SMClockMHz: 2100, MemClkMHz: 1300, TempC: 67, UtilPct: 100, MemUsedMiB: 190054850560.0 / (1 << 20), MemTotMiB: 206141652992.0 / (1 << 20)},
		{GPU: 1, At: at, PowerW: 97, SMClockMHz: 800, MemClkMHz: 900, TempC: 35, UtilPct: 0, MemUsedMiB: 297795584.0 / (1 << 20), MemTotMiB: 206141652992.0 / (1 << 20)},
	}
	require.Empty(t, cmp.Diff(want, got, cmpopts.EquateNaNs(), cmpopts.EquateEmpty()))
}

func TestParseAMDGarbage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		parse func([]byte, time.Time) ([]Sample, error)
		in    string
		want  string
	}{
		{ParseAMDSMI, "", "no JSON"},
		{ParseAMDSMI, "amd-smi: command not found", "no JSON"},
		{ParseAMDSMI, "[]", "lists no GPU"},
		{ParseAMDSMI, `[{"power": {}}]`, `no "gpu" index`},
		{ParseAMDSMI, `[{"gpu": -1}]`, `no "gpu" index`},
		{ParseAMDSMI, `{"cpu_data": []}`, `without "gpu_data"`},
		{ParseAMDSMI, `[{"gpu": 0,`, "amd-smi:"},
		{ParseROCmSMI, `{"system": {"Driver version": "6.8"}}`, "lists no GPU"},
		{ParseROCmSMI, `[1, 2]`, "rocm-smi:"},
		{ParseROCmSMI, "ERROR: GPU[0] : Unable to get power", "rocm-smi: invalid character"},
	} {
		_, err := tc.parse([]byte(tc.in), at)
		require.ErrorContains(t, err, tc.want, tc.in)
	}
}

// checkSamples holds what every parsed sample must satisfy.
func checkSamples(t *testing.T, ss []Sample) {
	for _, s := range ss {
		for _, v := range []float64{s.PowerW, s.SMClockMHz, s.MemClkMHz, s.TempC, s.UtilPct, s.MemUsedMiB, s.MemTotMiB} {
			if !math.IsNaN(v) && (v < 0 || math.IsInf(v, 0)) {
				t.Fatalf("GPU %d: reading %v", s.GPU, v)
			}
		}
		if s.GPU < 0 {
			t.Fatalf("GPU index %d", s.GPU)
		}
	}
}

func FuzzParseNvidiaLine(f *testing.F) {
	for _, l := range strings.Split(string(readFixture(f, "nvidia-smi-r535-2gpu.csv")), "\n") {
		f.Add(l)
	}
	f.Add("0, x, [N/A], [Not Supported], , 1, 2, 3, 4, 0xffffffffffffffff")
	f.Fuzz(func(t *testing.T, line string) {
		s, err := ParseNvidiaLine(line, at)
		if err == nil {
			checkSamples(t, []Sample{s})
		}
	})
}

func FuzzParseAMDSMI(f *testing.F) {
	f.Add(readFixture(f, "amd-smi-24.5-list.json"))
	f.Add(readFixture(f, "amd-smi-gpu-data.json"))
	f.Add([]byte(`[{"gpu": 1e3, "clock": {"gfx_0": {"clk": "12 MHz"}}}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ss, err := ParseAMDSMI(b, at)
		if err == nil {
			checkSamples(t, ss)
		}
	})
}

func FuzzParseROCmSMI(f *testing.F) {
	f.Add(readFixture(f, "rocm-smi-3.0-2gpu.json"))
	f.Add([]byte(`{"card9": {"sclk clock speed:": "(1.5Mhz)"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ss, err := ParseROCmSMI(b, at)
		if err == nil {
			checkSamples(t, ss)
		}
	})
}

func TestParseProcesses(t *testing.T) {
	t.Parallel()
	got, err := ParseAMDSMIProcesses(readFixture(t, "amd-smi-24.5-process.json"))
	require.NoError(t, err)
	require.Equal(t, []Process{{GPU: 1, PID: 48213, Name: "python3", UsedMiB: 150323855360.0 / (1 << 20)}}, got)
	require.Equal(t, "python3 (pid 48213, 140.0 GiB)", got[0].String())

	got, err = ParseNvidiaApps(readFixture(t, "nvidia-smi-compute-apps.csv"), readFixture(t, "nvidia-smi-bus.csv"))
	require.NoError(t, err)
	require.Equal(t, []Process{{GPU: 0, PID: 51102, Name: "/usr/bin/python3", UsedMiB: 61245}, {GPU: 1, PID: 51290, Name: "vllm serve, x", UsedMiB: 1024}}, got)

	_, err = ParseNvidiaApps([]byte("00000000:99:00.0, 1, p, 5\n"), readFixture(t, "nvidia-smi-bus.csv"))
	require.ErrorContains(t, err, "no listed GPU's")
	_, err = ParseAMDSMIProcesses([]byte("garbage"))
	require.ErrorContains(t, err, "no JSON")
	none, err := ParseNvidiaApps([]byte("No running processes found\n"), readFixture(t, "nvidia-smi-bus.csv"))
	require.NoError(t, err)
	require.Empty(t, none)
}
