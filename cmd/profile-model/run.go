package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling"
	"github.com/profile-model/profile-model/profiling/engine"
	"github.com/profile-model/profile-model/profiling/report"
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
	if isPlanRun(args) {
		return runPlan(ctx, args, stdout, stderr)
	}
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
		serverExe    = fs.String("server-exe", "", "the engine's executable (python3 for atom and sglang, vllm, the profile-model binary for sim)")
		port         = fs.Int("port", 0, "the engine's HTTP port (default 8000; sim: a free port)")
		url          = fs.String("url", "", "engine none: the running server's base URL")
		traceDir     = fs.String("trace-dir", "", "engine none: the running server's torch profiler directory")
		timeScale    = fs.Float64("time-scale", 1, "sim: run this many times faster than the modelled GPU")
		readyTimeout = fs.Duration("ready-timeout", 0, "deadline for the engine to serve (default 30m; none: 1m)")
		force        = fs.Bool("force", false, "start even when another process holds GPU memory")
		configPath   = fs.String("config", "", "the model's `config.json` (default: found in the model's directory when it is a local path)")
		out          = fs.String("out", "runs", "`DIR` that receives one new run directory, <model>-<UTC time>")
		cleanup      = fs.Bool("cleanup", false, "stop the engines that killed runs in --out left behind (without it, run says how)")
		telem        = fs.String("telemetry", "auto", "sample the GPUs' power, clocks and memory over each level: auto (the simulated engine's own, else amd-smi, rocm-smi or nvidia-smi when on PATH), on (fail without a tool) or off")
		telemPeriod  = fs.Duration("telemetry-period", 0, "between two GPU readings (default 200ms)")
		gpuPrice     = fs.Float64("gpu-price", 0, "price of one GPU-hour in `USD`: the report gives each level's cost per million input and output tokens")
		overhead     = fs.Bool("overhead-check", false, "run the first level again without the profiler and report the TPOT the profiler costs (overhead.json)")
		overheadPct  = fs.Float64("overhead-threshold", 5, "with --overhead-check: flag a profiled TPOT more than this many percent above the unprofiled one")
	)
	// Read before parsing (isPlanRun); defined here for -h.
	fs.String("plan", "", "run the sweep plan `FILE` instead: server × bench variants into one sweep directory (run --plan FILE -h lists its flags; docs/sweeps.md)")
	fs.String("resume", "", "complete the sweep in `SWEEP_DIR` (see --plan)")
	fs.Var(&serverArgs, "server-arg", "an extra engine argument, as given (repeat for several)")
	fs.Var(&serverEnv, "server-env", "an engine environment variable `K=V` (repeat; overrides OMP_NUM_THREADS=1 and KINETO_BUFFER_SIZE_MB=256)")
	sf := addSweepFlags(fs, 50, 4, "the model the engine serves: a Hugging Face name or a local path, also the name every request carries (sim default: MiniMaxAI/MiniMax-M2.5)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile-model run --engine atom|vllm|sglang|sim|none --model M [-tp N] [engine flags] [sweep flags] [--out DIR]\n\n"+
			"Starts the engine with the torch profiler on, runs a profiled concurrency sweep, analyses each\n"+
			"level's trace, writes the report (readme.md and charts), and stops the engine. Everything lands\n"+
			"in a new run directory under --out. With --plan it sweeps server settings instead.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
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
		spec.TimeScale = *timeScale // port 0: the engine gets a free one, held from the start
	} else if *timeScale != 1 {
		return usageError{"run: --time-scale applies to --engine sim only"}
	}
	if *level != "" {
		n, err := parseIntIn("--level", *level, bounds{0, 3})
		if err != nil {
			return usageError{fmt.Sprintf("run: %v: want a compilation level such as 0 or 3", err)}
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
	// The traps, before anything is created (Run checks again; a usage
	// error here exits 2).
	if _, err := spec.Check(); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if err := checkAbandoned(ctx, stderr, *cleanup, runDirsIn(*out)...); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	cfg.Log, cfg.Progress = stdout, progress(stderr)
	cfg.Warn = stderr
	res, err := profiling.Run(ctx, profiling.Plan{
		Engine: spec, Sweep: cfg, Out: *out, TraceDir: *traceDir, ModelConfig: *configPath,
		ForceGPU: *force, ReadyTimeout: *readyTimeout, Tool: versionLine(), Log: stderr,
		Telemetry: *telem, TelemetryPeriod: *telemPeriod, GPUPrice: *gpuPrice,
		OverheadCheck: *overhead, OverheadPct: *overheadPct,
		Report: func(_ context.Context, dir string) error {
			rep, err := report.Build(dir, report.Options{})
			if err == nil {
				for _, n := range rep.Notes {
					fmt.Fprintf(stderr, "== report note: %s\n", n)
				}
				fmt.Fprintf(stderr, "== report: %s\n", results.Run(dir).Readme())
			}
			return err
		},
	})
	if err != nil {
		if res == nil {
			return fmt.Errorf("run: %w", err)
		}
		return fmt.Errorf("run: %w (run directory %s)", err, res.Dir)
	}
	return nil
}

// intList reads "[1,2,4]" or "1,2,4".
func intList(s string) ([]int, error) {
	s = strings.Trim(strings.TrimSpace(s), "[]")
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := parseIntIn("size", f, bounds{1, 1 << 20})
		if err != nil {
			return nil, fmt.Errorf("%q: %w: want positive integers, e.g. [1,2,4,8]", s, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// runDirsIn lists the run directories in out (those with a run.json).
func runDirsIn(out string) []string {
	ents, _ := os.ReadDir(out)
	var dirs []string
	for _, e := range ents {
		d := filepath.Join(out, e.Name())
		if _, err := os.Stat(results.Run(d).RunInfo()); e.IsDir() && err == nil {
			dirs = append(dirs, d)
		}
	}
	return dirs
}
