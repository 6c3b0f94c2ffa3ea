package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/profile-model/profile-model/profiling/engine"
	"github.com/profile-model/profile-model/profiling/sim"
	"github.com/profile-model/profile-model/profiling/tokenizer"
)

// listFlag collects a repeatable, comma-separated flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// runServeSim runs the simulated ATOM server until SIGTERM / Ctrl-C (exit 0).
// A crash from --crash-after-requests ends the process with status 3.
func runServeSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile-model serve-sim --model NAME [--server-port P] [--torch-profiler-dir DIR] [flags]")
		fmt.Fprintln(stderr, "\nA simulated ATOM OpenAI server (no GPU): /health, /v1/models, /v1/completions,")
		fmt.Fprintln(stderr, "/v1/chat/completions, /start_profile, /stop_profile, /metrics, /server_info.")
		fmt.Fprintln(stderr, "Exit status 3 after a")
		fmt.Fprintln(stderr, "--crash-after-requests crash; 0 after SIGTERM.\n\nflags:")
		fs.PrintDefaults()
	}
	var cfg sim.Config
	var kernels listFlag
	host := fs.String("host", "127.0.0.1", "address to listen on")
	port := fs.Int("server-port", 8000, "HTTP port (0: any free port, printed at start)")
	fs.StringVar(&cfg.Model, "model", "", "served model name; requests must name it exactly (required)")
	fs.StringVar(&cfg.ProfilerDir, "torch-profiler-dir", os.Getenv("ATOM_TORCH_PROFILER_DIR"), "trace directory (default $ATOM_TORCH_PROFILER_DIR); traces go to DIR/rank_0/")
	fs.Var(&kernels, "kernels", "per-layer kernel table `CSV` in the compatible format (repeatable or comma-separated; several tables give batch-size scaling); default: the built-in MiniMax-M2.5 model")
	tokFlag := fs.String("tokenizer", "", "count prompt tokens with this `tokenizer.json` (or its directory) instead of the stand-in tokenizer")
	fs.IntVar(&cfg.Layers, "layers", 0, "decoder layers per step (0: the kernel model's count)")
	fs.IntVar(&cfg.MaxNumSeqs, "max-num-seqs", sim.DefaultMaxNumSeqs, "most sequences in one decode batch")
	fs.IntVar(&cfg.MaxNumBatchedTokens, "max-num-batched-tokens", sim.DefaultMaxNumBatchedTokens, "token budget of one step: longer prompts are prefilled in chunks of it")
	fs.IntVar(&cfg.MaxModelLen, "max-model-len", sim.DefaultMaxModelLen, "context length: a longer prompt gets 400, output stops there; request bodies are limited to what such a prompt needs")
	bufMB := fs.Int("profiler-buffer-mb", 0, "GPU events the profiler holds, in MB; once full the oldest steps lose their kernels, as Kineto's buffer does (default $KINETO_BUFFER_SIZE_MB, else "+strconv.Itoa(sim.DefaultProfilerBufferMB)+"; -1: unbounded)")
	fs.Float64Var(&cfg.TimeScale, "time-scale", 1, "run the wall clock this many times faster than the GPU time in the trace")
	seed := fs.Uint64("seed", 1, "seed of kernel-time jitter and of the stream-error draw")
	fs.IntVar(&cfg.CrashAfterRequests, "crash-after-requests", 0, "fault: exit with status 3 once N requests have completed (0: never)")
	fs.Float64Var(&cfg.StreamErrorRate, "stream-error-rate", 0, "fault: share P of streamed requests that get an in-stream error halfway")
	fs.DurationVar(&cfg.ReadyDelay, "ready-delay", 0, "fault: /health answers 503 for this long after start")
	fs.BoolVar(&cfg.NeverReady, "never-ready", false, "fault: /health never answers 200")
	fs.BoolVar(&cfg.NoTraceOnStop, "no-trace-on-stop", false, "fault: /stop_profile succeeds but writes no trace")
	fs.Var(windowFlag{&cfg.GPUEventWindow}, "gpu-event-window", "fault: drop GPU events older than this (trace time) at stop, like a full profiler buffer (a duration, 30s, or seconds)")
	fs.DurationVar(&cfg.ExportDelay, "export-delay", 0, "fault: hold the uncompressed .json this long before gzipping it")
	fs.IntVar(&cfg.PythonPerStep, "trace-python-per-step", 0, "python_function events per step in the trace (0: 2500, like a trace recorded with stacks; -1: none)")
	fs.BoolVar(&cfg.AsyncStop, "async-stop-profile", false, "answer /stop_profile before the export is done (older ATOM releases)")
	capture := fs.String("cudagraph-capture-sizes", "", "CUDA-graph batch sizes, e.g. \"[1,2,4,8,16,32,48,64,128,256]\": decode batches are padded up to the next size (labelled decode[bs=R/G ...]) and run eagerly above the largest; like older ATOM, start fails when one exceeds --max-num-seqs (default: a graph for every batch size)")
	// ATOM flags a launcher may pass; accepted and ignored.
	fs.IntVar(&cfg.TP, "tp", 1, "tensor-parallel size: one trace per rank (DIR/rank_<r>/), an all-reduce before each norm of every layer")
	fs.Float64Var(&cfg.ProfilerOverhead, "profiler-overhead", 0, "while profiling, every step takes 1 + F times as long (host time after it), as the torch profiler slows a real engine")
	fs.Float64Var(&cfg.RankSkew, "rank-skew", 0, "with --tp: rank r's kernels take 1 + S·r/(tp-1) times as long; the all-reduces wait for the slowest rank")
	for _, name := range []string{"kv_cache_dtype", "kv-cache-dtype", "level", "gpu-memory-utilization", "port"} {
		fs.String(name, "", "ignored (ATOM compatibility)")
	}
	fs.BoolVar(&cfg.EnforceEager, "enforce-eager", false, "decode without graph replay: eager launches, steps labelled eager_decode[...] (prefill[...] with --atom-release legacy)")
	release := fs.String("atom-release", string(sim.ReleaseCurrent), "ATOM release whose frames, labels and replies to speak: current (mid-2026: compact frames, raw finish reasons, \"choices\": [] usage frame, chat role frame) or legacy (early 2026)")
	fs.BoolVar(&cfg.MarkTrace, "mark-trace", false, "write the capture trace of each graph batch size beside each rank's traces (capture_traces/bs_<bs>_q_1_rank<r>.json.gz), each graph kernel under its module scope and op with shapes, as ATOM's --mark-trace does")
	fs.BoolVar(&cfg.TwoStreams, "two-streams", false, "run two kernels of each layer (the post-attention copy and the router GEMM) on a second stream that overlaps the main one, also in the capture traces")
	fs.IntVar(&cfg.ReasoningTokens, "reasoning-tokens", 0, "a thinking model: the first N tokens of each chat reply stream as reasoning_content")
	fs.IntVar(&cfg.MergeFrames, "merge-frames", 0, "put K tokens in every frame (ATOM merges only when the client falls behind; the simulator always does, for reproducible numbers)")
	fs.Float64Var(&cfg.PowerCapW, "power-cap-w", 0, "cap each simulated GPU's power at this many watts: steps that would draw more lower the graphics clock, and GET /debug/telemetry reports the power limit (0: no cap)")
	fs.IntVar(&cfg.EmptyTokenEvery, "empty-token-every", 0, "every Nth token streams as empty text, its text coming with the next (a UTF-8 character split by the detokenizer)")
	fs.BoolVar(&cfg.MixedSteps, "mixed-steps", false, "waiting prompts join the running decodes in one step, labelled decode[bs=N tok=T p=P d=D]")
	profTimeout := fs.Duration("profiler-timeout", 0, "how long /stop_profile waits for the export before answering 500 (default $ATOM_PROFILER_TIMEOUT seconds, else 300s)")
	for _, name := range []string{"trust-remote-code"} {
		fs.Bool(name, false, "ignored (ATOM compatibility)")
	}
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("serve-sim: unexpected argument %q", fs.Arg(0))}
	}
	if cfg.Model == "" {
		return usageError{"serve-sim: --model NAME is required"}
	}
	for _, f := range strings.FieldsFunc(*capture, func(r rune) bool { return r == '[' || r == ']' || r == ',' || r == ' ' }) {
		n, err := parseIntIn("size", f, bounds{1, 1 << 20})
		if err != nil {
			return usageError{fmt.Sprintf("serve-sim: --cudagraph-capture-sizes %q: %v", *capture, err)}
		}
		cfg.CudagraphCaptureSizes = append(cfg.CudagraphCaptureSizes, n)
	}
	if *tokFlag != "" {
		path, err := tokenizer.Find("", *tokFlag)
		if err != nil {
			return fmt.Errorf("serve-sim: %w", err)
		}
		tok, err := tokenizer.Load(path)
		if err != nil {
			return fmt.Errorf("serve-sim: %w", err)
		}
		cfg.Tokenizer = tok
	}
	rel, ok := sim.ParseRelease(*release)
	if !ok {
		return usageError{fmt.Sprintf("serve-sim: --atom-release %q: use current or legacy", *release)}
	}
	cfg.Release = rel
	cfg.ProfilerTimeout = *profTimeout
	if v := os.Getenv("ATOM_PROFILER_TIMEOUT"); v != "" && cfg.ProfilerTimeout == 0 {
		secs, err := parseFloatIn("ATOM_PROFILER_TIMEOUT", v, bounds{1e-3, 1e9})
		if err != nil {
			return usageError{fmt.Sprintf("serve-sim: %v: want a positive number of seconds", err)}
		}
		cfg.ProfilerTimeout = time.Duration(secs * float64(time.Second))
	}
	cfg.ProfilerBufferMB = *bufMB
	if v := os.Getenv("KINETO_BUFFER_SIZE_MB"); v != "" && cfg.ProfilerBufferMB == 0 {
		mb, err := parseIntIn("KINETO_BUFFER_SIZE_MB", v, bounds{1, 1 << 20})
		if err != nil {
			return usageError{fmt.Sprintf("serve-sim: %v: want a positive number of megabytes", err)}
		}
		cfg.ProfilerBufferMB = mb
	}
	cfg.KernelCSVs = kernels
	cfg.Seed = *seed
	cfg.Log = stderr
	srv, err := sim.New(cfg)
	if err != nil {
		return fmt.Errorf("serve-sim: %w", err)
	}
	ln, err := simListener(*host, *port)
	if err != nil {
		return fmt.Errorf("serve-sim: %w", err)
	}
	if err := srv.Serve(ctx, ln); err != nil {
		if errors.Is(err, sim.ErrCrashed) {
			os.Exit(sim.ExitCrash)
		}
		return fmt.Errorf("serve-sim: %w", err)
	}
	return nil
}

// simListener is the socket serve-sim serves on: the one it inherited from
// the engine launcher, which bound the port before starting it (its port
// must be the one --server-port names, unless that is 0), or else one it
// binds on host:port.
func simListener(host string, port int) (net.Listener, error) {
	ln, err := engine.InheritedListener()
	if err != nil || ln != nil {
		if a, ok := ln.Addr().(*net.TCPAddr); ln != nil && (!ok || port != 0 && a.Port != port) {
			ln.Close()
			return nil, fmt.Errorf("the inherited socket listens on %s, not on port %d (--server-port)", ln.Addr(), port)
		}
		return ln, err
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	if ln, err = net.Listen("tcp", addr); err != nil {
		return nil, fmt.Errorf("cannot listen on %s (is the port taken by another server?): %w", addr, err)
	}
	return ln, nil
}
