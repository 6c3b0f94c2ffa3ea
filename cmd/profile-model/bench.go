package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/profiling/bench"
	"github.com/profile-model/profile-model/profiling/tokenizer"
)

// sweepFlags are the flags of a concurrency sweep, shared by bench and run.
type sweepFlags struct {
	model, endpoint               *string
	isl, osl                      *int
	ratio                         *float64
	rule                          *string
	concStart, concEnd            *int
	concList                      *string
	mul                           *int
	rate                          *string
	burstiness                    *float64
	warmups                       *int
	seed                          *uint64
	exportWait                    *time.Duration
	percentiles, goodput, tokFlag *string
	details                       *bool
	timeout                       *time.Duration
	scrape                        *string
	profSteps                     *int
	profFor                       *time.Duration
	frameDelay                    *time.Duration
	stall                         *time.Duration
	levelTimeout                  *levelTimeoutFlag
}

func addSweepFlags(fs *flag.FlagSet, defaultOSL, defaultMul int, modelHelp string) *sweepFlags {
	f := &sweepFlags{
		model:       fs.String("model", "", modelHelp),
		endpoint:    fs.String("endpoint", "/v1/completions", "completion endpoint: /v1/completions or /v1/chat/completions"),
		isl:         fs.Int("isl", 1024, "input length in tokens (random prompts)"),
		osl:         fs.Int("osl", defaultOSL, "output length in tokens (ignore_eos is set)"),
		ratio:       fs.Float64("random-range-ratio", 0.8, "lengths are drawn uniformly in [floor(L*r), L] (--random-range-rule sglang; 1 = exactly L) or [floor(L*(1-r)), ceil(L*(1+r))] (vllm; 0 = exactly L)"),
		rule:        fs.String("random-range-rule", bench.RangeSGLang, "how --random-range-ratio is read: sglang (SGLang's bench_serving, the recorded runs) or vllm (vLLM's benchmark client)"),
		concStart:   fs.Int("conc-start", 4, "first concurrency; the sweep doubles it up to --conc-end"),
		concEnd:     fs.Int("conc-end", 32, "last concurrency of the doubling sweep"),
		concList:    fs.String("conc", "", "explicit concurrency list, e.g. 4,8,16 (overrides --conc-start/--conc-end)"),
		mul:         fs.Int("num-prompts-mul", defaultMul, "num_prompts = concurrency × this"),
		rate:        fs.String("request-rate", "inf", "requests per second (inf: all at once, limited by the concurrency)"),
		burstiness:  fs.Float64("burstiness", 1, "gamma shape of the request gaps (1 = Poisson; higher is more even)"),
		warmups:     fs.Int("warmups", 1, "warmup requests before each level (not measured, not profiled)"),
		seed:        fs.Uint64("seed", 0, "random seed of the prompts, lengths and gaps"),
		exportWait:  fs.Duration("export-timeout", 10*time.Minute, "deadline for /stop_profile and the trace export of a level"),
		percentiles: fs.String("percentiles", "50,90,95,99", "percentiles to report (50 and 99 are always computed)"),
		goodput:     fs.String("goodput", "", "SLOs for goodput in ms, e.g. ttft:500,tpot:50,e2el:10000"),
		details:     fs.Bool("details", false, "save per-request lengths, TTFTs, ITLs, generated texts and errors in the result JSON"),
		timeout:     fs.Duration("timeout", 0, "per-request timeout (0: none)"),
		profSteps:   fs.Int("profile-steps", 0, "profiled levels (bench --profile, every level of run): stop the profiler after about N decode steps of steady load (every slot busy) instead of at the level's end (0: at the end)"),
		profFor:     fs.Duration("profile-seconds", 0, "profiled levels (bench --profile, every level of run): stop the profiler after this long of steady load, e.g. 20s (0: at the level's end)"),
		scrape:      fs.String("scrape-metrics", bench.ScrapeAuto, "read the server's /metrics before and after each level and sample its gauges: auto (when /metrics answers with engine metrics), on (required) or off"),
		frameDelay:  fs.Duration("client-frame-delay", 0, "for testing the client-bound check: the client waits this long at each streamed event, as a client starved of CPU (0: none)"),
		tokFlag:     fs.String("tokenizer", "", "the served model's `tokenizer.json` (or its directory) for exact prompt lengths; default: found locally from the model name (a model directory or the Hugging Face cache); none: calibrate from the server"),
	}
	f.addBounds(fs)
	return f
}

// config is the sweep the flags describe; cmd prefixes usage errors.
func (f *sweepFlags) config(cmd string) (bench.SweepConfig, error) {
	var cfg bench.SweepConfig
	concs, err := concurrencies(*f.concList, *f.concStart, *f.concEnd)
	if err != nil {
		return cfg, usageError{cmd + ": " + err.Error()}
	}
	pcts, err := floatList(*f.percentiles)
	if err != nil {
		return cfg, usageError{cmd + ": --percentiles: " + err.Error()}
	}
	slo, err := parseSLO(*f.goodput)
	if err != nil {
		return cfg, usageError{cmd + ": --goodput: " + err.Error()}
	}
	rps := math.Inf(1)
	if *f.rate != "inf" {
		if rps, err = parseFloatIn("--request-rate", *f.rate, bounds{1e-9, 1e9}); err != nil {
			return cfg, usageError{fmt.Sprintf("%s: %v (a number of requests a second, or inf)", cmd, err)}
		}
	}
	if *f.mul < 1 || *f.warmups < 0 || *f.burstiness <= 0 {
		return cfg, usageError{cmd + ": --num-prompts-mul must be ≥ 1, --warmups ≥ 0, --burstiness > 0"}
	}
	if len(concs) > bench.MaxConcurrencies {
		return cfg, usageError{fmt.Sprintf("%s: --conc: %d levels, at most %d", cmd, len(concs), bench.MaxConcurrencies)}
	}
	if _, err := bench.LevelPrompts(slices.Max(concs), *f.mul, 0); err != nil {
		return cfg, usageError{fmt.Sprintf("%s: --conc × --num-prompts-mul: %v", cmd, err)}
	}
	cfg = bench.SweepConfig{
		Endpoint: *f.endpoint, Model: *f.model,
		ISL: *f.isl, OSL: *f.osl, RangeRatio: *f.ratio, RangeRule: *f.rule,
		Concurrencies: concs, NumPromptsMul: *f.mul,
		RequestRate: rps, Burstiness: *f.burstiness, Warmups: *f.warmups, Seed: *f.seed,
		RequestTimeout: *f.timeout, ExportTimeout: *f.exportWait,
		StallTimeout: f.stallTimeout(), LevelTimeout: f.levelTimeout.d,
		Percentiles: pcts, SLO: slo, Details: *f.details,
		ScrapeMetrics: *f.scrape, ProfileSteps: *f.profSteps, ProfileFor: *f.profFor,
		ClientFrameDelay: *f.frameDelay,
	}
	if *f.stall < 0 || *f.timeout < 0 || *f.exportWait < 0 {
		return cfg, usageError{cmd + ": --stall-timeout, --timeout and --export-timeout must not be negative (0 turns the first two off)"}
	}
	if *f.frameDelay < 0 {
		return cfg, usageError{cmd + ": --client-frame-delay must not be negative"}
	}
	if *f.profSteps < 0 || *f.profFor < 0 {
		return cfg, usageError{cmd + ": --profile-steps and --profile-seconds must not be negative"}
	}
	switch *f.scrape {
	case bench.ScrapeAuto, bench.ScrapeOn, bench.ScrapeOff:
	default:
		return cfg, usageError{fmt.Sprintf("%s: --scrape-metrics %q: want auto, on or off", cmd, *f.scrape)}
	}
	switch *f.tokFlag {
	case "none":
	case "":
		cfg.LoadTokenizer = tokenizer.FindLocal
	default:
		// A tokenizer the user named must load, or nothing runs.
		path, err := tokenizer.Find("", *f.tokFlag)
		if err != nil {
			return cfg, fmt.Errorf("%s: %w", cmd, err)
		}
		tok, err := tokenizer.Load(path)
		if err != nil {
			return cfg, fmt.Errorf("%s: %w", cmd, err)
		}
		cfg.Tokenizer, cfg.TokenizerSource = tok, path
	}
	return cfg, nil
}

// runBench runs the streaming benchmark client over a concurrency sweep.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "server base URL, e.g. http://localhost:8000 (required)")
	sf := addSweepFlags(fs, 128, 10, "served model name (default: read from /v1/models)")
	profile := fs.Bool("profile", false, "wrap each level in POST /start_profile and /stop_profile and wait for its traces")
	traceDir := fs.String("trace-dir", "", "the server's torch profiler directory (with --profile)")
	out := fs.String("out", "bench-results", "directory that receives one new run directory per invocation")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile-model bench --url URL [--model M] --isl N --osl N [--conc-start N --conc-end N | --conc 4,8,16] [flags]\n\n"+
			"Streams random prompts to an OpenAI-compatible server at each concurrency level and writes,\n"+
			"in a new run directory under --out: conc{N}.json per level (vLLM's keys), summary.csv and\n"+
			"bench.txt (Go benchmark format for benchstat). With --profile each level's traces are waited\n"+
			"for and listed; the benchmark duration never includes the trace export.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("bench: unexpected argument %q", fs.Arg(0))}
	}
	if *url == "" {
		return usageError{"bench: --url is required (the server's base URL, e.g. http://localhost:8000)"}
	}
	if *profile && *traceDir == "" {
		return usageError{"bench: --profile needs --trace-dir (the server's torch profiler directory) to wait for the traces"}
	}
	if !*profile && *traceDir != "" {
		return usageError{"bench: --trace-dir is where the traces of --profile are waited for: add --profile, or leave --trace-dir out"}
	}
	if !*profile && (*sf.profSteps > 0 || *sf.profFor > 0) {
		return usageError{"bench: --profile-steps and --profile-seconds set when the profiler stops: they need --profile"}
	}
	cfg, err := sf.config("bench")
	if err != nil {
		return err
	}
	cfg.URL, cfg.Profile, cfg.TraceDir, cfg.OutDir = *url, *profile, *traceDir, *out
	cfg.Log, cfg.Progress = stdout, progress(stderr)
	cfg.Warn = stderr
	if *profile {
		cfg.ReadTraces = analysis.TraceFacts
	}
	// Garbage (frames decoded, requests written) is small next to what a
	// thousand streams hold live, so the heap grows to twice that at the
	// default setting: collecting at 1.5 times keeps the client's memory
	// to what its streams need, for a few GC cycles more.
	defer debug.SetGCPercent(debug.SetGCPercent(50))
	res, err := bench.Sweep(ctx, cfg)
	if res != nil && len(res.Levels) > 0 {
		fmt.Fprintf(stdout, "\nsummary: %s\nbenchmarks: %s\n", res.SummaryCSV, res.BenchFile)
	}
	return err
}

// concurrencies is the explicit list, or start doubled up to end.
func concurrencies(list string, start, end int) ([]int, error) {
	if list != "" {
		var out []int
		for _, f := range strings.Split(list, ",") {
			n, err := parseIntIn("--conc", f, flagRanges["conc-start"])
			if err != nil {
				return nil, fmt.Errorf("%w: want positive integers separated by commas", err)
			}
			out = append(out, n)
		}
		return out, nil
	}
	if start < 1 || end < start {
		return nil, fmt.Errorf("--conc-start %d, --conc-end %d: want 1 ≤ start ≤ end", start, end)
	}
	var out []int
	for c := start; c <= end; c *= 2 {
		out = append(out, c)
	}
	return out, nil
}

func floatList(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := parseFloatIn("", f, bounds{0, 100})
		if err != nil || v <= 0 || v >= 100 {
			return nil, fmt.Errorf("%q: want numbers between 0 and 100 (exclusive) separated by commas", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseSLO reads vLLM's goodput syntax, "ttft:500 tpot:50" (commas allowed).
func parseSLO(s string) (bench.SLO, error) {
	var slo bench.SLO
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		k, v, ok := strings.Cut(f, ":")
		if !ok {
			return slo, fmt.Errorf("%q: want NAME:MS pairs with NAME ttft, tpot or e2el", f)
		}
		ms, err := parseFloatIn(k, v, bounds{1e-9, 1e12})
		if err != nil {
			return slo, fmt.Errorf("%w: want NAME:MS pairs, MS a positive number of milliseconds", err)
		}
		switch k {
		case "ttft":
			slo.TTFT = ms
		case "tpot":
			slo.TPOT = ms
		case "e2el":
			slo.E2EL = ms
		default:
			return slo, fmt.Errorf("%q: unknown metric %q (ttft, tpot or e2el)", f, k)
		}
	}
	return slo, nil
}

// progress shows a bar per level on a terminal and plain lines (every 10%)
// otherwise.
func progress(w io.Writer) func(conc, total int) (func(int), func()) {
	f, ok := w.(*os.File)
	tty := ok && term.IsTerminal(int(f.Fd()))
	return func(conc, total int) (func(int), func()) {
		if tty {
			bar := progressbar.NewOptions(total,
				progressbar.OptionSetWriter(w),
				progressbar.OptionSetDescription(fmt.Sprintf("conc %d", conc)),
				progressbar.OptionShowCount(),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionClearOnFinish())
			return func(done int) { _ = bar.Set(done) }, func() { _ = bar.Finish() }
		}
		fmt.Fprintf(w, "conc %d: sending %d requests\n", conc, total)
		step := max(total/10, 1)
		return func(done int) {
			if done%step == 0 || done == total {
				fmt.Fprintf(w, "conc %d: %d/%d done\n", conc, done, total)
			}
		}, func() {}
	}
}
