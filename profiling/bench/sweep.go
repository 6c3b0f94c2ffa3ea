package bench

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/tokenizer"
)

// SweepConfig describes one benchmark run: a level per concurrency.
type SweepConfig struct {
	URL      string // server base URL, e.g. http://localhost:8000
	Endpoint string // /v1/completions (default) or /v1/chat/completions
	Model    string // served model; "" = read from /v1/models

	ISL, OSL   int
	RangeRatio float64 // lengths uniform in [⌊L·r⌋, L] (RangeRule); 0 = exactly L
	// RangeRule is how RangeRatio is read: RangeSGLang ("", the default)
	// or RangeVLLM, [⌊L·(1−r)⌋, ⌈L·(1+r)⌉]; each level's result says which.
	RangeRule     string
	Concurrencies []int
	NumPromptsMul int // num_prompts = conc × mul; 0 = 1
	NumPrompts    int // when > 0: num_prompts of every level, whatever the concurrency

	RequestRate    float64 // 0 or +Inf: all at once (closed loop)
	Burstiness     float64 // 0 = 1 (Poisson)
	Warmups        int     // warmup requests before each level (not measured)
	Seed           uint64
	RequestTimeout time.Duration // per request; 0 = none
	// StallTimeout fails a request (kind stall) when no byte comes from
	// the server for this long, waiting for the response head or the next
	// event; probes too. 0 = DefaultStallTimeout; < 0 = none.
	StallTimeout time.Duration
	// LevelTimeout bounds each level's requests, warmups included (not
	// the trace export, which ExportTimeout bounds), and the probes before
	// the first level: requests still running are cancelled and the level
	// fails. 0 = DefaultLevelTimeout of the level; < 0 = none.
	LevelTimeout time.Duration

	Profile       bool
	TraceDir      string        // the server's torch profiler directory (needed with Profile)
	ExportTimeout time.Duration // deadline for /stop_profile and the export; 0 = 10 min
	PollInterval  time.Duration // how often the export is checked; 0 = 200 ms
	// TraceAppearTimeout: when no trace file is new or changed in TraceDir
	// this long after /stop_profile replied, the level fails at once (the
	// directory is probably not the server's). 0 = TraceAppearTimeout.
	TraceAppearTimeout time.Duration
	// Ranks is how many ranks write a trace per level (tensor × pipeline
	// parallel size): in a profiler directory without rank directories
	// (vLLM, SGLang) the export is complete once that many ranks' traces
	// are; 0: 1.
	Ranks int

	OutDir string // run directories are created under it; "" = "bench-results"
	// RunDir, when set, is the run directory itself (created if missing;
	// result files already in it are an error): profile-model run puts the
	// sweep's files beside the engine's log and the report. OutDir is then
	// not used.
	RunDir      string
	Percentiles []float64 // nil = DefaultPercentiles; 50 and 99 are always computed
	SLO         SLO
	Details     bool // per-request lengths, latencies and generated texts in the result JSON

	// shaper skips the calibration probes when set.
	Shaper *shaper
	// Tokenizer, when set, builds every prompt to its exact length
	// after two probes check it against the server's counts; a
	// mismatch is an error. TokenizerSource names it (the tokenizer.json
	// path).
	Tokenizer       tokenizer.Counter
	TokenizerSource string
	// LoadTokenizer, when Tokenizer is nil, looks for the served model's
	// tokenizer once the model name is known; it returns a nil counter when
	// there is none (a note says why) and an error when one was found but
	// cannot be used. A found tokenizer that cannot be used, or that the
	// server disagrees with, falls back to calibration with a warning.
	LoadTokenizer func(model string) (c tokenizer.Counter, source, note string, err error)
	// Log receives the result block of each level and run messages; nil = discard.
	Log io.Writer
	// Warn receives, as they happen, the warnings that make a level's
	// figures suspect (the client's own lag); nil = discard. They are in
	// the level's result and its block in Log too.
	Warn io.Writer
	// Progress, when set, is called at the start of a level and returns the
	// function told of each finished request and one called at the end.
	Progress func(conc, total int) (update func(done int), finish func())
	// ReadTraces reads a profiled level's trace files (one per rank) for
	// what its result reports of them: the server's decode batch size (the
	// check against the requested concurrency) and the traces' warnings
	// (coverage, truncation). nil skips it. The client never parses traces
	// itself: the analysis package provides this function.
	ReadTraces func(ctx context.Context, conc int, files []string) (decodeBS int, warnings []diag.Warning, err error)
	// Now names the run directory; nil = time.Now.
	Now func() time.Time

	// ScrapeMetrics reads the server's /metrics before and after each level
	// and samples its gauges during it: ScrapeAuto ("", the default) when
	// /metrics answers with an engine's metrics, ScrapeOn (an error when it
	// does not) or ScrapeOff. ScrapeInterval is between samples; 0 = 500 ms.
	ScrapeMetrics  string
	ScrapeInterval time.Duration
	metricsURL     string // the /metrics read, once known to answer

	// Telemetry, when set, samples the GPUs over each level's warm-up and,
	// apart, over its measured requests (phase "warmup", then "level"):
	// it starts sampling, and the function it returns stops it and returns
	// what was measured (nil: nothing) with warnings about it.
	Telemetry func(ctx context.Context, conc int, phase string) (stop func() (*results.Telemetry, []string))

	// ProfileSteps and ProfileFor (with Profile) stop the profiler once
	// the load is steady (every request slot busy) for about that many
	// decode steps or that long, instead of at the level's end, to keep
	// the traces of long levels small; 0: at the end.
	ProfileSteps int
	ProfileFor   time.Duration

	// ClientFrameDelay slows the client by this much at every event it
	// reads, as a client starved of CPU is: for testing the client-bound
	// check (results.ClientLoad); 0 in real use.
	ClientFrameDelay time.Duration
}

// DefaultExportTimeout bounds /stop_profile and the export by default.
const DefaultExportTimeout = 10 * time.Minute

// Level statuses.
const (
	statusOK              = results.StatusOK
	statusTraceIncomplete = results.StatusTraceIncomplete
	statusFailed          = results.StatusFailed
	statusInterrupted     = results.StatusInterrupted
)

// LevelResult is one concurrency level's outcome.
type LevelResult struct {
	Conc       int
	NumPrompts int
	Status     string
	Start, End time.Time // the measured window (export excluded)
	Metrics    metrics
	Outputs    []output
	TraceFiles []string // one per rank, when profiled
	DecodeBS   int      // from the first trace; 0 when unknown
	Warnings   []diag.Warning
	ResultFile string
	Server     *results.ServerMetrics // what /metrics said over the level; nil when not read
	Window     *results.ProfileWindow // the part of the level the trace covers; nil unless profiled
	// Telemetry is the GPUs' power, clocks and memory over the measured
	// requests, WarmupTelemetry over the warm-up; nil when not sampled.
	Telemetry, WarmupTelemetry *results.Telemetry
	Client                     *results.ClientLoad // how busy the client was, against the server's pace
}

// SweepResult is what a run produced.
type SweepResult struct {
	RunDir      string
	Model       string
	Shaper      shaper
	Levels      []*LevelResult
	Skipped     []int // concurrencies not run after a failed level
	SummaryCSV  string
	BenchFile   string
	Percentiles []float64
}

// stall is the client's stall timeout: 0 = none.
func (cfg *SweepConfig) stall() time.Duration {
	switch {
	case cfg.StallTimeout < 0:
		return 0
	case cfg.StallTimeout == 0:
		return DefaultStallTimeout
	}
	return cfg.StallTimeout
}

// levelTimeout is the deadline of level conc: 0 = none.
func (cfg *SweepConfig) levelTimeout(conc, prompts int) time.Duration {
	switch {
	case cfg.LevelTimeout < 0:
		return 0
	case cfg.LevelTimeout == 0:
		return defaultLevelTimeout(prompts+cfg.Warmups, conc, cfg.OSL, cfg.RequestRate)
	}
	return cfg.LevelTimeout
}

// probeTimeout bounds the probes before the first level (calibration,
// the tokenizer check): those of a level of two one-token requests.
func (cfg *SweepConfig) probeTimeout() time.Duration {
	switch {
	case cfg.LevelTimeout < 0:
		return 0
	case cfg.LevelTimeout == 0:
		return defaultLevelTimeout(2, 1, 1, 0)
	}
	return cfg.LevelTimeout
}

func (cfg *SweepConfig) defaults() error {
	if cfg.URL == "" {
		return errors.New("no server URL: pass --url")
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	if cfg.Endpoint == "" {
		cfg.Endpoint = "/v1/completions"
	}
	if cfg.ISL < 1 || cfg.OSL < 1 {
		return fmt.Errorf("isl %d, osl %d: both must be at least 1", cfg.ISL, cfg.OSL)
	}
	switch cfg.RangeRule {
	case "":
		cfg.RangeRule = RangeSGLang
	case RangeSGLang, RangeVLLM:
	default:
		return fmt.Errorf("random range rule %q: want sglang ([floor(L*r), L]) or vllm ([floor(L*(1-r)), ceil(L*(1+r))])", cfg.RangeRule)
	}
	switch {
	case cfg.RangeRatio < 0 || cfg.RangeRatio > 1:
		return fmt.Errorf("random range ratio %v: must be in [0, 1]", cfg.RangeRatio)
	case cfg.RangeRule == RangeVLLM && cfg.RangeRatio == 1:
		return errors.New("random range ratio 1 under vLLM's rule would draw lengths from 0 to 2L (vLLM refuses it): use r < 1 (0: exactly L)")
	case cfg.RangeRatio == 0 && cfg.RangeRule == RangeSGLang:
		cfg.RangeRatio = 1
	}
	if len(cfg.Concurrencies) == 0 {
		return errors.New("no concurrency levels")
	}
	if cfg.ISL > MaxTokens || cfg.OSL > MaxTokens {
		return fmt.Errorf("isl %d, osl %d: at most %d", cfg.ISL, cfg.OSL, MaxTokens)
	}
	if len(cfg.Concurrencies) > MaxConcurrencies {
		return fmt.Errorf("%d concurrency levels: at most %d", len(cfg.Concurrencies), MaxConcurrencies)
	}
	for _, c := range cfg.Concurrencies {
		if c < 1 || c > MaxConcurrency {
			return fmt.Errorf("concurrency %d: must be 1 to %d", c, MaxConcurrency)
		}
		if _, err := LevelPrompts(c, cfg.NumPromptsMul, cfg.NumPrompts); err != nil {
			return err
		}
	}
	if cfg.NumPromptsMul < 1 {
		cfg.NumPromptsMul = 1
	}
	if cfg.Warmups < 0 || cfg.Warmups > MaxWarmups {
		return fmt.Errorf("warmups %d: must be 0 to %d", cfg.Warmups, MaxWarmups)
	}
	if cfg.ProfileSteps < 0 || cfg.ProfileFor < 0 {
		return errors.New("profile-steps and profile-seconds must not be negative")
	}
	if !cfg.Profile && (cfg.ProfileSteps > 0 || cfg.ProfileFor > 0) {
		return errors.New("--profile-steps and --profile-seconds need --profile")
	}
	if cfg.Profile && cfg.TraceDir == "" {
		return errors.New("--profile needs --trace-dir: the server's torch profiler directory, where the traces are waited for")
	}
	if cfg.ExportTimeout <= 0 {
		cfg.ExportTimeout = DefaultExportTimeout
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 200 * time.Millisecond
	}
	if cfg.OutDir == "" {
		cfg.OutDir = "bench-results"
	}
	if cfg.Percentiles == nil {
		cfg.Percentiles = defaultPercentiles
	}
	ps := slices.Clone(cfg.Percentiles)
	for _, p := range ps {
		if p <= 0 || p >= 100 {
			return fmt.Errorf("percentile %v: must be between 0 and 100", p)
		}
	}
	ps = append(ps, 50, 99)
	slices.Sort(ps)
	cfg.Percentiles = slices.Compact(ps)
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Warn == nil {
		cfg.Warn = io.Discard
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	switch cfg.ScrapeMetrics {
	case "":
		cfg.ScrapeMetrics = ScrapeAuto
	case ScrapeAuto, ScrapeOn, ScrapeOff:
	default:
		return fmt.Errorf("scrape-metrics %q: want auto, on or off", cfg.ScrapeMetrics)
	}
	if cfg.ScrapeInterval <= 0 {
		cfg.ScrapeInterval = 500 * time.Millisecond
	}
	return nil
}

// Sweep runs every level in order and writes the run directory. It stops at
// the first level with failures (its partial results are kept and marked)
// and returns an error naming it; completed levels stay on disk whatever
// happens, including a cancelled ctx.
func Sweep(ctx context.Context, cfg SweepConfig) (*SweepResult, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if cfg.Profile {
		if err := checkTraceDir(cfg.TraceDir, cfg.Log); err != nil {
			return nil, err
		}
	}
	c := newClient(cfg.URL, cfg.Model, slices.Max(cfg.Concurrencies))
	c.Endpoint = cfg.Endpoint
	c.Timeout = cfg.RequestTimeout
	c.Stall = cfg.stall()
	c.KeepText = cfg.Details
	c.FrameDelay = cfg.ClientFrameDelay
	if c.Model == "" {
		m, err := fetchModel(ctx, c.HTTP, cfg.URL)
		if err != nil {
			return nil, err
		}
		c.Model = m
		fmt.Fprintf(cfg.Log, "model: %s (from %s/v1/models)\n", m, cfg.URL)
	}
	res := &SweepResult{Model: c.Model, Percentiles: cfg.Percentiles}
	probeCtx, cancelProbes := withBound(ctx, cfg.probeTimeout(), errProbeDeadline, "--level-timeout")
	s, err := cfg.shaper(probeCtx, c)
	cancelProbes()
	if err != nil {
		return res, err
	}
	res.Shaper = s
	c.SetTokenizer(s.Counter)
	if err := cfg.checkMetrics(ctx, c.HTTP); err != nil {
		return res, err
	}

	// The run directory is made once the server answered, so a run that
	// could not start leaves nothing behind.
	dir := cfg.RunDir
	if dir == "" {
		dir, err = results.NewRunDir(cfg.OutDir, c.Model, cfg.Now())
	} else {
		err = useRunDir(dir, cfg.Concurrencies)
	}
	if err != nil {
		return res, err
	}
	res.RunDir = dir
	res.SummaryCSV = results.Run(dir).Summary()
	res.BenchFile = results.Run(dir).Bench()
	fmt.Fprintf(cfg.Log, "run directory: %s\n", dir)

	if cfg.Profile {
		if err := stopLeftProfiler(ctx, &cfg, c); err != nil {
			return res, err
		}
	}
	for i, conc := range cfg.Concurrencies {
		lv := runLevel(ctx, &cfg, c, res.Shaper, conc)
		res.Levels = append(res.Levels, lv)
		if err := writeLevel(&cfg, res, lv); err != nil {
			return res, err
		}
		if err := writeSummary(&cfg, res); err != nil {
			return res, err
		}
		printLevel(cfg.Log, &cfg, c.Model, lv)
		if !inBench(lv.Status) {
			res.Skipped = cfg.Concurrencies[i+1:]
			if lv.Status == statusInterrupted {
				return res, fmt.Errorf("interrupted during concurrency %d; results of completed levels are in %s: %w", conc, dir, ctx.Err())
			}
			// The failed requests, and what else went wrong: a level can
			// fail with all its requests done (its traces) or none sent.
			var whys []string
			for _, w := range lv.Warnings {
				if w.Code == diag.Deadline || w.Code == diag.Failures || w.Code == diag.Trace {
					whys = append(whys, w.Message)
				}
			}
			if lv.Metrics.Failed > 0 || len(whys) == 0 {
				whys = append([]string{failureSummary(&lv.Metrics)}, whys...)
			}
			why := strings.Join(whys, "; ")
			skipped := ""
			if len(res.Skipped) > 0 {
				skipped = fmt.Sprintf("; skipped levels %v", res.Skipped)
			}
			return res, fmt.Errorf("concurrency %d: %s; partial results in %s%s", conc, why, lv.ResultFile, skipped)
		}
	}
	return res, nil
}

func failureSummary(m *metrics) string {
	var parts []string
	for _, k := range FailureKinds {
		if n := m.Failures[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	s := fmt.Sprintf("%d of %d requests failed", m.Failed, m.Completed+m.Failed+m.NotSent)
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	if m.NotSent > 0 {
		s += fmt.Sprintf(", %d not sent", m.NotSent)
	}
	return s
}

// stopLeftProfiler stops a profiler that an earlier run left recording,
// before the first level: ATOM and vLLM answer /start_profile with success
// while they profile already (their profiler ignores it), so the first
// level's trace would begin long before the level. Whatever the reply (a
// server that is not profiling answers 200 or 400, by engine), an export
// the stop set off is waited out, so that its files are not taken for
// the first level's.
func stopLeftProfiler(ctx context.Context, cfg *SweepConfig, c *client) error {
	before, err := traceFiles(cfg.TraceDir)
	if err != nil {
		return err
	}
	if _, err := postProfile(ctx, c.HTTP, cfg.URL+"/stop_profile", cfg.ExportTimeout); err != nil && ctx.Err() != nil {
		return err
	}
	// An export shows within a poll or two of the reply (ATOM and vLLM
	// reply after it, SGLang's gzip begins before).
	for range 2 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(cfg.PollInterval):
		}
		now, err := traceFiles(cfg.TraceDir)
		if err != nil {
			return err
		}
		for p, size := range now {
			if old, ok := before[p]; !ok || old != size {
				fmt.Fprintf(cfg.Log, "warning: the server was already profiling (an earlier run left it so): its profiler was stopped before the first level, and its export into %s is waited for\n", cfg.TraceDir)
				_, err := waitExport(ctx, cfg.TraceDir, before, cfg.Ranks, cfg.ExportTimeout, cfg.PollInterval, cfg.ExportTimeout, nil)
				if err != nil && ctx.Err() != nil {
					return err
				}
				return nil
			}
		}
	}
	return nil
}

// warmupIndex numbers warmup requests; measured requests count from 0 and
// probes from 900_000.
const warmupIndex = 500_000

// runLevel runs one level: warmup, [start_profile], requests, end time,
// [stop_profile, wait for the export], metrics.
func runLevel(ctx context.Context, cfg *SweepConfig, c *client, s shaper, conc int) *LevelResult {
	lr := newLevelRun(ctx, cfg, c, s, conc)
	defer lr.cancel()
	if err := lr.warmup(); err != nil {
		return lr.fail(err.Error())
	}
	if err := lr.startProfiler(); err != nil {
		return lr.fail(err.Error())
	}
	lr.measure()
	lr.usageWarnings()
	if cfg.Profile {
		lr.collectTraces()
	}
	return lr.lv
}

// levelRun is one level under way: its settings, its result as it fills
// in, and the profiler's state between the phases of runLevel.
type levelRun struct {
	cfg    *SweepConfig
	c      *client
	s      shaper
	conc   int
	seed   uint64
	lv     *LevelResult
	runCtx context.Context // the run's: the profiler calls and the export wait are not under the level's deadline
	ctx    context.Context // the level's, under --level-timeout
	cancel context.CancelFunc

	before    map[string]int64 // the trace directory before the level
	profStart time.Time
	stopReply []byte // /stop_profile's reply, once made (the window watch's is waited for)
	watch     *windowWatch
	inFlight  atomic.Int64
}

func newLevelRun(ctx context.Context, cfg *SweepConfig, c *client, s shaper, conc int) *levelRun {
	lv := &LevelResult{Conc: conc, NumPrompts: conc * cfg.NumPromptsMul, Status: statusOK}
	if cfg.NumPrompts > 0 {
		lv.NumPrompts = cfg.NumPrompts
	}
	lr := &levelRun{cfg: cfg, c: c, s: s, conc: conc, lv: lv, runCtx: ctx, seed: cfg.Seed*1_000_003 + uint64(conc)}
	lr.ctx, lr.cancel = withBound(ctx, cfg.levelTimeout(conc, lv.NumPrompts), errLevelDeadline, "--level-timeout")
	return lr
}

// fail ends the level before its requests with msg.
func (lr *levelRun) fail(msg string) *LevelResult {
	lv := lr.lv
	lv.Status = statusFailed
	if lr.runCtx.Err() != nil {
		lv.Status = statusInterrupted
	}
	lv.Warnings = append(lv.Warnings, diag.New(diag.Failures, msg))
	lv.Metrics = aggregate(nil, lv.NumPrompts, 0, lr.cfg.Percentiles, lr.cfg.SLO)
	return lv
}

// warmup sends the warmup requests, numbered apart from the measured ones:
// their first words differ, so a token-granular prefix cache gets no hit
// either.
func (lr *levelRun) warmup() error {
	cfg := lr.cfg
	if cfg.Warmups == 0 {
		return nil
	}
	warm := workload{ISL: cfg.ISL, OSL: cfg.OSL, RangeRatio: cfg.RangeRatio, RangeRule: cfg.RangeRule, NumPrompts: cfg.Warmups,
		Seed: lr.seed + 500_000, FirstIndex: warmupIndex}.Source(lr.s)
	stop := lr.sample("warmup")
	outs, _, _ := runLoad(lr.ctx, lr.c, warm, load{MaxConcurrency: min(cfg.Warmups, lr.conc)})
	lr.lv.WarmupTelemetry = stop()
	for _, o := range outs {
		if !o.OK() {
			return fmt.Errorf("warmup request failed (%s): %s", o.Failure, o.Error)
		}
	}
	return nil
}

// sample starts sampling the GPUs over a phase of the level, when the
// sweep samples them; the function it returns stops the sampling, keeps
// its warnings with the level's and returns what it measured.
func (lr *levelRun) sample(phase string) func() *results.Telemetry {
	if lr.cfg.Telemetry == nil {
		return func() *results.Telemetry { return nil }
	}
	stop := lr.cfg.Telemetry(lr.runCtx, lr.conc, phase)
	return func() *results.Telemetry {
		t, warns := stop()
		for _, w := range warns {
			if phase != "level" {
				w = "warm-up: " + w
			}
			lr.lv.Warnings = append(lr.lv.Warnings, diag.New(diag.Telemetry, w))
		}
		return t
	}
}

// startProfiler notes the trace directory and starts the profiler.
func (lr *levelRun) startProfiler() error {
	cfg := lr.cfg
	if !cfg.Profile {
		return nil
	}
	var err error
	if lr.before, err = traceFiles(cfg.TraceDir); err != nil {
		return err
	}
	if _, err := postProfile(lr.ctx, lr.c.HTTP, cfg.URL+"/start_profile", cfg.ExportTimeout); err != nil {
		return err
	}
	lr.profStart = time.Now()
	return nil
}

func (lr *levelRun) stopProfile(ctx context.Context) error {
	var err error
	lr.stopReply, err = postProfile(ctx, lr.c.HTTP, lr.cfg.URL+"/stop_profile", lr.cfg.ExportTimeout)
	return err
}

// measure runs the level's requests (with the server's metrics sampled and,
// with a profile window, the profiler stopped once the load is steady) and
// computes its metrics and status.
func (lr *levelRun) measure() {
	cfg, lv, conc, ctx := lr.cfg, lr.lv, lr.conc, lr.ctx
	var scrape *scraper
	if cfg.metricsURL != "" {
		var err error
		if scrape, err = startScrape(ctx, lr.c.HTTP, cfg.metricsURL, cfg.ScrapeInterval); err != nil {
			lv.Warnings = append(lv.Warnings, diag.New(diag.ServerMetrics, fmt.Sprintf("server metrics not read before the level, so it has none: %v (--scrape-metrics off skips them)", err)))
		}
	}
	var update func(int)
	var finish func()
	if cfg.Progress != nil {
		update, finish = cfg.Progress(conc, lv.NumPrompts)
	}
	if cfg.Profile && (cfg.ProfileSteps > 0 || cfg.ProfileFor > 0) {
		lr.watch = startWindow(ctx, cfg, lr.c, min(conc, lv.NumPrompts), &lr.inFlight, time.Now(), lr.profStart, lr.stopProfile)
	}
	reqs := workload{ISL: cfg.ISL, OSL: cfg.OSL, RangeRatio: cfg.RangeRatio, RangeRule: cfg.RangeRule, NumPrompts: lv.NumPrompts, Seed: lr.seed}.Source(lr.s)
	stopSampling := lr.sample("level")
	cpu0 := clientCPU()
	outs, start, end := runLoad(ctx, lr.c, reqs, load{
		InFlight:         &lr.inFlight,
		MaxConcurrency:   conc,
		RequestRate:      cfg.RequestRate,
		Burstiness:       cfg.Burstiness,
		Seed:             lr.seed,
		StopOnConnection: true,
		Progress:         update,
	})
	lv.Telemetry = stopSampling()
	if finish != nil {
		finish()
	}
	lv.Start, lv.End, lv.Outputs = start, end, outs
	if scrape != nil {
		m, err := scrape.finish(context.WithoutCancel(ctx))
		if err != nil {
			lv.Warnings = append(lv.Warnings, diag.New(diag.ServerMetrics, fmt.Sprintf("server metrics not read after the level, so it has none: %v (--scrape-metrics off skips them)", err)))
		}
		lv.Server = m
	}
	lv.Metrics = aggregate(outs, lv.NumPrompts, end.Sub(start), cfg.Percentiles, cfg.SLO)
	if lv.Metrics.Failed > 0 || lv.Metrics.NotSent > 0 {
		lv.Status = statusFailed
	}
	if w, ok := lagWarning(outs, lagShareBound); ok {
		lv.Warnings = append(lv.Warnings, w)
		fmt.Fprintf(cfg.Warn, "warning: concurrency %d: %s\n", conc, w.Message)
	}
	cpu := clientCPU()
	if cpu >= 0 && cpu0 >= 0 {
		cpu -= cpu0
	} else {
		cpu = -1
	}
	lv.Client = clientLoadOf(outs, &lv.Metrics, lv.Server, cpu, end.Sub(start))
	if w, ok := clientBoundWarning(lv.Client); ok {
		lv.Warnings = append(lv.Warnings, w)
		fmt.Fprintf(cfg.Warn, "warning: concurrency %d: %s\n", conc, w.Message)
	}
	if lr.runCtx.Err() != nil {
		lv.Status = statusInterrupted
	} else if b := boundOf(ctx); b != nil {
		lv.Status = statusFailed
		lv.Warnings = append(lv.Warnings, diag.New(diag.Deadline, fmt.Sprintf("%v: %d requests still running were cancelled and %d not sent (a server that trickles bytes or never ends its streams; raise --level-timeout for a slow engine)",
			b, lv.Metrics.Failures[failCancelled], lv.Metrics.NotSent)))
	}
}

// usageWarnings says where the token counts came from when not all from
// the server's usage figures.
func (lr *levelRun) usageWarnings() {
	lv, m := lr.lv, &lr.lv.Metrics
	if n := m.OutputCounted; n > 0 {
		lv.Warnings = append(lv.Warnings, diag.New(diag.Usage, fmt.Sprintf("%d requests had no usage.completion_tokens: their output lengths are counted token events", n)))
	}
	if w := splitWarning(m); w != "" {
		lv.Warnings = append(lv.Warnings, diag.New(diag.Usage, w))
	}
	if n := m.UsageRejected; n > 0 {
		w := diag.New(diag.UsageImplausible, fmt.Sprintf("%d requests reported usage that contradicts what was streamed (first: %s): their streamed token counts, and requested prompt lengths, were used instead", n, m.UsageRejectedFirst))
		lv.Warnings = append(lv.Warnings, w)
		fmt.Fprintf(lr.cfg.Warn, "warning: concurrency %d: %s\n", lr.conc, w.Message)
	}
	if n := m.PromptRequested; n > 0 {
		lv.Warnings = append(lv.Warnings, diag.New(diag.Usage, fmt.Sprintf("%d requests had no usage.prompt_tokens: their input lengths are the requested lengths", n)))
	}
}

// collectTraces stops the profiler (unless the window watch did), waits
// for the export and reads the traces. The benchmark window is closed: the
// export is not part of it. A cancelled run still stops the profiler so
// the server is not left recording.
func (lr *levelRun) collectTraces() {
	cfg, lv, ctx := lr.cfg, lr.lv, lr.runCtx
	stopLater, err := true, error(nil)
	lv.Window = &results.ProfileWindow{StartS: lr.profStart.Sub(lv.Start).Seconds(), StopS: lv.End.Sub(lv.Start).Seconds(), StoppedBy: stopAtLevelEnd, SteadyS: -1}
	if lr.watch != nil {
		var w results.ProfileWindow
		w, stopLater, err = lr.watch.finish(lv.Start, lv.End)
		lv.Window = &w
		switch {
		case w.StoppedBy != stopAtLevelEnd:
			fmt.Fprintf(cfg.Log, "profiler stopped after %.2f s of steady load, about %.0f decode steps (%s)\n", w.StopS-w.SteadyS, w.DecodeSteps, w.StepsFrom)
		case w.SteadyS < 0:
			fmt.Fprintf(cfg.Log, "the load never kept all %d slots busy: the profiler ran to the level's end\n", min(lr.conc, lv.NumPrompts))
		default:
			fmt.Fprintf(cfg.Log, "the level ended before its profile window was full: the profiler ran to the level's end\n")
		}
	}
	if stopLater {
		err = lr.stopProfile(context.WithoutCancel(ctx))
	}
	if te := (*stopTimeoutError)(nil); errors.As(err, &te) {
		// The server gave up waiting, not its ranks: their export goes on,
		// and the files are waited for as after any reply.
		fmt.Fprintf(cfg.Log, "warning: concurrency %d: %v; waiting for the trace files instead\n", lr.conc, te)
		err = nil
	}
	if err != nil {
		lr.traceFailed(err.Error())
		return
	}
	reported := stopReplyDirs(lr.stopReply)
	appear := cmp.Or(cfg.TraceAppearTimeout, traceAppearTimeout)
	if len(reported) > 0 {
		appear = min(appear, traceAppearAfterDone) // the reply says the export is done
	}
	files, err := waitExport(ctx, cfg.TraceDir, lr.before, cfg.Ranks, cfg.ExportTimeout, cfg.PollInterval, min(appear, cfg.ExportTimeout), reported)
	lv.TraceFiles = files
	switch {
	case err != nil && ctx.Err() != nil:
		// The requests are done and measured; only the wait was cut.
		lv.Status = statusInterrupted
		lv.Warnings = append(lv.Warnings, diag.New(diag.Trace, fmt.Sprintf("interrupted while waiting for the trace export (the level's requests had finished; the server may still be exporting into %s): %v", cfg.TraceDir, err)))
	case err != nil:
		lr.traceFailed(err.Error())
	case cfg.ReadTraces != nil && len(files) > 0:
		lr.readTraces(files)
	}
}

// traceFailed fails a level that was ok for want of its traces.
func (lr *levelRun) traceFailed(msg string) {
	lr.lv.Warnings = append(lr.lv.Warnings, diag.New(diag.Trace, msg))
	if lr.lv.Status == statusOK {
		lr.lv.Status = statusFailed
	}
}

// readTraces reads the decode batch size and the warnings of the level's
// traces.
func (lr *levelRun) readTraces(files []string) {
	lv := lr.lv
	bs, warns, err := lr.cfg.ReadTraces(lr.runCtx, lr.conc, files)
	if err != nil {
		// Traces with nothing to analyse (no GPU kernel in any) give no
		// tables: the level is never ok.
		lr.traceFailed(fmt.Sprintf("analysing the traces of concurrency %d (%s): %v", lr.conc, files[0], err))
		return
	}
	lv.DecodeBS = bs
	if w := batchWarning(lr.conc, bs); w != "" {
		lv.Warnings = append(lv.Warnings, diag.New(diag.BSMismatch, w))
	}
	lv.Warnings = append(lv.Warnings, warns...)
	if lv.Status == statusOK && (diag.Has(warns, diag.Coverage) || diag.Has(warns, diag.Truncated)) {
		lv.Status = statusTraceIncomplete
	}
}

// batchWarning compares the trace's decode batch size with the requested
// concurrency.
func batchWarning(conc, bs int) string {
	switch {
	case bs == 0:
		return fmt.Sprintf("the trace has no decode step with a batch size: cannot check it against concurrency %d", conc)
	case bs > conc:
		return fmt.Sprintf("decode batch size %d in the trace is above the requested concurrency %d: requests leaked or were aborted and still occupy the server", bs, conc)
	case bs*4 < conc*3:
		return fmt.Sprintf("decode batch size %d in the trace is far below the requested concurrency %d: the server never reached that batch (raise --num-prompts-mul so the level lasts longer, or the server's --max-num-seqs)", bs, conc)
	}
	return ""
}

// modelListTimeout bounds GET /v1/models.
const modelListTimeout = 30 * time.Second

// fetchModel reads the served model's name from GET /v1/models.
func fetchModel(ctx context.Context, hc *http.Client, baseURL string) (string, error) {
	url := strings.TrimRight(baseURL, "/") + "/v1/models"
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, modelListTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("GET %s: no answer within %v, waiting for the list of served models (is the server up and ready? pass --model to skip this query)", url, time.Since(start).Round(100*time.Millisecond))
		}
		return "", fmt.Errorf("GET %s: %w (is the server up? pass --model to skip this query)", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("GET %s: reading the list of served models: %w", url, err)
	}
	if err := redirectError("GET", url, resp.StatusCode, resp.Header.Get("Location")); err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: HTTP %d: %s", url, resp.StatusCode, bytes.TrimSpace(body))
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return "", fmt.Errorf("GET %s: decoding the model list: %w", url, err)
	}
	if len(list.Data) == 0 || list.Data[0].ID == "" {
		return "", fmt.Errorf("GET %s: no model listed; pass --model", url)
	}
	if len(list.Data) > 1 {
		ids := make([]string, len(list.Data))
		for i, d := range list.Data {
			ids[i] = d.ID
		}
		return "", fmt.Errorf("GET %s: several models are served (%s); pass --model", url, strings.Join(ids, ", "))
	}
	return list.Data[0].ID, nil
}

// postProfile POSTs to a profiler endpoint and checks for a 200 reply; newer
// ATOM releases answer /stop_profile only after the export.
func postProfile(ctx context.Context, hc *http.Client, url string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return nil, fmt.Errorf("POST %s: %w", url, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("POST %s: no reply within %v, waiting for the profiler to %s (--export-timeout)", url, timeout, strings.TrimSuffix(path.Base(url), "_profile"))
		}
		return nil, fmt.Errorf("POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err := redirectError("POST", url, resp.StatusCode, resp.Header.Get("Location")); err != nil {
		return nil, err
	}
	if base, ok := strings.CutSuffix(url, "/start_profile"); ok {
		if err := profilingOnError(base, resp.StatusCode, body); err != nil {
			return nil, err
		}
	}
	if strings.HasSuffix(url, "/stop_profile") && resp.StatusCode >= 500 && timedOutReply(body) {
		return nil, &stopTimeoutError{url: url, status: resp.StatusCode, body: string(bytes.TrimSpace(body))}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("POST %s: HTTP %d: %.4096s (was the server started with a torch profiler directory?)", url, resp.StatusCode, bytes.TrimSpace(body))
	}
	return body, nil
}

// stopTimeoutError is a /stop_profile the server answered with an error
// once its own wait for the export ran out: ATOM waits
// $ATOM_PROFILER_TIMEOUT seconds (300 by default) for rank 0's export,
// then answers 500 while the export goes on.
type stopTimeoutError struct {
	url    string
	status int
	body   string
}

func (e *stopTimeoutError) Error() string {
	return fmt.Sprintf("POST %s: HTTP %d after the server's own export deadline (%.512s): the server stopped waiting for its trace export, which goes on; raise ATOM_PROFILER_TIMEOUT (seconds) to --export-timeout so the reply waits as long", e.url, e.status, e.body)
}

// timedOutReply tells whether an error reply says the server's wait timed out.
func timedOutReply(body []byte) bool {
	b := strings.ToLower(string(body))
	return strings.Contains(b, "timed out") || strings.Contains(b, "timeout")
}

// useRunDir prepares a run directory given by the caller: it may exist (the
// engine's log is already there) but must hold no result of these levels.
func useRunDir(dir string, concs []int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating the run directory: %w", err)
	}
	run := results.Run(dir)
	for _, p := range append([]string{run.Summary(), run.Bench()}, levelFiles(run, concs)...) {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s exists: a run directory holds one sweep; choose a new one", p)
		}
	}
	return nil
}

func levelFiles(run results.Run, concs []int) []string {
	var out []string
	for _, c := range concs {
		out = append(out, run.LevelResult(c))
	}
	return out
}

// shaper decides how prompts are shaped: the given Shaper, the tokenizer
// when the server agrees with it, or calibration. A tokenizer the user named
// must work; one found by model name falls back to calibration.
func (cfg *SweepConfig) shaper(ctx context.Context, c *client) (shaper, error) {
	if cfg.Shaper != nil {
		return *cfg.Shaper, nil
	}
	named := cfg.Tokenizer != nil
	if !named && cfg.LoadTokenizer != nil {
		tok, source, note, err := cfg.LoadTokenizer(c.Model)
		switch {
		case err != nil:
			fmt.Fprintf(cfg.Log, "warning: %v; calibrating instead\n", err)
		case tok == nil:
			fmt.Fprintf(cfg.Log, "prompts: %s; calibrating from the server\n", note)
		default:
			cfg.Tokenizer, cfg.TokenizerSource = tok, source
		}
	}
	if cfg.Tokenizer != nil {
		s, err := newTokenizerShaper(cfg.Tokenizer, cfg.TokenizerSource)
		if err == nil {
			s, err = checkTokenizer(ctx, c, cfg.Seed, s)
		}
		chat := strings.Contains(cfg.Endpoint, "chat")
		switch {
		case err == nil && s.Verified:
			fmt.Fprintf(cfg.Log, "prompts: exact lengths from %s (checked against the server", s.Tokenizer)
			switch {
			case s.Offset != 0 && chat:
				fmt.Fprintf(cfg.Log, "; its chat template adds %d tokens)\n", s.Offset)
			case s.Offset != 0:
				fmt.Fprintf(cfg.Log, "; it counts %+d tokens per prompt beyond the tokenizer, e.g. a BOS the tokenizer files do not declare)\n", s.Offset)
			default:
				fmt.Fprintln(cfg.Log, ")")
			}
			return s, nil
		case err == nil:
			msg := "unchecked: the server reports no usage.prompt_tokens"
			if chat {
				msg += "; the chat template's own tokens are not counted"
			}
			fmt.Fprintf(cfg.Log, "prompts: exact lengths from %s (%s)\n", s.Tokenizer, msg)
			return s, nil
		case named && (errors.Is(err, errTokenizerMismatch) || s.Counter == nil):
			return shaper{}, fmt.Errorf("%w (pass the served model's tokenizer.json, or --tokenizer none to calibrate)", err)
		case errors.Is(err, errTokenizerMismatch) || s.Counter == nil:
			fmt.Fprintf(cfg.Log, "warning: %v; calibrating instead\n", err)
		default:
			return shaper{}, fmt.Errorf("checking the tokenizer against %s: %w", cfg.URL, err)
		}
	}
	s, err := calibrate(ctx, c, cfg.Seed)
	if err != nil {
		return shaper{}, fmt.Errorf("calibrating prompt lengths against %s: %w", cfg.URL, err)
	}
	if s.Calibrated {
		fmt.Fprintf(cfg.Log, "prompt calibration: %.4f tokens per word + %.1f\n", s.PerWord, s.Base)
	} else {
		fmt.Fprintln(cfg.Log, "prompt calibration: the server reports no usage.prompt_tokens; assuming one token per word")
	}
	return s, nil
}
