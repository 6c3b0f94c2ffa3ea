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
	"github.com/profile-model/profile-model/profiling/bench"
	"github.com/profile-model/profile-model/profiling/engine"
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
}

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
	say := func(format string, a ...any) {
		if p.Log != nil {
			fmt.Fprintf(p.Log, "== "+format+"\n", a...)
		}
	}
	spec, cfg := p.Engine, p.Sweep
	kind, model := spec.Kind, spec.Model
	if kind == engine.None && p.TraceDir == "" {
		return nil, errors.New("engine none attaches to a running server: give its torch profiler directory (--trace-dir) so the traces can be found")
	}
	// The traps, before anything is created.
	notes, err := spec.Check()
	if err != nil {
		return nil, err
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	dir := p.RunDir
	if dir == "" {
		if dir, err = results.NewRunDir(cmp.Or(p.Out, "runs"), model, now()); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the run directory: %w", err)
	}
	run := results.Run(dir)
	res := &Result{Dir: dir}
	say("run directory %s", dir)
	info := &results.RunInfo{
		SchemaVersion: results.RunInfoSchemaVersion, Tool: p.Tool, Status: "running",
		Start: now().UTC().Format(time.RFC3339),
		Engine: results.EngineInfo{Kind: string(kind), Model: model, TP: max(spec.TP, 1), KVCacheDType: spec.KVCacheDType,
			MaxNumSeqs: spec.MaxNumSeqs, MaxModelLen: spec.MaxModelLen, Level: spec.Level, EnforceEager: spec.EnforceEager,
			CaptureSizes: spec.CaptureSizes, ExtraArgs: spec.ExtraArgs, Dir: spec.Dir, TimeScale: spec.TimeScale},
		Sweep: results.SweepInfo{Endpoint: cfg.Endpoint, ISL: cfg.ISL, OSL: cfg.OSL, RangeRatio: cfg.RangeRatio,
			Concurrencies: cfg.Concurrencies, NumPromptsMul: cfg.NumPromptsMul, Seed: cfg.Seed},
		Notes: notes,
	}
	res.Info = info
	for _, n := range notes {
		say("note: %s", n)
	}
	var infoMu sync.Mutex
	saveInfo := func() error {
		infoMu.Lock()
		defer infoMu.Unlock()
		return atomicfile.WriteFunc(run.RunInfo(), info.Write)
	}
	finish := func(status string, err error) (*Result, error) {
		info.Status, info.End = status, now().UTC().Format(time.RFC3339)
		if err != nil {
			info.Error = err.Error()
		}
		if werr := saveInfo(); werr != nil && err == nil {
			err = werr
		}
		return res, err
	}
	numLayers := 0
	if cfgFile := findModelConfig(p.ModelConfig, model, spec.Dir); cfgFile != "" {
		data, err := os.ReadFile(cfgFile)
		if err != nil {
			return finish("failed", fmt.Errorf("reading the model config: %w", err))
		}
		mc, err := modelconfig.Parse(data)
		if err != nil {
			return finish("failed", fmt.Errorf("%s: %w", cfgFile, err))
		}
		numLayers = mc.NumHiddenLayers
		if err := atomicfile.Write(run.ModelConfig(), data); err != nil {
			return finish("failed", err)
		}
		info.ModelConfig = filepath.Base(run.ModelConfig())
	}

	// GPU memory pre-flight.
	if kind != engine.Sim && kind != engine.None {
		rep, err := engine.Preflight{Force: p.ForceGPU}.Check(ctx, spec)
		info.GPU = rep.String()
		if err != nil {
			return finish("failed", err)
		}
		if info.GPU != "" {
			say("GPU memory: %s", strings.ReplaceAll(info.GPU, "\n", "; "))
		}
	}

	// Engine up.
	traces := p.TraceDir
	if kind != engine.None {
		traces = run.Traces()
		spec.ProfilerDir = traces
		info.Traces = "written by the engine into traces/ of the run directory"
	} else {
		info.Traces = "left in the server's profiler directory " + traces + "; each level lists its files"
	}
	if err := saveInfo(); err != nil {
		return finish("failed", err)
	}
	say("starting %s: %s", kind, model)
	started := time.Now()
	srv, err := engine.Start(ctx, spec, engine.Options{RunDir: dir, ReadyTimeout: p.ReadyTimeout})
	if err != nil {
		return finish("failed", err)
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if err := srv.Stop(stopCtx); err != nil {
			say("stopping the engine: %v", err)
		}
	}()
	if c := srv.Command(); c.Path != "" {
		info.Engine.Command, info.Engine.Env, info.Engine.Dir = c.String(), c.Env, c.Dir
	}
	info.Engine.URL = srv.URL()
	say("%s serves %s at %s (ready in %.1f s; log %s)", kind, model, srv.URL(), time.Since(started).Seconds(), cmp.Or(srv.LogPath(), "none"))
	if err := saveInfo(); err != nil {
		return finish("failed", err)
	}

	// The profiled sweep; each level's traces are analysed as soon as they
	// are exported, into levels/conc{N}/.
	cfg.URL, cfg.Model, cfg.Profile, cfg.TraceDir, cfg.RunDir = srv.URL(), model, true, traces, dir
	cfg.ReadTraces = func(ctx context.Context, conc int, files []string) (int, []diag.Warning, error) {
		say("conc %d: analysing %s", conc, rel(dir, files[0]))
		li := results.LevelInfo{Conc: conc, Result: rel(dir, run.LevelResult(conc)), Dir: rel(dir, run.Level(conc))}
		for _, f := range files {
			li.Traces = append(li.Traces, rel(dir, f))
		}
		bs, warns, err := analyseLevel(ctx, run, conc, files, numLayers, &li)
		if err != nil {
			li.Error = err.Error()
		}
		infoMu.Lock()
		info.Levels = append(info.Levels, li)
		infoMu.Unlock()
		return bs, warns, err
	}
	sweepCtx, stopSweep := srv.Watch(ctx)
	defer stopSweep()
	sw, sweepErr := bench.Sweep(sweepCtx, cfg)
	res.Sweep = sw
	if sw != nil {
		for _, lv := range sw.Levels {
			for i := range info.Levels {
				if info.Levels[i].Conc == lv.Conc {
					info.Levels[i].Status = lv.Status
				}
			}
		}
	}
	if sweepErr != nil {
		status := "failed"
		if cause := context.Cause(sweepCtx); cause != nil && !errors.Is(cause, engine.ErrStopped) && ctx.Err() == nil {
			sweepErr = fmt.Errorf("%w (the engine died: %v)", sweepErr, cause)
		}
		if ctx.Err() != nil {
			status = "interrupted"
		}
		return finish(status, fmt.Errorf("%w; completed levels are in %s", sweepErr, dir))
	}
	if p.Report != nil {
		say("report")
		if err := p.Report(ctx, dir); err != nil {
			return finish("failed", fmt.Errorf("writing the report: %w", err))
		}
	}
	if _, err := finish("ok", nil); err != nil {
		return res, err
	}
	say("done: %s", dir)
	return res, nil
}

// analyseLevel analyses a level's traces once: every table of rank 0 into
// levels/conc{N}/, the warnings of every rank.
func analyseLevel(ctx context.Context, run results.Run, conc int, files []string, numLayers int, li *results.LevelInfo) (int, []diag.Warning, error) {
	res, err := analysis.Load(ctx, files[0], analysis.Options{NumLayers: numLayers})
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
	wrote, err := res.Write(results.InDir(run.Level(conc), res.DecodeBS()))
	if err == nil {
		// What the report reads of the trace, so it never reads traces.
		if err = analysis.NewLevelFile(res).Write(run.LevelAnalysis(conc)); err == nil {
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
	return ""
}
