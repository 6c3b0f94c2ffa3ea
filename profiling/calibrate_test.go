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

	"github.com/profile-model/profile-model/analysis"
	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/kernelmodel"
	"github.com/profile-model/profile-model/profiling/bench"
	"github.com/profile-model/profile-model/profiling/sim"
	"github.com/profile-model/profile-model/tracing"
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
	// Not checked, printed beside the sim's: they tell where a median miss
	// comes from (see TestCalibrationAgainstRecorded).
	meanTTFTMS, meanTPOTMS, p99TTFTMS, p99ITLMS, durationS float64
	medianITLMS                                            float64 // one decode step, most often
	// prefills is the number of prefill forwards the level's whole-trace
	// inventory shows (flash-attention calls over the layers), 0 when the
	// corpus has no inventory of the level.
	prefills int
}

// recordedPrefills counts the prefill forwards of a recorded level from its
// whole-trace kernel inventory: prefill runs the flash-attention kernel once
// per layer, decode never does.
func recordedPrefills(t *testing.T, dir string, isl, conc, layers int) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("level3_isl%d_conc%d_kernels.csv", isl, conc)))
	if err != nil {
		return 0
	}
	m := regexp.MustCompile(`(?m)^aiter::fmha_fwd[^,]*,(\d+),`).FindSubmatch(data)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(string(m[1]))
	require.NoError(t, err)
	return n / layers
}

var (
	benchLogName = regexp.MustCompile(`^level3_isl(\d+)_conc(\d+)_bench\.log$`)
	logField     = func(name string) *regexp.Regexp {
		return regexp.MustCompile(regexp.QuoteMeta(name) + `=([0-9.]+)`)
	}
	logMedian = func(name string) *regexp.Regexp { return logStat("Median", name) }
	logStat   = func(stat, name string) *regexp.Regexp {
		return regexp.MustCompile(stat + ` ` + name + ` \(ms\):\s+([0-9.]+)`)
	}
	logDuration = regexp.MustCompile(`Benchmark duration \(s\):\s+([0-9.]+)`)
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
			meanTTFTMS: num(logStat("Mean", "TTFT")), meanTPOTMS: num(logStat("Mean", "TPOT")),
			p99TTFTMS: num(logStat("P99", "TTFT")), p99ITLMS: num(logStat("P99", "ITL")), medianITLMS: num(logMedian("ITL")),
			durationS: num(logDuration),
		})
		r := &runs[len(runs)-1]
		r.prefills = recordedPrefills(t, dir, r.isl, r.conc, kernelmodel.Default().Layers)
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
// 15% of the recorded ones. It prints the comparison table, and the
// recorded and simulated means, 99th percentiles and durations beside it.
// Slow: it runs only with PROFILE_MODEL_CALIBRATE=1 (make calibrate).
//
// Three medians stay beyond 15%; what the logs say about them:
//   - isl 1024 conc 32 TTFT (sim about 660 ms, recorded 819): 32 requests
//     arrive at once and 16384 tokens hold 17 of their prompts, so one prefill
//     step answers 17 and the next 15. A recorded median of 819 ms beside a
//     mean of 690 and a p99 of 1156 needs 25 or more TTFTs near 800 ms: the
//     first step's tokens would have to wait for the whole second step.
//     output_lag=1 gives that (826 ms) but puts the TTFTs of conc 4-16
//     15-30% over.
//   - isl 8192 conc 4 TTFT (-22%) and TPOT (+15%): the recorded duration
//     (20.6 s) is what 50 prefills of 248 ms and about 550 decode steps of
//     15 ms take, so the step costs hold; the split differs. Recorded requests
//     wait about 190 ms for other prefills before their own (mean TTFT 442 ms
//     less one prefill), simulated ones about 130, and the recorded p99 ITL
//     (409 ms) exceeds one prefill and a decode (263 ms): prefills came back
//     to back more often than in the simulation.
//   - The ITL tails weigh against output_lag: at 0.5 the simulated p99 ITL at
//     isl 8192 is 35-40% under the recorded one (248/460/727 ms against
//     409/666/1140 at conc 4/8/16), as half of each prefill is hidden from
//     the decoding streams; at 0 it comes within 0-30% (293/687/957), but
//     the isl 1024 conc 32 TTFT falls 40% under. Whatever delays first tokens
//     in the recorded runs leaves the running streams' tokens alone.
//   - Holding a prefill's token until the request's first decode step (an
//     engine that streams only what decode steps ran) brings isl 1024
//     conc 32 to +4% (851 ms), but chains of prefills then hold first tokens
//     too long: isl 1024 conc 8 and 16 TTFT +25% and +44%, isl 8192 conc 16
//     mean TTFT 1766 ms against 1154.
//   - The recorded whole-trace inventories count the prefill forwards
//     (flash-attention calls over 62 layers): 40 for the 50 prompts of
//     isl 1024 conc 16 and 28 at conc 32, where the simulated levels run 19
//     and 9. ATOM prefilled requests nearly one at a time where the
//     simulation batches them; the table prints both counts. A front end
//     that hands requests to the scheduler one at a time (ATOM's API process
//     tokenizes each prompt, in early-2026 releases twice) does not explain
//     it: at 11 us per prompt token, serial, the counts stay 19 and 12 while
//     every isl 8192 TTFT goes 61-77% over (waves of replacement requests
//     queue behind each other), and isl 1024 conc 4 +28%. A constant 30 ms
//     per request, serial, raises the counts to 28 and 19 but puts isl 1024
//     conc 4/8/16 TTFT +55/+43/+70% and conc 32 -50%.
//     A token budget of 8192 (isl 8192 prompts then prefill one per
//     forward, as their inventory shows) leaves isl 8192 TTFT at -22/-26/-18%
//     and puts isl 1024 conc 32 at -49%.
//   - The decode step itself is right at every level: the simulated median
//     ITL is within 3% of the recorded one (15.17 against 15.24 ms at
//     isl 8192 conc 4), so the isl 8192 conc 4 TPOT excess is prefill time
//     that lands inside other requests' decode phases instead of in first
//     tokens' waits. With output_lag 1 (ATOM returns a forward's tokens with
//     the next forward's call) every isl 8192 median and isl 1024 conc 32
//     come within 15% (TTFT +5/+2/+14%, +1%), but isl 1024 conc 4/8/16 TTFT
//     go +46/+23/+29%: a replacement prefilled right after another waits for
//     it.
//   - ATOM's pipeline as its source reads (the scheduler runs a step ahead
//     of the GPU, so a request joins the step after next; a forward's
//     tokens come back once the next forward is launched, at once behind a
//     graph decode, after it behind an eager prefill): isl 1024 conc 4 and
//     32 come within 4% and 2%, isl 8192 conc 4 TPOT +12%, but its TTFT
//     stays -19% and isl 1024 conc 8/16 TTFT go +28/+33% (prefill forwards
//     21 at conc 16 against the recorded 40).
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
		// the figures that are printed, not checked
		meanTTFT, meanTPOT, p99TTFT, p99ITL, duration, medianITL float64
		prefills                                                 int // prefill steps in the level's trace
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
			p99TTFT, ok1 := lv.Metrics.TTFT.At(99)
			p99ITL, ok2 := lv.Metrics.ITL.At(99)
			require.True(t, ok1 && ok2, "isl %d conc %d: the client computed no 99th percentiles", isl, r.conc)
			require.NotEmpty(t, lv.TraceFiles, "isl %d conc %d: no trace", isl, r.conc)
			res, err := analysis.Load(t.Context(), lv.TraceFiles[0], analysis.Options{Parts: analysis.Summary})
			require.NoError(t, err)
			rows = append(rows, row{rec: r, simTTFT: ttft, simTPOT: tpot,
				errTTFT: ttft/r.ttftMS - 1, errTPOT: tpot/r.tpotMS - 1,
				meanTTFT: lv.Metrics.TTFT.Mean * scale, meanTPOT: lv.Metrics.TPOT.Mean * scale,
				p99TTFT: p99TTFT * scale, p99ITL: p99ITL * scale, duration: lv.End.Sub(lv.Start).Seconds() * scale, medianITL: lv.Metrics.ITL.Median * scale,
				prefills: res.Summary.Steps[string(tracing.StepPrefill)]})
		}
	}
	var tab bytes.Buffer
	fmt.Fprintf(&tab, "time scale %g (simulated times in engine time); recorded vs simulated medians (ms)\n", scale)
	fmt.Fprintf(&tab, "| ISL | conc | TTFT rec | TTFT sim | err | TPOT rec | TPOT sim | err |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&tab, "| %d | %d | %.1f | %.1f | %+.1f%% | %.2f | %.2f | %+.1f%% |\n", r.rec.isl, r.rec.conc,
			r.rec.ttftMS, r.simTTFT, 100*r.errTTFT, r.rec.tpotMS, r.simTPOT, 100*r.errTPOT)
	}
	fmt.Fprintf(&tab, "\nnot checked, recorded / simulated: mean TTFT and TPOT, median and p99 ITL, p99 TTFT (ms), duration (s), prefill forwards\n")
	fmt.Fprintf(&tab, "(recorded prefill forwards: flash-attention calls of the whole-trace inventory over the layers; - when the corpus has none)\n")
	fmt.Fprintf(&tab, "| ISL | conc | mean TTFT | mean TPOT | median ITL | p99 ITL | p99 TTFT | duration | prefills |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		rec := "-"
		if r.rec.prefills > 0 {
			rec = strconv.Itoa(r.rec.prefills)
		}
		fmt.Fprintf(&tab, "| %d | %d | %.0f / %.0f | %.2f / %.2f | %.2f / %.2f | %.0f / %.0f | %.0f / %.0f | %.2f / %.2f | %s / %d |\n", r.rec.isl, r.rec.conc,
			r.rec.meanTTFTMS, r.meanTTFT, r.rec.meanTPOTMS, r.meanTPOT, r.rec.medianITLMS, r.medianITL, r.rec.p99ITLMS, r.p99ITL,
			r.rec.p99TTFTMS, r.p99TTFT, r.rec.durationS, r.duration, rec, r.prefills)
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
