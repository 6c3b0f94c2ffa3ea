// Package profiling runs profiling sweeps: an engine started with the torch
// profiler on, a profiled concurrency sweep against it, each level's trace
// analysed once as it is exported, and the run directory that holds it all.
// `profile-model run` and the sweep tests of this package (the golden
// checks in CI, the GPU sweeps with -tags gpu, BenchmarkSweep) call the one
// Run here, so there is a single sweep path.
package profiling

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/dirlock"
	"github.com/profile-model/profile-model/internal/modelconfig"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/internal/sidefile"
	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/inventory/roofline"
	"github.com/profile-model/profile-model/profiling/bench"
	"github.com/profile-model/profile-model/profiling/engine"
	"github.com/profile-model/profile-model/profiling/sim"
	"github.com/profile-model/profile-model/profiling/telemetry"
	"github.com/profile-model/profile-model/profiling/tokenizer"
)

// Plan is one profiling run.
type Plan struct {
	Engine engine.Spec
	// Sweep is the client side; Run fills URL, Model, Profile, TraceDir,
	// RunDir and ReadTraces.
	Sweep bench.SweepConfig
	// Out receives the new run directory, <model>-<UTC time>; RunDir, when
	// set, is used instead (it must not hold results yet).
	Out    string
	RunDir string
	// TraceDir is engine none's profiler directory (the other engines get
	// traces/ of the run directory).
	TraceDir string
	// ModelConfig is the model's config.json; "" looks for one in the
	// model's directory when the model is a local path.
	ModelConfig  string
	ForceGPU     bool          // start even when another process holds GPU memory
	ReadyTimeout time.Duration // 0: the engine package's default
	Tool         string        // version line recorded in run.json
	// Log receives one line per phase; nil discards them.
	Log io.Writer
	// Report, when set, writes the report from the finished run directory.
	Report func(ctx context.Context, runDir string) error
	// Now names the run directory; nil: time.Now.
	Now func() time.Time
	// Telemetry samples the GPUs' power, clocks and memory over each
	// level: TelemetryAuto ("") with the simulated engine's own telemetry
	// or the first of amd-smi, rocm-smi and nvidia-smi found (none: a
	// note), TelemetryOn (none found: an error) or TelemetryOff.
	Telemetry       string
	TelemetryPeriod time.Duration // 0: telemetry.DefaultPeriod
	// GPUPrice is the price of a GPU-hour in US dollars, for the report's
	// cost per million tokens; 0: none.
	GPUPrice float64
	// OverheadCheck runs the first level again without the profiler and
	// writes overhead.json; OverheadPct is the TPOT difference (percent)
	// it flags, 0: results.DefaultOverheadPct.
	OverheadCheck bool
	OverheadPct   float64
}

// Telemetry settings of a Plan.
const (
	TelemetryAuto = "auto"
	TelemetryOn   = "on"
	TelemetryOff  = "off"
)

// CorpusPrefix marks a path of the reference corpus in a sweep
// declaration's or a plan's kernel tables ("corpus:atom-minimax-m2.5/...").
const CorpusPrefix = "corpus:"

// SimKernelsArgs is serve-sim's --kernels flag for the kernel tables of a
// sweep declaration or a plan (none: no flag). A "corpus:" path is read
// from the corpus directory, and stays as it is when corpus is ""; any
// other path goes through rel (relative to the file that names it).
func SimKernelsArgs(tables []string, corpus string, rel func(string) string) []string {
	if len(tables) == 0 {
		return nil
	}
	paths := make([]string, len(tables))
	for i, p := range tables {
		if r, ok := strings.CutPrefix(p, CorpusPrefix); ok && corpus != "" {
			p = filepath.Join(corpus, r)
		} else if !ok {
			p = rel(p)
		}
		paths[i] = p
	}
	return []string{"--kernels", strings.Join(paths, ",")}
}

// SetPromptTokenizer picks how cfg shapes prompts for an engine of kind:
// the simulated engine's own stand-in tokenizer, or the served model's
// tokenizer.json when one is found locally (calibrated from the server
// otherwise).
func SetPromptTokenizer(cfg *bench.SweepConfig, kind engine.Kind) {
	if kind == engine.Sim {
		cfg.Tokenizer, cfg.TokenizerSource = simTokens{}, "the simulated engine's stand-in tokenizer"
	} else {
		cfg.LoadTokenizer = tokenizer.FindLocal
	}
}

// simTokens counts tokens as the simulated engine does.
type simTokens struct{}

func (simTokens) Count(text string) int { return sim.CountTokens(text) }

// Result is what a run left on disk.
type Result struct {
	Dir   string
	Info  *results.RunInfo
	Sweep *bench.SweepResult
}

// Run performs the plan. It returns as soon as something fails: the engine
// is stopped on every path (its whole process group), completed levels stay
// on disk, and run.json says how the run ended.
func Run(ctx context.Context, p Plan) (*Result, error) {
	r, err := newRunner(p)
	if err != nil {
		return nil, err
	}
	unlock, err := dirlock.Lock(r.res.Dir, "run")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := r.readModelConfig(ctx); err != nil {
		return r.finish("failed", err)
	}
	if err := r.preflight(ctx); err != nil {
		return r.finish("failed", err)
	}
	if err := r.setTraceDir(); err != nil {
		return r.finish("failed", err)
	}
	srv, err := r.startEngine(ctx)
	if srv != nil {
		defer r.stopEngine(ctx, srv)
	}
	if err != nil {
		return r.finish("failed", err)
	}
	if err := r.setTelemetry(ctx, srv); err != nil {
		return r.finish("failed", err)
	}
	if status, err := r.sweep(ctx, srv); err != nil {
		return r.finish(status, err)
	}
	if p.OverheadCheck {
		if err := r.overheadCheck(ctx, srv); err != nil {
			return r.finish("failed", err)
		}
	}
	if p.Report != nil {
		// run.json says the run ended before the report reads it, so a
		// later report RUN_DIR gives the same header.
		r.info.Status, r.info.End = "ok", r.now().UTC().Format(time.RFC3339)
		if err := r.saveInfo(); err != nil {
			return r.finish("failed", err)
		}
		r.say("report")
		if err := p.Report(ctx, r.res.Dir); err != nil {
			return r.finish("failed", fmt.Errorf("writing the report: %w", err))
		}
	}
	if _, err := r.finish("ok", nil); err != nil {
		return r.res, err
	}
	r.say("done: %s", r.res.Dir)
	return r.res, nil
}

// runner is one Run in progress: the plan, the run directory and its
// run.json, kept up to date as the run goes.
type runner struct {
	p      Plan
	spec   engine.Spec
	cfg    bench.SweepConfig
	run    results.Run
	res    *Result
	now    func() time.Time
	infoMu sync.Mutex // info.Levels grows as levels are analysed
	info   *results.RunInfo
	// traces is where the engine's profiler writes.
	traces string
	// numLayers is the model's decoder layer count from its config.json
	// (0: unknown); arch its architecture (nil: no config).
	numLayers int
	arch      *modelconfig.Architecture
}

// newRunner checks the plan, before anything is created, then makes the
// run directory and the first run.json.
func newRunner(p Plan) (*runner, error) {
	r := &runner{p: p, spec: p.Engine, cfg: p.Sweep, now: p.Now}
	if r.now == nil {
		r.now = time.Now
	}
	if r.spec.Kind == engine.None && p.TraceDir == "" {
		return nil, errors.New("engine none attaches to a running server: give its torch profiler directory (--trace-dir) so the traces can be found")
	}
	notes, err := r.spec.Check()
	if err != nil {
		return nil, err
	}
	dir := p.RunDir
	if dir == "" {
		if dir, err = results.NewRunDir(cmp.Or(p.Out, "runs"), r.spec.Model, r.now()); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the run directory: %w", err)
	}
	r.run = results.Run(dir)
	r.res = &Result{Dir: dir}
	switch p.Telemetry {
	case "", TelemetryAuto, TelemetryOn, TelemetryOff:
	default:
		return nil, fmt.Errorf("telemetry %q: want auto, on or off", p.Telemetry)
	}
	if p.GPUPrice < 0 || math.IsNaN(p.GPUPrice) || math.IsInf(p.GPUPrice, 0) {
		return nil, fmt.Errorf("GPU price %v: give US dollars per GPU-hour, 0 or more", p.GPUPrice)
	}
	r.say("run directory %s", dir)
	r.info = r.newRunInfo(notes)
	r.res.Info = r.info
	for _, n := range notes {
		r.say("note: %s", n)
	}
	return r, nil
}

// newRunInfo is run.json as the run starts: the engine and sweep as
// planned, and the notes of the engine's check.
func (r *runner) newRunInfo(notes []string) *results.RunInfo {
	spec, cfg := r.spec, r.cfg
	return &results.RunInfo{
		SchemaVersion: results.RunInfoSchemaVersion,
		Tool:          r.p.Tool,
		Status:        "running",
		Start:         r.now().UTC().Format(time.RFC3339),
		Engine: results.EngineInfo{
			Kind:         string(spec.Kind),
			Model:        spec.Model,
			TP:           max(spec.TP, 1),
			KVCacheDType: spec.KVCacheDType,
			MaxNumSeqs:   spec.MaxNumSeqs,
			MaxModelLen:  spec.MaxModelLen,
			Level:        spec.Level,
			EnforceEager: spec.EnforceEager,
			CaptureSizes: spec.CaptureSizes,
			ExtraArgs:    spec.ExtraArgs,
			Dir:          spec.Dir,
			TimeScale:    spec.TimeScale,
		},
		Sweep: results.SweepInfo{
			Endpoint:      cfg.Endpoint,
			ISL:           cfg.ISL,
			OSL:           cfg.OSL,
			RangeRatio:    cfg.RangeRatio,
			RangeRule:     cmp.Or(cfg.RangeRule, bench.RangeSGLang),
			Concurrencies: cfg.Concurrencies,
			NumPromptsMul: cfg.NumPromptsMul,
			Seed:          cfg.Seed,
		},
		Notes:    notes,
		GPUPrice: r.p.GPUPrice,
		PID:      os.Getpid(),
		Host:     hostname(),
	}
}

// say logs one line of progress.
func (r *runner) say(format string, a ...any) {
	if r.p.Log != nil {
		fmt.Fprintf(r.p.Log, "== "+format+"\n", a...)
	}
}

// saveInfo rewrites run.json.
func (r *runner) saveInfo() error {
	r.infoMu.Lock()
	defer r.infoMu.Unlock()
	return atomicfile.WriteFunc(r.run.RunInfo(), r.info.Write)
}

// finish records how the run ended in run.json; err is the run's error,
// else the error of writing run.json.
func (r *runner) finish(status string, err error) (*Result, error) {
	// A run that ended ok before its report keeps that end time.
	if r.info.Status != "ok" || status != "ok" || r.info.End == "" {
		r.info.End = r.now().UTC().Format(time.RFC3339)
	}
	r.info.Status = status
	if err != nil {
		r.info.Error = err.Error()
	}
	if werr := r.saveInfo(); werr != nil && err == nil {
		err = werr
	}
	return r.res, err
}

// readModelConfig copies the model's config.json into the run directory
// and reads its layer count (the layer tables need it); without one the
// analysis finds the layers by itself.
func (r *runner) readModelConfig(ctx context.Context) error {
	cfgFile := findModelConfig(r.p.ModelConfig, r.spec.Model, r.spec.Dir)
	var data []byte
	switch {
	case cfgFile != "":
		var err error
		if data, err = sidefile.Read(ctx, cfgFile, "the model config", sidefile.Small); err != nil {
			return err
		}
	case r.spec.Kind == engine.Sim && !simOwnTables(r.spec.ExtraArgs):
		// The simulated engine serves its own model: its config, as a
		// local model directory would give it.
		cfgFile, data = "the simulated engine's model config", sim.ModelConfig
	default:
		return nil
	}
	mc, err := modelconfig.Parse(data)
	if err != nil {
		return fmt.Errorf("%s: %w", cfgFile, err)
	}
	r.numLayers = mc.NumHiddenLayers
	a := mc.Architecture()
	r.arch = &a
	if err := atomicfile.Write(r.run.ModelConfig(), data); err != nil {
		return err
	}
	r.info.ModelConfig = filepath.Base(r.run.ModelConfig())
	return nil
}

// preflight checks the GPUs' memory before a real engine starts.
func (r *runner) preflight(ctx context.Context) error {
	if kind := r.spec.Kind; kind == engine.Sim || kind == engine.None {
		return nil
	}
	rep, err := engine.Preflight{Force: r.p.ForceGPU}.Check(ctx, r.spec)
	r.info.GPU = rep.String()
	if err != nil {
		return err
	}
	if r.info.GPU != "" {
		r.say("GPU memory: %s", strings.ReplaceAll(r.info.GPU, "\n", "; "))
	}
	return nil
}

// setTraceDir points the engine's profiler at traces/ of the run
// directory (engine none: the server's own directory) and says which in
// run.json.
func (r *runner) setTraceDir() error {
	r.traces = r.p.TraceDir
	if r.spec.Kind != engine.None {
		r.traces = r.run.Traces()
		r.spec.ProfilerDir = r.traces
		r.info.Traces = "written by the engine into traces/ of the run directory"
		r.alignStopTimeout()
	} else {
		r.info.Traces = "left in the server's profiler directory " + r.traces + "; each level lists its files"
	}
	return r.saveInfo()
}

// alignStopTimeout gives ATOM's /stop_profile the client's export
// deadline: ATOM answers it with HTTP 500 once $ATOM_PROFILER_TIMEOUT
// seconds (300 by default) pass without rank 0's export, while the client
// waits --export-timeout (10 min by default) for the reply. A value the
// user set, or inherited, stays.
func (r *runner) alignStopTimeout() {
	const env = "ATOM_PROFILER_TIMEOUT"
	if r.spec.Kind != engine.ATOM || os.Getenv(env) != "" {
		return
	}
	if _, set := r.spec.Env[env]; set {
		return
	}
	r.spec.Env = maps.Clone(r.spec.Env)
	if r.spec.Env == nil {
		r.spec.Env = map[string]string{}
	}
	r.spec.Env[env] = strconv.Itoa(int(math.Ceil(cmp.Or(r.cfg.ExportTimeout, bench.DefaultExportTimeout).Seconds())))
}

// startEngine starts the engine and waits until it serves; run.json gets
// its command line and URL. The server it returns, even with an error,
// must be stopped.
func (r *runner) startEngine(ctx context.Context) (*engine.Server, error) {
	kind, model := r.spec.Kind, r.spec.Model
	r.say("starting %s: %s", kind, model)
	started := time.Now()
	srv, err := engine.Start(ctx, r.spec, engine.Options{RunDir: r.res.Dir, ReadyTimeout: r.p.ReadyTimeout, Started: r.recordGroup})
	if err != nil {
		return nil, err
	}
	if c := srv.Command(); c.Path != "" {
		r.info.Engine.Command, r.info.Engine.Env, r.info.Engine.Dir = c.String(), c.Env, c.Dir
	}
	if in := srv.Installed(); in != nil {
		r.info.Engine.Version, r.info.Engine.Commit = in.Version, in.Commit
		r.say("%s: every flag checked against %s", in, in.HelpCmd)
	}
	r.info.Engine.URL = srv.URL()
	r.say("%s serves %s at %s (ready in %.1f s; log %s)", kind, model, srv.URL(), time.Since(started).Seconds(), cmp.Or(srv.LogPath(), "none"))
	return srv, r.saveInfo()
}

// recordGroup puts the engine's process group in run.json from its first
// moment: a run killed while the engine loads leaves it findable
// (engine.Abandoned).
func (r *runner) recordGroup(pgid int) {
	cmdline, start, _ := engine.Identity(pgid)
	r.infoMu.Lock()
	r.info.Engine.PGID = pgid
	r.info.Engine.LeaderCmdline, r.info.Engine.LeaderStart = cmdline, start
	r.infoMu.Unlock()
	if err := r.saveInfo(); err != nil {
		r.say("recording the engine's process group: %v", err)
	}
}

// stopEngine stops the engine, even when ctx is cancelled (Ctrl-C).
func (r *runner) stopEngine(ctx context.Context, srv *engine.Server) {
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if err := srv.Stop(stopCtx); err != nil {
		r.say("stopping the engine: %v", err)
	}
}

// setTelemetry picks where each level's GPU readings come from: the
// simulated engine's /debug/telemetry, else the first GPU tool on PATH, on
// the GPUs the engine uses; run.json says which, or why none.
func (r *runner) setTelemetry(ctx context.Context, srv *engine.Server) error {
	mode := cmp.Or(r.p.Telemetry, TelemetryAuto)
	if mode == TelemetryOff {
		return nil
	}
	var src telemetry.Source
	simURL := srv.URL() + "/debug/telemetry"
	// A server attached to (engine none) may be the simulated engine, as a
	// plan's pairs are: it answers with its own GPUs' telemetry.
	switch {
	case r.spec.Kind == engine.Sim || r.spec.Kind == engine.None && telemetry.Serves(ctx, simURL):
		src = telemetry.Source{Tool: telemetry.Sim, URL: simURL}
	case r.spec.Kind == engine.None && !onThisMachine(srv.URL()) && mode == TelemetryAuto:
		// This machine's GPUs are not the remote server's.
		r.info.Telemetry = fmt.Sprintf("GPU power, clocks and memory not sampled: the server at %s is not on this machine (--telemetry on samples this machine's GPUs anyway)", srv.URL())
		r.say("note: %s", r.info.Telemetry)
		return r.saveInfo()
	default:
		var warn string
		if src, warn = telemetry.Find(ctx, nil, nil); src.Tool == "" {
			if mode == TelemetryOn {
				return errors.New(warn + " (--telemetry off runs without it)")
			}
			r.info.Telemetry = warn
			r.say("note: %s", warn)
			return r.saveInfo()
		}
	}
	src.Devices = r.spec.Devices(os.Environ())
	if src.Tool == telemetry.Sim {
		src.Devices = nil // the simulated engine reports its own ranks only
	}
	src.Period = r.p.TelemetryPeriod
	r.info.Telemetry = src.Describe()
	r.say("GPU telemetry: %s", r.info.Telemetry)
	r.cfg.Telemetry = func(ctx context.Context, conc int, phase string) func() (*results.Telemetry, []string) {
		return src.Start(ctx).Stop
	}
	return r.saveInfo()
}

// onThisMachine reports whether a server URL names this machine (a
// loopback address or this host's name).
func onThisMachine(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if ip := net.ParseIP(h); ip != nil {
		return ip.IsLoopback() || ip.IsUnspecified()
	}
	host, _ := os.Hostname()
	return h == "localhost" || h != "" && strings.EqualFold(h, host)
}

// sweep runs the profiled sweep against the engine; each level's traces
// are analysed as soon as they are exported, into levels/conc{N}/. On
// failure it returns run.json's status for it (failed, interrupted) and
// the error, saying when the engine died.
func (r *runner) sweep(ctx context.Context, srv *engine.Server) (string, error) {
	cfg, dir := r.cfg, r.res.Dir
	cfg.URL, cfg.Model, cfg.Profile, cfg.TraceDir, cfg.RunDir = srv.URL(), r.spec.Model, true, r.traces, dir
	if cfg.Ranks == 0 {
		cfg.Ranks = max(r.spec.TP, 1) // engine none: the caller says
	}
	cfg.ReadTraces = r.readTraces
	sweepCtx, stopSweep := srv.Watch(ctx)
	defer stopSweep()
	sw, sweepErr := bench.Sweep(sweepCtx, cfg)
	r.res.Sweep = sw
	if sw != nil {
		for _, lv := range sw.Levels {
			for i := range r.info.Levels {
				if r.info.Levels[i].Conc == lv.Conc {
					r.info.Levels[i].Status = lv.Status
				}
			}
		}
	}
	if ctx.Err() != nil {
		r.markInterrupted(sw)
	}
	if sweepErr == nil {
		return "", nil
	}
	status := "failed"
	if cause := context.Cause(sweepCtx); cause != nil && !errors.Is(cause, engine.ErrStopped) && ctx.Err() == nil {
		sweepErr = fmt.Errorf("%w (the engine died: %v)", sweepErr, cause)
	}
	if ctx.Err() != nil {
		status = "interrupted"
	}
	return status, fmt.Errorf("%w; completed levels are in %s", sweepErr, dir)
}

// markInterrupted gives every level of the sweep that has no analysis an
// entry in run.json with status interrupted: its result and traces where
// they were written, and how to analyse them. A level analysed before the
// interrupt keeps its analysis and status.
func (r *runner) markInterrupted(sw *bench.SweepResult) {
	r.infoMu.Lock()
	defer r.infoMu.Unlock()
	byConc := map[int]*bench.LevelResult{}
	if sw != nil {
		for i := range sw.Levels {
			byConc[sw.Levels[i].Conc] = sw.Levels[i]
		}
	}
	const redo = "the run was interrupted before this level's analysis was done: `profile-model report RUN_DIR --reanalyse` analyses the traces on disk"
	for _, c := range r.cfg.Concurrencies {
		i := slices.IndexFunc(r.info.Levels, func(l results.LevelInfo) bool { return l.Conc == c })
		if i >= 0 {
			if l := &r.info.Levels[i]; l.Error != "" && !slices.Contains(l.Files, rel(r.res.Dir, r.run.LevelAnalysis(c))) {
				l.Status, l.Error = "interrupted", redo+" ("+l.Error+")"
			}
			continue
		}
		li := results.LevelInfo{Conc: c, Status: "interrupted"}
		if lv := byConc[c]; lv != nil {
			li.Result = rel(r.res.Dir, r.run.LevelResult(c))
			for _, f := range lv.TraceFiles {
				li.Traces = append(li.Traces, rel(r.res.Dir, f))
			}
			if len(li.Traces) > 0 {
				li.Error = redo
			}
		}
		r.info.Levels = append(r.info.Levels, li)
	}
	slices.SortFunc(r.info.Levels, func(a, b results.LevelInfo) int { return cmp.Compare(a.Conc, b.Conc) })
}

// readTraces analyses the traces of a level as soon as the sweep has them
// and records the level in run.json.
func (r *runner) readTraces(ctx context.Context, conc int, files []string) (int, []diag.Warning, error) {
	dir := r.res.Dir
	r.say("conc %d: analysing %s", conc, rel(dir, files[0]))
	li := results.LevelInfo{Conc: conc, Result: rel(dir, r.run.LevelResult(conc)), Dir: rel(dir, r.run.Level(conc))}
	for _, f := range files {
		li.Traces = append(li.Traces, rel(dir, f))
	}
	rl := roofline.Level{Arch: r.arch, TP: max(r.spec.TP, 1), KVCache: r.spec.KVCacheDType, Context: float64(r.cfg.ISL) + float64(r.cfg.OSL)/2}
	bs, warns, err := analyseLevel(ctx, r.run, conc, files, r.numLayers, rl, &li)
	if err != nil {
		li.Error = err.Error()
	}
	r.infoMu.Lock()
	r.info.Levels = append(r.info.Levels, li)
	r.infoMu.Unlock()
	return bs, warns, err
}

// analyseLevel analyses a level's traces once: every table of rank 0 into
// levels/conc{N}/, the warnings of every rank. Rank 0 is the first trace,
// in rank order, that holds GPU kernels: a trace without any (a CPU-only
// front-end trace, a rank whose profiler lost its GPU events) has no
// tables to give, and a level none of whose traces has kernels fails.
func analyseLevel(ctx context.Context, run results.Run, conc int, files []string, numLayers int, rl roofline.Level, li *results.LevelInfo) (int, []diag.Warning, error) {
	var res *analysis.Result
	var empty []string
	for i, f := range files {
		r, err := analysis.Load(ctx, f, analysis.Options{NumLayers: numLayers, Arch: rl.Arch})
		if err != nil {
			return 0, nil, err
		}
		if r.Summary.Kernels > 0 {
			res = r
			files = append([]string{f}, slices.Delete(slices.Clone(files), i, i+1)...)
			break
		}
		empty = append(empty, filepath.Base(f))
	}
	if res == nil {
		return 0, nil, fmt.Errorf("no GPU kernel in the level's traces (%s): a CPU-only trace (the profiler ran without its GPU activity, or only an API process's trace was found) has no tables", strings.Join(empty, ", "))
	}
	li.Traces = li.Traces[:0]
	for _, f := range files {
		li.Traces = append(li.Traces, rel(run.Dir(), f))
	}
	li.DecodeBS, li.Device = res.DecodeBS(), res.Summary.Device
	// An engine started with --mark-trace leaves the capture trace of each
	// graph beside the level's traces: it names every position's module.
	if cp := analysis.FindCapture(files[0], res.Trace.GraphBS()); cp != "" {
		if _, err := res.AddCapture(ctx, cp); err != nil {
			res.Warnings = append(res.Warnings, diag.New(diag.CaptureMismatch, fmt.Sprintf("capture trace %s not read: %v", cp, err)))
		}
	} else if m := analysis.CaptureMissing(files[0], res.Trace.GraphBS()); m != "" {
		res.Warnings = append(res.Warnings, diag.New(diag.CaptureMismatch, m))
	}
	// The roofline before the tables are written: it adds their columns.
	roofs := res.AddRoofline(rl)
	wrote, err := res.Write(results.InDir(run.Level(conc), res.DecodeBS()))
	if err == nil {
		// What the report reads of the trace, so it never reads traces.
		lf := analysis.NewLevelFile(res)
		lf.SetRoofline(roofs)
		if err = lf.Write(run.LevelAnalysis(conc)); err == nil {
			wrote = append(wrote, run.LevelAnalysis(conc))
		}
	}
	for _, f := range wrote {
		li.Files = append(li.Files, rel(run.Dir(), f))
	}
	if err != nil {
		return res.DecodeBS(), res.Warnings, err
	}
	warns := res.Warnings
	if len(empty) > 0 {
		warns = append(warns, diag.New(diag.Trace, fmt.Sprintf("traces without GPU kernels before the first with them, left out of the tables: %s", strings.Join(empty, ", "))))
	}
	for _, f := range files[1:] {
		other, err := analysis.Load(ctx, f, analysis.Options{Parts: analysis.Summary})
		if err != nil {
			return res.DecodeBS(), warns, err
		}
		warns = append(warns, other.Warnings...)
	}
	return res.DecodeBS(), warns, nil
}

// rel is path relative to base when it lies inside it (so a run directory
// can be moved), else path as it is.
func rel(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

// findModelConfig is the config.json given, else the one in the model's
// directory when the model is a local path (relative to the engine's
// working directory too).
func findModelConfig(given, model, serverDir string) string {
	if given != "" {
		return given
	}
	for _, d := range []string{model, filepath.Join(serverDir, model)} {
		p := filepath.Join(d, "config.json")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return hubConfig(model)
}

// hostname names this machine in run.json ("" when unknown): a pid means
// something only on the machine that recorded it.
func hostname() string {
	h, _ := os.Hostname()
	return h
}
