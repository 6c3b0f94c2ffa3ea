package sim

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/profile-model/profile-model/profiling/tokenizer"
)

// ExitCrash is the exit status of a process that CrashAfterRequests ended.
const ExitCrash = 3

// Defaults, as ATOM's.
const (
	DefaultMaxNumSeqs          = 512
	DefaultMaxNumBatchedTokens = 16384
	DefaultMaxModelLen         = 131072
	defaultMaxTokens           = 256
	// DefaultProfilerBufferMB is Kineto's default cap on GPU activity
	// buffers (128 MB), used when KINETO_BUFFER_SIZE_MB is not set.
	DefaultProfilerBufferMB = 128
)

// Config is everything the simulated engine is started with.
//
// Scheduling is ATOM's (a nano-vllm descendant): a step is either a prefill
// or a decode. When requests are waiting and fewer than MaxNumSeqs are
// running, the next step prefills waiting requests in arrival order, as many
// as fit in MaxNumBatchedTokens prompt tokens and in MaxNumSeqs; a prompt
// longer than what is left of the budget is prefilled in chunks over several
// steps (chunked prefill), so that a step never exceeds the budget and a
// prompt costs time linear in its length. A request samples its first
// output token in the step that ends its prefill. Otherwise every running
// request decodes one token. A prompt of MaxModelLen tokens or more is
// refused, and a request stops (finish "length") when prompt and output
// reach MaxModelLen. A step's GPU time (the sum of its
// kernels) is recorded at full scale in the trace and slept for
// time/TimeScale in wall time; tokens are streamed when their step completes.
type Config struct {
	Model       string // served model name; requests must name it exactly
	ProfilerDir string // torch profiler directory; traces go to <dir>/rank_0/

	KernelCSVs []string // per-layer kernel tables (compatible CSV); none: the built-in model
	Layers     int      // decoder layers per step; 0: the kernel model's own count

	// TP is the tensor-parallel size: at stop, one trace per rank
	// (<dir>/rank_<r>/), each layer with an all-reduce before each norm;
	// 0 or 1: one rank. RankSkew slows rank r's kernels by
	// 1 + RankSkew·r/(TP-1); the all-reduces wait for the slowest rank.
	TP       int
	RankSkew float64

	// Tokenizer counts prompt tokens instead of the stand-in tokenizer (a
	// model's tokenizer.json, loaded with tokenizer.Load); nil: stand-in.
	Tokenizer tokenizer.Counter

	MaxNumSeqs int // decode batch limit; 0: DefaultMaxNumSeqs
	// CudagraphCaptureSizes, when given, must not exceed MaxNumSeqs: older
	// ATOM releases fail at start otherwise, and so does the simulator.
	// When given, a decode step replays the smallest captured graph that
	// holds its batch, is priced at that padded size and labelled
	// decode[bs=R/G ...] as newer ATOM releases do; a batch above every
	// size runs eagerly as eager_decode[...]. None: graphs of every size.
	CudagraphCaptureSizes []int
	MaxNumBatchedTokens   int     // prefill token budget per step; 0: DefaultMaxNumBatchedTokens
	MaxModelLen           int     // context length (prompt + output tokens); 0: DefaultMaxModelLen
	TimeScale             float64 // wall time runs this many times faster than trace time; 0: 1
	// EnforceEager runs decode steps without graph replay: every kernel is
	// launched eagerly and, as older ATOM releases do, the step is labelled
	// prefill[bs=N tok=N ...].
	EnforceEager bool
	Seed         uint64 // seeds kernel-time jitter and the stream-error draw

	// Faults. CrashAfterRequests N: exactly N requests complete; once their
	// replies have left, the process exits with status ExitCrash, cutting
	// every other open stream (a request that finishes meanwhile never gets
	// its last frames); Exit is called instead when set, and Serve returns
	// ErrCrashed. StreamErrorRate P: a streamed request fails with
	// probability P (decided per request from Seed): after half of its
	// tokens it gets an in-stream {"error":{...}} frame with HTTP 200, then
	// data: [DONE]. ReadyDelay / NeverReady: /health (and every other
	// endpoint) answers 503 until ready. NoTraceOnStop: /stop_profile
	// succeeds but writes no trace. GPUEventWindow: GPU events older than it
	// (trace time) before the stop are dropped, as a full profiler buffer
	// does. ExportDelay: the export writes the uncompressed .json first, as
	// torch does, and holds it this long (wall time) before it is gzipped;
	// without it the .json.gz is streamed directly.
	CrashAfterRequests int
	StreamErrorRate    float64
	ReadyDelay         time.Duration
	NeverReady         bool
	NoTraceOnStop      bool
	GPUEventWindow     time.Duration
	ExportDelay        time.Duration
	// AsyncStop answers /stop_profile before the export is done, as older
	// ATOM releases do; by default the reply waits and lists the trace dirs.
	AsyncStop bool
	// ProfilerTimeout bounds how long /stop_profile waits for the export
	// before it answers 500, as ATOM_PROFILER_TIMEOUT does; 0: 300 s.
	ProfilerTimeout time.Duration
	// ProfilerOverhead F: while the profiler records, every step takes
	// 1 + F times as long, the extra as host time after it (the
	// profiler's callbacks on the CPU), so that a run with the profiler
	// off is faster, as on a real engine; 0: the profiler costs nothing.
	ProfilerOverhead float64

	// Release is the ATOM release whose frames, labels and replies the
	// server speaks; "": ReleaseCurrent.
	Release Release
	// Personality makes the server a stand-in for a real engine's
	// profiling surface, as read from its source (docs/engines.md names
	// the commits): its trace files' names and layout, its answers to a
	// /start_profile while profiling and a /stop_profile while not, and
	// (ATOM) its /metrics refreshed every MetricsRefresh. "": the
	// simulator's own (ATOM's layout, strict profiling answers, live
	// metrics).
	Personality Personality
	// RankExportLag: an ATOM stand-in's ranks after the first finish their
	// export this long after /stop_profile's reply; 0: 500 ms.
	RankExportLag time.Duration
	// MetricsRefresh is how often an ATOM stand-in's /metrics snapshot is
	// refreshed; 0: 5 s, ATOM's interval.
	MetricsRefresh time.Duration
	// ReasoningTokens makes a thinking model: the first N output tokens of
	// each chat reply stream as reasoning_content deltas (a completion
	// streams them as plain text, as ATOM does).
	ReasoningTokens int
	// MergeFrames puts up to K tokens into one frame, always (ATOM merges
	// the chunks of a stream whose client fell behind; the simulator merges
	// every stream so that the effect is reproducible). 0 or 1: one token
	// per frame.
	MergeFrames int
	// EmptyTokenEvery N: every Nth token streams as "" and its text comes
	// with the next one, as ATOM's detokenizer does when a token ends inside
	// a UTF-8 character. 0: never.
	EmptyTokenEvery int
	// MixedSteps lets waiting prompts join the running decodes in one step
	// (ATOM's decode[bs=N tok=T p=P d=D]) instead of prefilling alone.
	MixedSteps bool
	// KeepAlive closes a connection idle this long, as ATOM's server does
	// (uvicorn's keep-alive timeout); 0: 5 s.
	KeepAlive time.Duration
	// PowerCapW caps each simulated GPU's power (GET /debug/telemetry):
	// a step that would draw more runs at the cap with its graphics clock
	// lowered in proportion, and the reading says the power limit held it.
	// The step times are not stretched: the trace stays the kernel model's.
	// 0: no cap.
	PowerCapW float64
	// KVBlocks is the number of KV-cache blocks of 16 tokens /metrics
	// reports usage against; 0: 65536.
	KVBlocks int

	// ProfilerBufferMB bounds the GPU events the profiler holds, as
	// Kineto's activity buffer (KINETO_BUFFER_SIZE_MB) does; once full, the
	// oldest steps lose their GPU events and the trace shows steps without
	// kernels. 0: DefaultProfilerBufferMB; negative: unbounded.
	ProfilerBufferMB int

	// MarkTrace writes, beside each rank's traces, the capture trace of
	// every captured graph batch size (capture_traces/bs_<bs>_q_1_rank<r>
	// .json.gz), as ATOM started with --mark-trace does: each graph kernel
	// under its module scope and launching op, with shapes. The sizes are
	// CudagraphCaptureSizes, or without them the graph batch sizes the
	// profiled decode steps replayed.
	MarkTrace bool

	// TwoStreams runs two kernels of each layer (the post-attention copy
	// and the router GEMM) on a second stream that overlaps the main one,
	// in the traces and in the capture traces' warmup forward.
	TwoStreams bool

	// PythonPerStep is the number of python_function events per step in the
	// trace (0: the recorder's default, like a trace recorded with stacks;
	// negative: none).
	PythonPerStep int

	ShutdownGrace time.Duration // how long in-flight requests may finish after ctx ends; 0: 10 s

	Exit func(code int) // how a crash ends the process; nil: os.Exit
	Log  io.Writer      // server log; nil: discarded

	timeouts timeouts // connection deadlines; zero fields: the defaults
	backend  backend  // kernel model and recorder; nil: built from KernelCSVs and Layers (tests inject fakes)
	clock    clock    // nil: the real clock (tests drive a fake one)
}

// Personality names the engine a stand-in server answers as.
type Personality string

// The personalities.
const (
	PersonalityATOM   Personality = "atom"
	PersonalityVLLM   Personality = "vllm"
	PersonalitySGLang Personality = "sglang"
)

// timeouts bound every connection: a request's header and its whole body
// must arrive within header and read, and each write of a reply must be
// taken by the client within write (a stream whose reader stopped is cut
// and its request freed).
type timeouts struct{ header, read, write time.Duration }

// withDefaults checks cfg and fills in its defaults.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Model == "" {
		return cfg, errors.New("no model name: pass --model NAME (requests must name it exactly)")
	}
	if cfg.MaxNumSeqs == 0 {
		cfg.MaxNumSeqs = DefaultMaxNumSeqs
	}
	if cfg.MaxNumBatchedTokens == 0 {
		cfg.MaxNumBatchedTokens = DefaultMaxNumBatchedTokens
	}
	if cfg.MaxModelLen == 0 {
		cfg.MaxModelLen = DefaultMaxModelLen
	}
	if cfg.ProfilerBufferMB == 0 {
		cfg.ProfilerBufferMB = DefaultProfilerBufferMB
	}
	if cfg.TimeScale == 0 {
		cfg.TimeScale = 1
	}
	if cfg.PowerCapW != 0 && !(cfg.PowerCapW > simIdleW && cfg.PowerCapW < 1e5) {
		return cfg, fmt.Errorf("power cap %g W: give watts above the simulated GPU's idle power of %g W", cfg.PowerCapW, simIdleW)
	}
	if cfg.Release == "" {
		cfg.Release = ReleaseCurrent
	}
	if cfg.ProfilerTimeout == 0 {
		cfg.ProfilerTimeout = 300 * time.Second
	}
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = 5 * time.Second
	}
	if cfg.timeouts.header == 0 {
		cfg.timeouts.header = 10 * time.Second
	}
	if cfg.timeouts.read == 0 {
		cfg.timeouts.read = 60 * time.Second
	}
	if cfg.timeouts.write == 0 {
		cfg.timeouts.write = 30 * time.Second
	}
	if cfg.KVBlocks == 0 {
		cfg.KVBlocks = 65536
	}
	switch cfg.Personality {
	case "", PersonalityATOM, PersonalityVLLM, PersonalitySGLang:
	default:
		return cfg, fmt.Errorf("personality %q: must be atom, vllm or sglang", cfg.Personality)
	}
	if cfg.MetricsRefresh == 0 {
		cfg.MetricsRefresh = 5 * time.Second
	}
	if _, ok := ParseRelease(string(cfg.Release)); !ok {
		return cfg, fmt.Errorf("atom-release %q: must be current or legacy", cfg.Release)
	}
	if cfg.ReasoningTokens < 0 || cfg.MergeFrames < 0 || cfg.EmptyTokenEvery < 0 || cfg.KVBlocks < 0 {
		return cfg, errors.New("reasoning-tokens, merge-frames, empty-token-every and kv-blocks must not be negative")
	}
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = 10 * time.Second
	}
	switch {
	case cfg.MaxNumSeqs < 1:
		return cfg, fmt.Errorf("max-num-seqs %d: must be at least 1", cfg.MaxNumSeqs)
	case cfg.MaxNumBatchedTokens < 1:
		return cfg, fmt.Errorf("max-num-batched-tokens %d: must be at least 1", cfg.MaxNumBatchedTokens)
	case cfg.MaxModelLen < 2:
		return cfg, fmt.Errorf("max-model-len %d: must be at least 2 (one prompt and one output token)", cfg.MaxModelLen)
	case cfg.TimeScale < 0 || math.IsInf(cfg.TimeScale, 0) || math.IsNaN(cfg.TimeScale):
		return cfg, fmt.Errorf("time-scale %v: must be a positive number", cfg.TimeScale)
	case cfg.Layers < 0:
		return cfg, fmt.Errorf("layers %d: must not be negative", cfg.Layers)
	case cfg.CrashAfterRequests < 0:
		return cfg, fmt.Errorf("crash-after-requests %d: must not be negative", cfg.CrashAfterRequests)
	case !(cfg.StreamErrorRate >= 0 && cfg.StreamErrorRate <= 1):
		return cfg, fmt.Errorf("stream-error-rate %v: must be between 0 and 1", cfg.StreamErrorRate)
	case cfg.ReadyDelay < 0 || cfg.GPUEventWindow < 0 || cfg.ExportDelay < 0:
		return cfg, errors.New("ready-delay, gpu-event-window and export-delay must not be negative")
	}
	for _, c := range cfg.CudagraphCaptureSizes {
		if c > cfg.MaxNumSeqs {
			return cfg, fmt.Errorf("cudagraph capture size %d is larger than max_num_seqs %d: pass --cudagraph-capture-sizes with sizes up to --max-num-seqs (ATOM fails at start the same way)", c, cfg.MaxNumSeqs)
		}
		if c < 1 {
			return cfg, fmt.Errorf("cudagraph capture size %d: must be at least 1", c)
		}
	}
	if cfg.clock == nil {
		cfg.clock = realClock{}
	}
	if cfg.Exit == nil {
		cfg.Exit = os.Exit
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	return cfg, nil
}
