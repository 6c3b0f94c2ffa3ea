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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/modelconfig"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/inventory/roofline"
	"github.com/profile-model/profile-model/profiling/bench"
	"github.com/profile-model/profile-model/profiling/engine"
	"github.com/profile-model/profile-model/profiling/sim"
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
	// OverheadCheck runs the first level again without the profiler and
	// writes overhead.json; OverheadPct is the TPOT difference (percent)
	// it flags, 0: results.DefaultOverheadPct.
	OverheadCheck bool
	OverheadPct   float64
}

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
	if err := r.readModelConfig(); err != nil {
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
			Concurrencies: cfg.Concurrencies,
			NumPromptsMul: cfg.NumPromptsMul,
			Seed:          cfg.Seed,
		},
		Notes: notes,
		PID:   os.Getpid(),
		Host:  hostname(),
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
func (r *runner) readModelConfig() error {
	cfgFile := findModelConfig(r.p.ModelConfig, r.spec.Model, r.spec.Dir)
	var data []byte
	switch {
	case cfgFile != "":
		var err error
		if data, err = os.ReadFile(cfgFile); err != nil {
			return fmt.Errorf("reading the model config: %w", err)
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
	} else {
		r.info.Traces = "left in the server's profiler directory " + r.traces + "; each level lists its files"
	}
	return r.saveInfo()
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
	r.info.Engine.URL = srv.URL()
	r.say("%s serves %s at %s (ready in %.1f s; log %s)", kind, model, srv.URL(), time.Since(started).Seconds(), cmp.Or(srv.LogPath(), "none"))
	return srv, r.saveInfo()
}

// recordGroup puts the engine's process group in run.json from its first
// moment: a run killed while the engine loads leaves it findable
// (engine.Abandoned).
func (r *runner) recordGroup(pgid int) {
	r.infoMu.Lock()
	r.info.Engine.PGID = pgid
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

// sweep runs the profiled sweep against the engine; each level's traces
// are analysed as soon as they are exported, into levels/conc{N}/. On
// failure it returns run.json's status for it (failed, interrupted) and
// the error, saying when the engine died.
func (r *runner) sweep(ctx context.Context, srv *engine.Server) (string, error) {
	cfg, dir := r.cfg, r.res.Dir
	cfg.URL, cfg.Model, cfg.Profile, cfg.TraceDir, cfg.RunDir = srv.URL(), r.spec.Model, true, r.traces, dir
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
// levels/conc{N}/, the warnings of every rank.
func analyseLevel(ctx context.Context, run results.Run, conc int, files []string, numLayers int, rl roofline.Level, li *results.LevelInfo) (int, []diag.Warning, error) {
	res, err := analysis.Load(ctx, files[0], analysis.Options{NumLayers: numLayers, Arch: rl.Arch})
	if err != nil {
		return 0, nil, err
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
