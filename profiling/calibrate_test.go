package profiling

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/profiling/bench"
	"github.com/profile-model/profile-model/profiling/sim"
)

// CalibrateVar, set to 1, runs TestCalibrationAgainstRecorded: a profiled
// sweep of the simulated engine at the settings of every recorded corpus
// run, about a minute and a half of wall time at time scale 1.
const CalibrateVar = "PROFILE_MODEL_CALIBRATE"

// calibrateScaleVar sets the simulated engine's time scale for that test
// (default 1: real time). The client's wall-clock medians are multiplied by
// it; at 4 the sweep takes a quarter of the time and the medians move by a
// few percent (wake-up latency weighs 4x more against shorter steps).
const calibrateScaleVar = "PROFILE_MODEL_CALIBRATE_SCALE"

// calibrationTolerance is how far a simulated median may lie from the
// recorded one.
const calibrationTolerance = 0.15

// recordedRun is what a corpus bench log says about one level.
type recordedRun struct {
	isl, osl, conc, prompts int
	ratio                   float64
	ttftMS, tpotMS          float64
}

var (
	benchLogName = regexp.MustCompile(`^level3_isl(\d+)_conc(\d+)_bench\.log$`)
	logField     = func(name string) *regexp.Regexp {
		return regexp.MustCompile(regexp.QuoteMeta(name) + `=([0-9.]+)`)
	}
	logMedian = func(name string) *regexp.Regexp {
		return regexp.MustCompile(`Median ` + name + ` \(ms\):\s+([0-9.]+)`)
	}
)

// readRecorded parses the recorded bench logs of the ATOM MiniMax-M2.5 runs.
func readRecorded(t *testing.T, dir string) []recordedRun {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "level3_isl*_conc*_bench.log"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "%s: no level3_isl*_conc*_bench.log", dir)
	var runs []recordedRun
	for _, f := range files {
		if !benchLogName.MatchString(filepath.Base(f)) {
			continue
		}
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		num := func(re *regexp.Regexp) float64 {
			m := re.FindSubmatch(data)
			require.NotNil(t, m, "%s: no %s", f, re)
			v, err := strconv.ParseFloat(string(m[1]), 64)
			require.NoError(t, err, f)
			return v
		}
		runs = append(runs, recordedRun{
			isl: int(num(logField("random_input_len"))), osl: int(num(logField("random_output_len"))),
			ratio: num(logField("random_range_ratio")), conc: int(num(logField("max_concurrency"))),
			prompts: int(num(logField("num_prompts"))),
			ttftMS:  num(logMedian("TTFT")), tpotMS: num(logMedian("TPOT")),
		})
	}
	slices.SortFunc(runs, func(a, b recordedRun) int {
		if a.isl != b.isl {
			return a.isl - b.isl
		}
		return a.conc - b.conc
	})
	return runs
}

// TestCalibrationAgainstRecorded runs the simulated engine with its built-in
// kernel model at the settings of each recorded corpus run (MiniMax-M2.5,
// max-num-seqs and graph sizes of the recorded sweep, 50 prompts per
// level, profiler on) and checks that the median TTFT and TPOT are within
// 15% of the recorded ones. It prints the comparison table. Slow: it runs
// only with PROFILE_MODEL_CALIBRATE=1 (make calibrate).
func TestCalibrationAgainstRecorded(t *testing.T) {
	if os.Getenv(CalibrateVar) != "1" {
		t.Skipf("a sweep of about 90 s in real time: set %s=1 (make calibrate) to run it", CalibrateVar)
	}
	dir := filepath.Join(corpus.Dir(t), "atom-minimax-m2.5")
	recorded := readRecorded(t, dir)
	sweep, err := LoadSweep(filepath.Join("..", "fixtures", "sweeps", "atom-minimax-m2.5-mi355x.json"))
	require.NoError(t, err)
	scale := 1.0
	if v := os.Getenv(calibrateScaleVar); v != "" {
		scale, err = strconv.ParseFloat(v, 64)
		require.NoError(t, err, calibrateScaleVar)
	}

	byISL := map[int][]recordedRun{}
	var isls []int
	for _, r := range recorded {
		if _, ok := byISL[r.isl]; !ok {
			isls = append(isls, r.isl)
		}
		byISL[r.isl] = append(byISL[r.isl], r)
	}
	type row struct {
		rec              recordedRun
		simTTFT, simTPOT float64
		errTTFT, errTPOT float64
	}
	var rows []row
	for _, isl := range isls {
		runs := byISL[isl]
		prof := t.TempDir()
		srv, err := sim.New(sim.Config{Model: sweep.Model, ProfilerDir: prof, MaxNumSeqs: sweep.MaxNumSeqs,
			CudagraphCaptureSizes: sweep.CaptureSizes, TimeScale: scale, PythonPerStep: -1})
		require.NoError(t, err)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ctx, ln) }()

		var concs []int
		for _, r := range runs {
			concs = append(concs, r.conc)
		}
		var log bytes.Buffer
		res, err := bench.Sweep(t.Context(), bench.SweepConfig{
			URL: "http://" + ln.Addr().String(), Model: sweep.Model,
			ISL: isl, OSL: runs[0].osl, RangeRatio: runs[0].ratio, Concurrencies: concs,
			NumPrompts: runs[0].prompts, Warmups: 1, Profile: true, TraceDir: prof,
			RunDir: filepath.Join(t.TempDir(), "run"), Log: &log,
		})
		require.NoError(t, err, log.String())
		cancel()
		require.NoError(t, <-served)
		for i, lv := range res.Levels {
			r := runs[i]
			// The client measures wall time; the engine runs scale times faster.
			ttft, tpot := lv.Metrics.TTFT.Median*scale, lv.Metrics.TPOT.Median*scale
			t.Logf("isl %d conc %d: median ITL %.2f ms, mean TTFT %.1f ms, benchmark duration %.2f s (engine time)", isl, r.conc,
				lv.Metrics.ITL.Median*scale, lv.Metrics.TTFT.Mean*scale, lv.End.Sub(lv.Start).Seconds()*scale)
			rows = append(rows, row{rec: r, simTTFT: ttft, simTPOT: tpot,
				errTTFT: ttft/r.ttftMS - 1, errTPOT: tpot/r.tpotMS - 1})
		}
	}
	var tab bytes.Buffer
	fmt.Fprintf(&tab, "time scale %g (simulated times in engine time); recorded vs simulated medians (ms)\n", scale)
	fmt.Fprintf(&tab, "| ISL | conc | TTFT rec | TTFT sim | err | TPOT rec | TPOT sim | err |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&tab, "| %d | %d | %.1f | %.1f | %+.1f%% | %.2f | %.2f | %+.1f%% |\n", r.rec.isl, r.rec.conc,
			r.rec.ttftMS, r.simTTFT, 100*r.errTTFT, r.rec.tpotMS, r.simTPOT, 100*r.errTPOT)
	}
	t.Log("\n" + tab.String())
	for _, r := range rows {
		name := fmt.Sprintf("isl %d conc %d", r.rec.isl, r.rec.conc)
		if math.Abs(r.errTTFT) > calibrationTolerance {
			t.Errorf("%s: median TTFT %.1f ms, recorded %.1f ms (%+.1f%%, beyond ±15%%)", name, r.simTTFT, r.rec.ttftMS, 100*r.errTTFT)
		}
		if math.Abs(r.errTPOT) > calibrationTolerance {
			t.Errorf("%s: median TPOT %.2f ms, recorded %.2f ms (%+.1f%%, beyond ±15%%)", name, r.simTPOT, r.rec.tpotMS, 100*r.errTPOT)
		}
	}
}
