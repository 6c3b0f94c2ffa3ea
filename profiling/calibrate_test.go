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
	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/profiling/bench"
	"github.com/profile-model/profile-model/profiling/kernelmodel"
	"github.com/profile-model/profile-model/profiling/sim"
	"github.com/profile-model/profile-model/tracing"
)

// CalibrateVar, set to 1, runs TestCalibrationAgainstRecorded: a profiled
// sweep of the simulated engine at the settings of every recorded corpus
// run, five times, about 8 minutes of wall time at time scale 1.
const CalibrateVar = "PROFILE_MODEL_CALIBRATE"

// calibrateScaleVar sets the simulated engine's time scale for that test
// (default 1: real time). The client's wall-clock medians are multiplied by
// it; at 4 the sweep takes a quarter of the time and the medians move by a
// few percent (wake-up latency weighs 4x more against shorter steps).
const calibrateScaleVar = "PROFILE_MODEL_CALIBRATE_SCALE"

// calibrateRunsVar sets how many times that test runs each level, with the
// engine's jitter seeded 1, 2, ... (default 5). A level's median TTFT can
// take one of two values a prefill apart, depending on whether a request
// reaches the scheduler before or after a step boundary; the median over
// the runs is what is checked, and the table shows the runs' range.
const calibrateRunsVar = "PROFILE_MODEL_CALIBRATE_RUNS"

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
// level, profiler on), five times with different jitter seeds, and checks
// that the median over the runs of each run's median TTFT and TPOT is
// within 15% of the recorded one. It prints the comparison table with the
// runs' range, and the recorded and simulated means, 99th percentiles,
// durations and prefill forwards beside it. Slow: it runs only with
// PROFILE_MODEL_CALIBRATE=1 (make calibrate).
//
// What the sweep taught, for whoever recalibrates (errors are of medians,
// TTFT at isl 1024 conc 4/8/16/32 | isl 8192 conc 4/8/16):
//   - Two host parameters decide the three hardest medians, both stated in
//     the model's data file: output_lag (how far into the next step a
//     step's tokens reach the clients) and intake_us_per_token (the front
//     end's time before the scheduler sees a request). At 0.5 and 0 every
//     level but isl 1024 conc 32 (-19%) and isl 8192 conc 4 (TTFT -22%,
//     TPOT +15%) was within 15%; 0.65 and 0.5 us put all 14 within.
//   - isl 1024 conc 32: 32 requests arrive at once and 16384 tokens hold 17
//     prompts, so one prefill answers 17 and the next 15. The recorded
//     median (819 ms beside a mean of 690 and p99 of 1156) sits behind the
//     second prefill; the lag moves it by about 33 ms per 0.1 (661, 694,
//     727 ms at 0.5, 0.6, 0.7), while isl 8192 conc 4 TTFT rises with it
//     (+1% at 0.6 to +24% at 0.7, with intake 0.5 us).
//   - isl 8192 conc 4: with no intake a replacement request reaches the
//     scheduler at the step boundary right after its predecessor's last
//     token and is prefilled alone at once; real requests that finished
//     during a prefill queued behind it (recorded p99 ITL 409 ms, more than
//     one 248 ms prefill and a decode; simulated 249). A few ms of intake
//     gives that queueing: 0.5-1 us per token (4-7 ms) brings TTFT to
//     +1..+11% and TPOT to +6..+12%; 2 us puts isl 8192 conc 16 at +23%,
//     9 us every isl 8192 TTFT 40-55% over. A fixed 15 ms per request puts
//     isl 1024 conc 16 at +43%.
//   - The medians are not smooth in these parameters: a level's median TTFT
//     can take one of two values a prefill apart, depending on whether a
//     request reaches the scheduler before or after a step boundary. With
//     the same parameters (0.6, 0.5 us) two runs gave isl 8192 conc 4 a
//     median of 375 and 291 ms; intake 0.75 us gave isl 1024 conc 32 598 ms
//     where 0.5 and 1 us gave 694. The wall clock decides as much as the
//     seed: at 0.65 and 0.5 us, isl 8192 conc 4 gave 395 ms in one run,
//     353/437/443 in a sweep of three and 300-367 (median 332) in a sweep
//     of five, around the recorded 373. Hence five runs and the median of
//     their medians; a sweep of three failed once at +17%.
//   - Rejected mechanisms (each a full sweep with the parameters of its
//     time): output_lag 1 (+46/+23/+29/+1 | +5/+2/+14); holding a
//     prefill's token until the request's first decode step (+25 and +44%
//     at isl 1024 conc 8 and 16); ATOM's pipeline as its source reads, the
//     scheduler a step ahead of the GPU (+4/+28/+33/+2 | -19/0/+9); a
//     serial front end at 11 us per prompt token (+28/+22/+41/-26 |
//     +61/+64/+77) or 30 ms per request (+55/+43/+70/-50 | +15/+19/+24); a
//     token budget of 8192 (-12/-8/+9/-49 | -22/-26/-18); one prompt per
//     prefill step (isl 1024 conc 32 lasts 5.25 s against 3.97 s recorded).
//   - Not reproduced, and not checked: the recorded whole-trace inventories
//     count 40 prefill forwards for the 50 prompts of isl 1024 conc 16 and
//     28 at conc 32 (flash-attention calls over 62 layers), where the
//     simulated levels run about 19 and 9: ATOM prefilled requests nearly
//     one at a time. No mechanism tried gives that without putting the
//     TTFTs of other levels far over. The isl 1024 conc 32 inventory is
//     also hard to reconcile with its own log (10.4 s of kernel time in a
//     3.97 s run, prefill kernels 15-20x their conc-16 time per call).
//   - The decode step itself is right at every level: the simulated median
//     ITL is within 3% of the recorded one.
func TestCalibrationAgainstRecorded(t *testing.T) {
	if os.Getenv(CalibrateVar) != "1" {
		t.Skipf("a sweep of about 8 minutes in real time: set %s=1 (make calibrate) to run it", CalibrateVar)
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
	runs := 5
	if v := os.Getenv(calibrateRunsVar); v != "" {
		runs, err = strconv.Atoi(v)
		require.NoError(t, err, calibrateRunsVar)
		require.Positive(t, runs, calibrateRunsVar)
	}

	byISL := map[int][]recordedRun{}
	var isls []int
	for _, r := range recorded {
		if _, ok := byISL[r.isl]; !ok {
			isls = append(isls, r.isl)
		}
		byISL[r.isl] = append(byISL[r.isl], r)
	}
	var rows []calibrationRow
	for _, isl := range isls {
		levels := byISL[isl]
		var perSeed [][]simLevel
		for seed := 1; seed <= runs; seed++ {
			perSeed = append(perSeed, simulateLevels(t, sweep, levels, scale, uint64(seed)))
		}
		for i, r := range levels {
			row := calibrationRow{rec: r}
			for _, lv := range perSeed {
				row.sims = append(row.sims, lv[i])
			}
			row.summarise()
			rows = append(rows, row)
		}
	}
	t.Log("\n" + calibrationTable(rows, scale, runs))
	for _, r := range rows {
		name := fmt.Sprintf("isl %d conc %d", r.rec.isl, r.rec.conc)
		if math.Abs(r.errTTFT) > calibrationTolerance {
			t.Errorf("%s: median TTFT %.1f ms (median over %d runs), recorded %.1f ms (%+.1f%%, beyond ±15%%)", name, r.ttft, runs, r.rec.ttftMS, 100*r.errTTFT)
		}
		if math.Abs(r.errTPOT) > calibrationTolerance {
			t.Errorf("%s: median TPOT %.2f ms (median over %d runs), recorded %.2f ms (%+.1f%%, beyond ±15%%)", name, r.tpot, runs, r.rec.tpotMS, 100*r.errTPOT)
		}
	}
}

// simLevel is what one simulated level gave, in engine time (ms, s).
type simLevel struct {
	ttft, tpot                                               float64 // medians
	meanTTFT, meanTPOT, p99TTFT, p99ITL, duration, medianITL float64
	prefills                                                 int // prefill steps in the level's trace
}

// simulateLevels runs one profiled sweep of the simulated engine over the
// recorded levels of one ISL, with the engine's jitter seeded by seed.
func simulateLevels(t *testing.T, sweep *Sweep, levels []recordedRun, scale float64, seed uint64) []simLevel {
	t.Helper()
	prof := t.TempDir()
	srv, err := sim.New(sim.Config{Model: sweep.Model, ProfilerDir: prof, MaxNumSeqs: sweep.MaxNumSeqs,
		CudagraphCaptureSizes: sweep.CaptureSizes, TimeScale: scale, PythonPerStep: -1, Seed: seed})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()

	var concs []int
	for _, r := range levels {
		concs = append(concs, r.conc)
	}
	isl := levels[0].isl
	var log bytes.Buffer
	res, err := bench.Sweep(t.Context(), bench.SweepConfig{
		URL: "http://" + ln.Addr().String(), Model: sweep.Model,
		ISL: isl, OSL: levels[0].osl, RangeRatio: levels[0].ratio, Concurrencies: concs,
		NumPrompts: levels[0].prompts, Warmups: 1, Profile: true, TraceDir: prof,
		RunDir: filepath.Join(t.TempDir(), "run"), Log: &log,
	})
	require.NoError(t, err, log.String())
	cancel()
	require.NoError(t, <-served)
	var out []simLevel
	for i, lv := range res.Levels {
		conc := levels[i].conc
		// The client measures wall time; the engine runs scale times faster.
		p99TTFT, ok1 := lv.Metrics.TTFT.At(99)
		p99ITL, ok2 := lv.Metrics.ITL.At(99)
		require.True(t, ok1 && ok2, "isl %d conc %d: the client computed no 99th percentiles", isl, conc)
		require.NotEmpty(t, lv.TraceFiles, "isl %d conc %d: no trace", isl, conc)
		res, err := analysis.Load(t.Context(), lv.TraceFiles[0], analysis.Options{Parts: analysis.Summary})
		require.NoError(t, err)
		out = append(out, simLevel{ttft: lv.Metrics.TTFT.Median * scale, tpot: lv.Metrics.TPOT.Median * scale,
			meanTTFT: lv.Metrics.TTFT.Mean * scale, meanTPOT: lv.Metrics.TPOT.Mean * scale,
			p99TTFT: p99TTFT * scale, p99ITL: p99ITL * scale, duration: lv.End.Sub(lv.Start).Seconds() * scale,
			medianITL: lv.Metrics.ITL.Median * scale, prefills: res.Summary.Steps[string(tracing.StepPrefill)]})
	}
	return out
}

// calibrationRow is one recorded level beside its simulated runs.
type calibrationRow struct {
	rec  recordedRun
	sims []simLevel
	// ttft and tpot are the medians over the runs of each run's median;
	// errTTFT and errTPOT their relative errors against the recorded ones.
	ttft, tpot, errTTFT, errTPOT float64
}

func (r *calibrationRow) summarise() {
	r.ttft = medianOf(r.sims, func(s simLevel) float64 { return s.ttft })
	r.tpot = medianOf(r.sims, func(s simLevel) float64 { return s.tpot })
	r.errTTFT, r.errTPOT = r.ttft/r.rec.ttftMS-1, r.tpot/r.rec.tpotMS-1
}

// medianOf is the median of f over the runs (the lower middle of an even count).
func medianOf(sims []simLevel, f func(simLevel) float64) float64 {
	v := make([]float64, len(sims))
	for i, s := range sims {
		v[i] = f(s)
	}
	slices.Sort(v)
	return v[(len(v)-1)/2]
}

// spread renders the runs' values of f as "min-max", or the one value.
func spread(sims []simLevel, format string, f func(simLevel) float64) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range sims {
		lo, hi = min(lo, f(s)), max(hi, f(s))
	}
	if lo == hi {
		return fmt.Sprintf(format, lo)
	}
	return fmt.Sprintf(format+"-"+format, lo, hi)
}

func calibrationTable(rows []calibrationRow, scale float64, runs int) string {
	var tab bytes.Buffer
	fmt.Fprintf(&tab, "time scale %g (simulated times in engine time), %d runs per level (seeds 1-%d)\n", scale, runs, runs)
	fmt.Fprintf(&tab, "recorded vs simulated medians (ms): sim is the median over the runs of each run's median, range the runs' least and greatest\n")
	fmt.Fprintf(&tab, "| ISL | conc | TTFT rec | TTFT sim | range | err | TPOT rec | TPOT sim | range | err |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&tab, "| %d | %d | %.1f | %.1f | %s | %+.1f%% | %.2f | %.2f | %s | %+.1f%% |\n", r.rec.isl, r.rec.conc,
			r.rec.ttftMS, r.ttft, spread(r.sims, "%.0f", func(s simLevel) float64 { return s.ttft }), 100*r.errTTFT,
			r.rec.tpotMS, r.tpot, spread(r.sims, "%.1f", func(s simLevel) float64 { return s.tpot }), 100*r.errTPOT)
	}
	fmt.Fprintf(&tab, "\nnot checked, recorded / simulated (the runs' range): mean TTFT and TPOT, median and p99 ITL, p99 TTFT (ms), duration (s), prefill forwards\n")
	fmt.Fprintf(&tab, "(recorded prefill forwards: flash-attention calls of the whole-trace inventory over the layers; - when the corpus has none)\n")
	fmt.Fprintf(&tab, "| ISL | conc | mean TTFT | mean TPOT | median ITL | p99 ITL | p99 TTFT | duration | prefills |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		rec := "-"
		if r.rec.prefills > 0 {
			rec = strconv.Itoa(r.rec.prefills)
		}
		s := r.sims
		fmt.Fprintf(&tab, "| %d | %d | %.0f / %s | %.2f / %s | %.2f / %s | %.0f / %s | %.0f / %s | %.2f / %s | %s / %s |\n", r.rec.isl, r.rec.conc,
			r.rec.meanTTFTMS, spread(s, "%.0f", func(s simLevel) float64 { return s.meanTTFT }),
			r.rec.meanTPOTMS, spread(s, "%.2f", func(s simLevel) float64 { return s.meanTPOT }),
			r.rec.medianITLMS, spread(s, "%.2f", func(s simLevel) float64 { return s.medianITL }),
			r.rec.p99ITLMS, spread(s, "%.0f", func(s simLevel) float64 { return s.p99ITL }),
			r.rec.p99TTFTMS, spread(s, "%.0f", func(s simLevel) float64 { return s.p99TTFT }),
			r.rec.durationS, spread(s, "%.2f", func(s simLevel) float64 { return s.duration }),
			rec, spread(s, "%.0f", func(s simLevel) float64 { return float64(s.prefills) }))
	}
	return tab.String()
}
