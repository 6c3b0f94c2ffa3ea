package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/profile-model/profile-model/analysis"
	"github.com/profile-model/profile-model/diag"
	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/modelconfig"
	"github.com/profile-model/profile-model/profiling/bench"
	"github.com/profile-model/profile-model/profiling/engine"
	"github.com/profile-model/profile-model/results"
)

// repeatFlag is a flag that may be given many times, each value kept whole
// (an engine argument may hold commas, as JSON does).
type repeatFlag []string

func (l *repeatFlag) String() string     { return strings.Join(*l, " ") }
func (l *repeatFlag) Set(v string) error { *l = append(*l, v); return nil }

// runRun is the whole workflow in one command: engine up with the profiler,
// a profiled concurrency sweep, each level's trace analysed, the report,
// engine down. Everything lands in one new run directory.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var serverArgs, serverEnv repeatFlag
	var (
		engineName   = fs.String("engine", "", "atom, vllm, sglang, sim or none (default: atom when rocm-smi or nvidia-smi is on PATH, else sim)")
		tp           = fs.Int("tp", 1, "tensor-parallel size (-tp N)")
		kvDType      = fs.String("kv-cache-dtype", "", "KV-cache data type (default: fp8 for ATOM, the engine's own otherwise)")
		maxSeqs      = fs.Int("max-num-seqs", 0, "most sequences in a decode batch (0: the engine's default; ATOM 512)")
		maxLen       = fs.Int("max-model-len", 0, "context length (0: the engine's default)")
		level        = fs.String("level", "", "torch.compile level (ATOM: 3 piecewise compile + graphs, 0 none; default: the engine's)")
		eager        = fs.Bool("enforce-eager", false, "disable CUDA/HIP graphs (torch.compile still runs unless --level 0)")
		capture      = fs.String("cudagraph-capture-sizes", "", "graph batch sizes, e.g. \"[1,2,4,8,16,32]\" (default: the engine's)")
		serverDir    = fs.String("server-dir", "", "working directory of the engine (ATOM users run from its checkout)")
		serverExe    = fs.String("server-exe", "", "the engine's executable (python for atom and sglang, vllm, the profile-model binary for sim)")
		port         = fs.Int("port", 0, "the engine's HTTP port (default 8000; sim: a free port)")
		url          = fs.String("url", "", "engine none: the running server's base URL")
		traceDir     = fs.String("trace-dir", "", "engine none: the running server's torch profiler directory")
		timeScale    = fs.Float64("time-scale", 1, "sim: run this many times faster than the modelled GPU")
		readyTimeout = fs.Duration("ready-timeout", 0, "deadline for the engine to serve (default 30m; none: 1m)")
		force        = fs.Bool("force", false, "start even when another process holds GPU memory")
		configPath   = fs.String("config", "", "the model's `config.json` (default: found in the model's directory when it is a local path)")
		out          = fs.String("out", "runs", "`DIR` that receives one new run directory, <model>-<UTC time>")
	)
	fs.Var(&serverArgs, "server-arg", "an extra engine argument, as given (repeat for several)")
	fs.Var(&serverEnv, "server-env", "an engine environment variable `K=V` (repeat; overrides OMP_NUM_THREADS=1 and KINETO_BUFFER_SIZE_MB=256)")
	sf := addSweepFlags(fs, 50, 4, "the model the engine serves: a Hugging Face name or a local path, also the name every request carries (sim default: MiniMaxAI/MiniMax-M2.5)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile-model run --engine atom|vllm|sglang|sim|none --model M [-tp N] [engine flags] [sweep flags] [--out DIR]\n\n"+
			"Starts the engine with the torch profiler on, runs a profiled concurrency sweep, analyses each\n"+
			"level's trace, writes the report (readme.md and charts), and stops the engine. Everything lands\n"+
			"in a new run directory under --out.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("run: unexpected argument %q", fs.Arg(0))}
	}
	cfg, err := sf.config("run")
	if err != nil {
		return err
	}
	say := func(format string, a ...any) { fmt.Fprintf(stderr, "== "+format+"\n", a...) }

	// The engine.
	kind := engine.Sim
	if *engineName != "" {
		if kind, err = engine.ParseKind(*engineName); err != nil {
			return usageError{"run: " + err.Error()}
		}
	} else if tool, ok := engine.HasGPUTooling(); ok {
		return usageError{fmt.Sprintf("run: %s is on this machine: say which engine to profile with --engine atom|vllm|sglang (or --engine sim for the simulated one)", tool)}
	} else {
		say("no --engine and no GPU tooling (rocm-smi, nvidia-smi) here: running the simulated ATOM engine")
	}
	model := *sf.model
	if model == "" {
		if kind != engine.Sim {
			return usageError{"run: --model is required: the model the engine serves (a Hugging Face name or a local path)"}
		}
		model = "MiniMaxAI/MiniMax-M2.5"
	}
	spec := engine.Spec{
		Kind: kind, Model: model, TP: *tp, Port: *port, URL: *url,
		KVCacheDType: *kvDType, MaxNumSeqs: *maxSeqs, MaxModelLen: *maxLen, EnforceEager: *eager,
		ExtraArgs: serverArgs, Dir: *serverDir, Exe: *serverExe,
	}
	if kind == engine.Sim {
		spec.TimeScale = *timeScale
		if spec.Port == 0 {
			if spec.Port, err = freePort(); err != nil {
				return err
			}
		}
	} else if *timeScale != 1 {
		return usageError{"run: --time-scale applies to --engine sim only"}
	}
	if *level != "" {
		n, err := strconv.Atoi(*level)
		if err != nil || n < 0 {
			return usageError{fmt.Sprintf("run: --level %q: want a compilation level such as 0 or 3", *level)}
		}
		spec.Level = &n
	}
	if *capture != "" {
		if spec.CaptureSizes, err = intList(*capture); err != nil {
			return usageError{"run: --cudagraph-capture-sizes: " + err.Error()}
		}
	}
	if len(serverEnv) > 0 {
		spec.Env = map[string]string{}
		for _, kv := range serverEnv {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return usageError{fmt.Sprintf("run: --server-env %q: want K=V", kv)}
			}
			spec.Env[k] = v
		}
	}
	if kind == engine.None {
		if *url == "" || *traceDir == "" {
			return usageError{"run: --engine none attaches to a running server: pass its --url and its torch profiler directory as --trace-dir"}
		}
	} else if *url != "" || *traceDir != "" {
		return usageError{"run: --url and --trace-dir are for --engine none; the other engines are started with traces/ of the run directory as their profiler directory"}
	}
	// The traps, before anything is created.
	notes, err := spec.Check()
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}

	// The run directory, new.
	dir, err := newRunDirectory(*out, model, time.Now())
	if err != nil {
		return err
	}
	run := results.Run(dir)
	say("run directory %s", dir)
	info := &results.RunInfo{
		SchemaVersion: results.RunInfoSchemaVersion, Tool: versionLine(), Status: "running",
		Start: time.Now().UTC().Format(time.RFC3339),
		Engine: results.EngineInfo{Kind: string(kind), Model: model, TP: max(*tp, 1), KVCacheDType: *kvDType,
			MaxNumSeqs: *maxSeqs, MaxModelLen: *maxLen, Level: spec.Level, EnforceEager: *eager,
			CaptureSizes: spec.CaptureSizes, ExtraArgs: serverArgs, Dir: *serverDir},
		Sweep: results.SweepInfo{Endpoint: cfg.Endpoint, ISL: cfg.ISL, OSL: cfg.OSL, RangeRatio: cfg.RangeRatio,
			Concurrencies: cfg.Concurrencies, NumPromptsMul: cfg.NumPromptsMul, Seed: cfg.Seed},
		Notes: notes,
	}
	for _, n := range notes {
		say("note: %s", n)
	}
	var infoMu sync.Mutex
	saveInfo := func() error {
		infoMu.Lock()
		defer infoMu.Unlock()
		return atomicfile.WriteFunc(run.RunInfo(), info.Write)
	}
	numLayers := 0
	if cfgFile := findModelConfig(*configPath, model, *serverDir); cfgFile != "" {
		data, err := os.ReadFile(cfgFile)
		if err != nil {
			return fmt.Errorf("run: reading the model config: %w", err)
		}
		mc, err := modelconfig.Parse(data)
		if err != nil {
			return fmt.Errorf("run: %s: %w", cfgFile, err)
		}
		numLayers = mc.NumHiddenLayers
		if err := atomicfile.Write(run.ModelConfig(), data); err != nil {
			return err
		}
		info.ModelConfig = filepath.Base(run.ModelConfig())
	}

	// GPU memory pre-flight.
	if kind != engine.Sim && kind != engine.None {
		rep, err := engine.Preflight{Force: *force}.Check(ctx, spec)
		info.GPU = rep.String()
		if err != nil {
			info.Status, info.Error = "failed", err.Error()
			_ = saveInfo()
			return fmt.Errorf("run: %w", err)
		}
		if info.GPU != "" {
			say("GPU memory: %s", strings.ReplaceAll(info.GPU, "\n", "; "))
		}
	}

	// Engine up.
	traces := *traceDir
	if kind != engine.None {
		traces = run.Traces()
		spec.ProfilerDir = traces
		info.Traces = "written by the engine into traces/ of the run directory"
	} else {
		info.Traces = "left in the server's profiler directory " + traces + "; each level lists its files"
	}
	if err := saveInfo(); err != nil {
		return err
	}
	finish := func(status string, err error) error {
		info.Status, info.End = status, time.Now().UTC().Format(time.RFC3339)
		if err != nil {
			info.Error = err.Error()
		}
		if werr := saveInfo(); werr != nil && err == nil {
			err = werr
		}
		return err
	}
	say("starting %s: %s", kind, model)
	started := time.Now()
	srv, err := engine.Start(ctx, spec, engine.Options{RunDir: dir, ReadyTimeout: *readyTimeout})
	if err != nil {
		return finish("failed", fmt.Errorf("run: %w", err))
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if err := srv.Stop(stopCtx); err != nil {
			fmt.Fprintf(stderr, "profile-model: stopping the engine: %v\n", err)
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
	cfg.Log, cfg.Progress = stdout, progress(stderr)
	cfg.ReadTraces = func(ctx context.Context, conc int, files []string) (int, []diag.Warning, error) {
		say("conc %d: analysing %s", conc, files[0])
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
	res, sweepErr := bench.Sweep(sweepCtx, cfg)
	if res != nil {
		for _, lv := range res.Levels {
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
		return finish(status, fmt.Errorf("run: %w; completed levels are in %s", sweepErr, dir))
	}
	if err := finish("ok", nil); err != nil {
		return err
	}
	say("done: %s", dir)
	return nil
}

// analyseLevel analyses a level's traces once: every table of rank 0 into
// levels/conc{N}/, the warnings of every rank.
func analyseLevel(ctx context.Context, run results.Run, conc int, files []string, numLayers int, li *results.LevelInfo) (int, []diag.Warning, error) {
	res, err := analysis.Load(ctx, files[0], analysis.Options{NumLayers: numLayers})
	if err != nil {
		return 0, nil, err
	}
	li.DecodeBS, li.Device = res.DecodeBS(), res.Summary.Device
	levelDir := run.Level(conc)
	wrote, err := res.Write(results.InDir(levelDir, res.DecodeBS()))
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

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// newRunDirectory makes DIR/<model base name>-<UTC time>, with a suffix when
// that exists: a run never writes into an earlier one.
func newRunDirectory(out, model string, now time.Time) (string, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", out, err)
	}
	name := unsafeName.ReplaceAllString(filepath.Base(strings.TrimRight(model, "/")), "_")
	base := filepath.Join(out, name+"-"+now.UTC().Format("20060102T150405Z"))
	for i := 1; i < 1000; i++ {
		dir := base
		if i > 1 {
			dir = fmt.Sprintf("%s-%d", base, i)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("creating the run directory: %w", err)
		}
	}
	return "", fmt.Errorf("creating the run directory: %s-* all exist", base)
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

// freePort asks the kernel for a free TCP port on loopback.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// intList reads "[1,2,4]" or "1,2,4".
func intList(s string) ([]int, error) {
	s = strings.Trim(strings.TrimSpace(s), "[]")
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want positive integers, e.g. [1,2,4,8]", s)
		}
		out = append(out, n)
	}
	return out, nil
}
