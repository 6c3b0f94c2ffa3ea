package telemetry

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
)

// The test binary stands in for nvidia-smi when this variable names a
// fixture: it prints the fixture's rounds every -lms milliseconds until it
// is killed, as nvidia-smi does.
const fakeNvidiaEnv = "TELEMETRY_FAKE_NVIDIA_SMI"

func TestMain(m *testing.M) {
	if f := os.Getenv(fakeNvidiaEnv); f != "" {
		fakeNvidia(f)
		return
	}
	os.Exit(m.Run())
}

func fakeNvidia(fixture string) {
	period := 10 * time.Millisecond
	for i, a := range os.Args {
		if a == "-lms" && i+1 < len(os.Args) {
			var ms int
			fmt.Sscan(os.Args[i+1], &ms)
			period = time.Duration(ms) * time.Millisecond
		}
	}
	b, err := os.ReadFile(fixture)
	if err != nil {
		os.Exit(3)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	w := bufio.NewWriter(os.Stdout)
	for {
		// Two lines a round: both GPUs.
		for i := 0; i+1 < len(lines); i += 2 {
			fmt.Fprintln(w, lines[i])
			fmt.Fprintln(w, lines[i+1])
			w.Flush()
			time.Sleep(period)
		}
	}
}

func TestFindToolMissing(t *testing.T) {
	t.Parallel()
	src, warn := Find(context.Background(), func(string) (string, error) { return "", exec.ErrNotFound }, nil)
	require.Empty(t, src.Tool)
	require.Contains(t, warn, "none of amd-smi, rocm-smi or nvidia-smi is on PATH")
}

func TestFindNvidiaReasonsField(t *testing.T) {
	t.Parallel()
	look := func(f string) (string, error) {
		if f == NvidiaSMI {
			return "/x/nvidia-smi", nil
		}
		return "", exec.ErrNotFound
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, NvidiaEventReasons},
		{errors.New(`Field "clocks_event_reasons.active" is not a valid field to query.`), NvidiaThrottleReasons},
	} {
		src, warn := Find(context.Background(), look, func(context.Context, string, ...string) ([]byte, error) { return nil, tc.err })
		require.Empty(t, warn)
		require.Equal(t, NvidiaSMI, src.Tool)
		require.Equal(t, tc.want, src.Reasons)
		require.Contains(t, src.Describe(), "--query-gpu=index,timestamp,power.draw,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu,memory.used,memory.total,"+tc.want)
	}
}

// A polled amd-smi: every reading of the fixture, GPU 5 (one the engine
// uses) never in it.
func TestRecordingPolledGPUMissing(t *testing.T) {
	t.Parallel()
	fixture := readFixture(t, "amd-smi-24.5-list.json")
	var calls int
	src := Source{Tool: AMDSMI, Path: "amd-smi", Devices: []int{0, 5}, Period: 5 * time.Millisecond,
		Run: func(_ context.Context, path string, args ...string) ([]byte, error) {
			calls++
			require.Equal(t, []string{"metric", "--power", "--clock", "--temperature", "--usage", "--mem-usage", "--throttle", "--json", "--gpu", "0", "5"}, args)
			return fixture, nil
		}}
	rec := src.Start(context.Background())
	waitRounds(t, rec, 3)
	tel, warns := rec.Stop()
	require.NotNil(t, tel)
	// A reading that ends after the stop is dropped.
	require.LessOrEqual(t, tel.Rounds, calls)
	require.GreaterOrEqual(t, tel.Rounds, 3)
	require.Len(t, tel.GPUs, 2)
	g := tel.GPUs[0]
	require.Equal(t, 0, g.Index)
	require.Equal(t, 738.0, g.MeanPowerW)
	require.Equal(t, 1800.0, g.MeanSMClockMHz)
	require.Equal(t, 181020.0, g.PeakMemUsedMiB)
	require.Equal(t, LimitPower, g.Throttle[0].Limit)
	require.True(t, tel.GPUs[1].Missing)
	require.Equal(t, []int{5}, tel.Missing())
	// GPU 1 is not the engine's: its power is not in the sum.
	require.Equal(t, 738.0, tel.MeanPowerW())
	require.Len(t, warns, 1)
	require.Contains(t, warns[0], "never reported GPU 5")
}

func TestRecordingToolFails(t *testing.T) {
	t.Parallel()
	src := Source{Tool: ROCmSMI, Path: "rocm-smi", Period: 5 * time.Millisecond,
		Run: func(context.Context, string, ...string) ([]byte, error) { return []byte("garbage"), nil }}
	rec := src.Start(context.Background())
	time.Sleep(30 * time.Millisecond)
	tel, warns := rec.Stop()
	require.Nil(t, tel)
	require.Len(t, warns, 2)
	require.Contains(t, warns[0], "GPU readings of rocm-smi failed or did not read (first: rocm-smi: no JSON")
	require.Contains(t, warns[1], "the level has no GPU telemetry")
}

// nvidia-smi as a real child process (this test binary): its stream is
// read as it comes, and Stop ends the process.
func TestRecordingNvidiaStream(t *testing.T) { // not parallel: it sets the environment
	exe, err := os.Executable()
	require.NoError(t, err)
	t.Setenv(fakeNvidiaEnv, "testdata/nvidia-smi-r535-2gpu.csv")
	src := Source{Tool: NvidiaSMI, Path: exe, Reasons: NvidiaEventReasons, Devices: []int{0, 1}, Period: 20 * time.Millisecond}
	rec := src.Start(context.Background())
	waitRounds(t, rec, 7)
	tel, warns := rec.Stop()
	require.Empty(t, warns)
	require.NotNil(t, tel)
	require.GreaterOrEqual(t, tel.Rounds, 6)
	require.Len(t, tel.GPUs, 2)
	// GPU 0 reads 412.37, 699.84, 700.05 W in turn; the clock falls to
	// 1410 MHz under the power cap and a thermal slowdown.
	g := tel.GPUs[0]
	require.InDelta(t, (412.37+699.84+700.05)/3, g.MeanPowerW, 60)
	require.Equal(t, 700.05, g.PeakPowerW)
	require.Equal(t, 1410.0, g.MinSMClockMHz)
	require.Equal(t, 84.0, g.PeakTempC)
	limits := map[string]float64{}
	for _, l := range g.Throttle {
		limits[l.Limit] = l.Seconds
	}
	require.Greater(t, limits[LimitPower], limits[LimitThermal])
	require.Greater(t, limits[LimitThermal], 0.0)
	// GPU 1's unknown power leaves it out of that round's mean, not as 0.
	require.Greater(t, tel.GPUs[1].MeanPowerW, 398.0)
}

// waitRounds waits until rec holds n rounds (a loaded machine starts a
// child process slowly).
func waitRounds(t *testing.T, rec *Recording, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		rec.mu.Lock()
		got := len(rec.rounds)
		rec.mu.Unlock()
		if got >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("fewer than %d rounds in 20 s", n)
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	start := at
	p := 100 * time.Millisecond
	s := func(gpu int, ms int, w, clk float64, limits ...string) Sample {
		x := newSample(gpu, start.Add(time.Duration(ms)*time.Millisecond))
		x.PowerW, x.SMClockMHz, x.Limits = w, clk, limits
		return x
	}
	rounds := []Round{
		{At: start, Samples: []Sample{s(0, 0, 300, 2000), s(1, 0, 100, 2000)}},
		{At: start.Add(p), Samples: []Sample{s(0, 100, 500, 1500, LimitPower), s(1, 100, 200, 2000)}},
		{At: start.Add(2 * p), Samples: []Sample{s(0, 200, 500, 1400, LimitPower), s(1, 200, 300, 2000)}},
	}
	tel := Summarize(Sim, p, start, start.Add(250*time.Millisecond), nil, rounds)
	require.Equal(t, []results.PowerPoint{{T: 0, W: 400}, {T: 0.1, W: 700}, {T: 0.2, W: 800}}, tel.Power)
	require.InDelta(t, 1300.0/3+200, tel.MeanPowerW(), 1e-3)
	require.Equal(t, 800.0, tel.PeakPowerW())
	require.InDelta(t, (1300.0/3+200)*0.25, tel.EnergyJ(), 1e-3)
	// 100 ms to the next reading, then 50 ms to the phase's end.
	require.Equal(t, []results.LimitTime{{Limit: LimitPower, Seconds: 0.15}}, tel.GPUs[0].Throttle)
	require.Equal(t, 0.15, tel.ThrottleS())
	require.InDelta(t, 750.0, tel.MeanPowerBetween(0.05, 0.25), 1e-9)
	mean, lo, hi := tel.SMClock()
	require.InDelta(t, (4900.0/3+2000)/2, mean, 1e-3)
	require.Equal(t, 1400.0, lo)
	require.Equal(t, 2000.0, hi)
}

func TestServes(t *testing.T) {
	t.Parallel()
	fixture := readFixture(t, "amd-smi-24.5-list.json")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/debug/telemetry":
			w.Write(fixture)
		case "/garbage":
			w.Write([]byte("<html>"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	require.True(t, Serves(context.Background(), srv.URL+"/debug/telemetry"))
	require.False(t, Serves(context.Background(), srv.URL+"/other"), "a real engine's 404")
	require.False(t, Serves(context.Background(), srv.URL+"/garbage"))
	// And the sampler reads it as the simulated engine's.
	rec := Source{Tool: Sim, URL: srv.URL + "/debug/telemetry", Period: 5 * time.Millisecond}.Start(context.Background())
	waitRounds(t, rec, 2)
	tel, warns := rec.Stop()
	require.Empty(t, warns)
	require.Equal(t, 738.0+142, tel.MeanPowerW())
}

// amd-smi before ROCm 6.3 knows no --throttle: it is left out.
func TestFindAMDSMIThrottle(t *testing.T) {
	t.Parallel()
	look := func(f string) (string, error) {
		if f == AMDSMI {
			return "/x/amd-smi", nil
		}
		return "", exec.ErrNotFound
	}
	for _, tc := range []struct {
		help string
		want bool
	}{{"  -T, --throttle        Displays throttle accumulators", false}, {"  -u, --usage  Displays engine usage", true}} {
		src, warn := Find(context.Background(), look, func(_ context.Context, _ string, args ...string) ([]byte, error) {
			require.Equal(t, []string{"metric", "--help"}, args)
			return []byte(tc.help), nil
		})
		require.Empty(t, warn)
		require.Equal(t, tc.want, src.NoThrottle)
		require.Equal(t, !tc.want, strings.Contains(src.Describe(), "--throttle"), src.Describe())
	}
}
