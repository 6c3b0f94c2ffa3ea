package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Kind names an engine.
type Kind string

// The engines.
const (
	ATOM   Kind = "atom"   // AMD's ATOM OpenAI server (first class)
	VLLM   Kind = "vllm"   // vllm serve
	SGLang Kind = "sglang" // python -m sglang.launch_server
	Sim    Kind = "sim"    // the built-in simulated ATOM engine (profile-model serve-sim) as a child process
	None   Kind = "none"   // a server that is already running at Spec.URL: no process
)

// kinds lists every engine, ATOM first.
func kinds() []Kind { return []Kind{ATOM, VLLM, SGLang, Sim, None} }

// ParseKind reads an engine name as a user types it.
func ParseKind(s string) (Kind, error) {
	k := Kind(strings.ToLower(strings.TrimSpace(s)))
	if slices.Contains(kinds(), k) {
		return k, nil
	}
	return "", fmt.Errorf("unknown engine %q: use one of atom, vllm, sglang, sim, none", s)
}

// DefaultPort is the HTTP port an engine is started on when Spec.Port is 0
// (ATOM's and vLLM's default).
const DefaultPort = 8000

// ATOM's defaults that the catches before start depend on: the default of
// --cudagraph-capture-sizes (atom/model_engine/arg_utils.py at ffdf3bb; 512
// since 2026-05-10).
var atomDefaultCaptureSizes = []int{1, 2, 4, 8, 16, 32, 48, 64, 128, 256, 512}

// The Python modules the engines are started as.
const (
	atomModule   = "atom.entrypoints.openai_server"
	sglangModule = "sglang.launch_server"
)

// defaultEnv holds the variables every engine process gets unless the
// inherited environment or Spec.Env sets them: a single OpenMP thread per
// process (the engines' own recommendation; more only contend for CPUs) and
// a larger profiler buffer, without which Kineto silently drops GPU events
// of long profiling windows.
func defaultEnv() map[string]string {
	return map[string]string{"OMP_NUM_THREADS": "1", "KINETO_BUFFER_SIZE_MB": defaultKinetoBufferMB}
}

const defaultKinetoBufferMB = "256"

// Spec says which engine to run and how. Every engine gets the same fields;
// Command maps them to that engine's own flag names:
//
//	field            atom / sim                     vllm                       sglang
//	Model            --model M                      serve M                    --model-path M
//	Port             --server-port P                --port P                   --port P
//	TP               -tp N                          --tensor-parallel-size N   --tensor-parallel-size N
//	KVCacheDType     --kv_cache_dtype (fp8)         --kv-cache-dtype           --kv-cache-dtype (fp8: fp8_e4m3)
//	MaxNumSeqs       --max-num-seqs                 --max-num-seqs             --max-running-requests
//	MaxModelLen      --max-model-len                --max-model-len            --context-length
//	Level            --level L                      --compilation-config *     --enable-torch-compile (L > 0)
//	EnforceEager     --enforce-eager                --enforce-eager            --cuda-graph-backend-{decode,prefill} disabled †
//	CaptureSizes     --cudagraph-capture-sizes [..] --compilation-config *     --cuda-graph-bs-decode 1 2 4 †
//	TrustRemoteCode  --trust-remote-code            --trust-remote-code        --trust-remote-code
//	ProfilerDir      --torch-profiler-dir DIR       --profiler-config **       $SGLANG_TORCH_PROFILER_DIR
//	(metrics)        always on                      always on                  --enable-metrics
//
// (*) vLLM's -O is another spelling of --compilation-config (the last one
// given wins), so the compilation mode and the capture sizes travel in one
// JSON value: {"mode":L,"cudagraph_capture_sizes":[1,2,4]} ("level" is an
// unknown key since March 2026). (**) {"profiler":"torch",
// "torch_profiler_dir":DIR,...} with stacks and shapes off, as ATOM and
// (by environment) SGLang record them. (†) SGLang's spellings since its
// June 2026 CUDA-graph refactor; an installed SGLang whose --help lacks them
// (Installed) gets --disable-cuda-graph and --cuda-graph-bs. ATOM's
// KV-cache flag keeps the snake_case spelling that older releases accept
// alone. The simulated engine takes ATOM's flags that it uses (model,
// port, profiler directory, max-num-seqs, capture sizes, enforce-eager)
// plus --time-scale, and ignores the rest (Check says which).
type Spec struct {
	Kind Kind
	// Model is the model path or name the engine loads, and the name every
	// request must carry: ATOM answers 400 to a request naming another.
	Model string
	TP    int    // tensor-parallel size; 0: 1
	Port  int    // HTTP port; 0: DefaultPort, for sim any free port (Start binds it)
	URL   string // none only: the running server's base URL, e.g. http://127.0.0.1:8000

	KVCacheDType string // KV-cache data type; "": fp8 for ATOM, the engine's default otherwise
	MaxNumSeqs   int    // most sequences in a decode batch; 0: the engine's default (ATOM 512)
	MaxModelLen  int    // context length; 0: the engine's default
	// Level is the torch.compile level; nil: the engine's default (ATOM 3,
	// piecewise compile plus CUDA graphs). new(0) disables torch.compile;
	// EnforceEager does not.
	Level *int
	// EnforceEager disables CUDA graphs, and only them: torch.compile still
	// runs unless Level is 0.
	EnforceEager bool
	// CaptureSizes are the CUDA-graph batch sizes; nil: the engine's default
	// (ATOM [1,2,4,8,16,32,48,64,128,256,512]). ATOM drops the sizes above
	// MaxNumSeqs (releases before May 2026 fail at start instead).
	CaptureSizes    []int
	TrustRemoteCode bool
	TimeScale       float64  // sim only: run this many times faster than the modelled GPU; 0: real time
	ExtraArgs       []string // free-form arguments appended to the command line as given

	// Env sets environment variables of the engine process; it wins over
	// the inherited environment and over defaultEnv.
	Env map[string]string
	Dir string // working directory (ATOM users run from its checkout), made absolute; "": the caller's
	// Exe replaces the executable: the Python interpreter for atom and
	// sglang ("python3"), the vllm command ("vllm"), the profile-model binary
	// for sim (default: the running executable).
	Exe string
	// ProfilerDir is the torch profiler's trace directory; "": profiling off.
	// It is made absolute, so a relative one means the same with Dir set.
	ProfilerDir string
	// Installed is the engine Identify found; nil: not known. With it,
	// Command refuses a flag the engine's --help does not list and picks
	// the spelling it knows where the engine renamed one.
	Installed *Installed
}

// Command is a process as it will be started.
type Command struct {
	Path string   `json:"path"`          // executable: a name looked up in PATH, or a path
	Args []string `json:"args"`          // arguments after Path
	Dir  string   `json:"dir,omitempty"` // working directory; "": the caller's
	// Env are the variables the engine package cares about (defaultEnv, the
	// profiler directory, Spec.Env) with the values the process gets, as
	// "K=V" sorted by name. The rest of the environment is inherited.
	Env []string `json:"env"`

	environ []string // the whole environment of the process
	// kinetoConf is the Kineto configuration file Start writes where
	// $KINETO_CONFIG says ("" for none).
	kinetoConf string
}

// String is the command as a shell line: cd DIR && K=V ... PATH ARGS.
func (c Command) String() string {
	var parts []string
	if c.Dir != "" {
		parts = append(parts, "cd", shellQuote(c.Dir), "&&")
	}
	for _, kv := range c.Env {
		k, v, _ := strings.Cut(kv, "=")
		parts = append(parts, k+"="+shellQuote(v))
	}
	parts = append(parts, shellQuote(c.Path))
	for _, a := range c.Args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// writeKinetoConfig writes the Kineto configuration file the command's
// KINETO_CONFIG names, when this package set it.
func (c Command) writeKinetoConfig() error {
	if c.kinetoConf == "" {
		return nil
	}
	for _, kv := range c.Env {
		if path, ok := strings.CutPrefix(kv, "KINETO_CONFIG="); ok {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return fmt.Errorf("writing the Kineto configuration: %w", err)
			}
			if err := os.WriteFile(path, []byte(c.kinetoConf), 0o644); err != nil {
				return fmt.Errorf("writing the Kineto configuration: %w", err)
			}
		}
	}
	return nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:,=+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// withDefaults fills in the zero fields that have a default.
func (s Spec) withDefaults() Spec {
	if s.TP == 0 {
		s.TP = 1
	}
	if s.Port == 0 && s.Kind != Sim {
		s.Port = DefaultPort
	}
	if s.Kind == ATOM && s.KVCacheDType == "" {
		s.KVCacheDType = "fp8"
	}
	return s
}

// Check catches, before anything starts, a spec that cannot work — bad
// values and the known traps that otherwise cost a start-up on a GPU node —
// and returns notes on settings that do less than a user may think.
func (s Spec) Check() (notes []string, err error) {
	s = s.withDefaults()
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	note := func(format string, a ...any) { notes = append(notes, fmt.Sprintf(format, a...)) }

	if _, err := ParseKind(string(s.Kind)); err != nil {
		return nil, err
	}
	if s.Model == "" {
		bad("no model: name the model the engine serves (requests must carry exactly that name)")
	}
	if s.Kind == None {
		if s.URL == "" {
			bad("engine none attaches to a running server: give its URL, e.g. http://127.0.0.1:8000")
		} else if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("URL %q: want http://HOST:PORT of the running server", s.URL)
		}
		if s.Exe != "" || s.Dir != "" || len(s.Env) > 0 || len(s.ExtraArgs) > 0 || s.ProfilerDir != "" {
			note("engine none starts no process: the executable, working directory, environment, extra arguments and profiler directory are the running server's own")
		}
		return notes, errors.Join(errs...)
	}
	if s.URL != "" {
		bad("URL %q is only for engine none (attach to a running server); engine %s is started on Port", s.URL, s.Kind)
	}
	switch {
	case s.TP < 1:
		bad("tensor-parallel size %d: must be at least 1", s.TP)
	case s.Port < 0 || s.Port > 65535:
		bad("port %d: must be between 1 and 65535", s.Port)
	}
	if s.MaxNumSeqs < 0 {
		bad("max-num-seqs %d: must not be negative (0: the engine's default)", s.MaxNumSeqs)
	}
	if s.MaxModelLen < 0 {
		bad("max-model-len %d: must not be negative (0: the engine's default)", s.MaxModelLen)
	}
	if s.Level != nil && *s.Level < 0 {
		bad("level %d: must not be negative (0 disables torch.compile)", *s.Level)
	}
	for _, c := range s.CaptureSizes {
		if c < 1 {
			bad("CUDA-graph capture size %d: must be at least 1", c)
		}
	}
	if s.TimeScale < 0 || math.IsNaN(s.TimeScale) || math.IsInf(s.TimeScale, 0) {
		bad("time scale %v: must be a positive number", s.TimeScale)
	} else if s.TimeScale != 0 && s.Kind != Sim {
		note("time scale %g applies to the simulated engine only; %s runs in real time", s.TimeScale, s.Kind)
	}

	// The capture-size trap: ATOM since May 2026 drops the graphs larger
	// than the largest batch it may run, with a warning, and fails only
	// when none is left (model_runner.py at ffdf3bb); older releases, and
	// the simulator like them, fail at start.
	if s.MaxNumSeqs > 0 && !s.EnforceEager {
		sizes, deflt := s.CaptureSizes, false
		if sizes == nil && s.Kind == ATOM {
			sizes, deflt = atomDefaultCaptureSizes, true
		}
		if largest := slices.Max(append([]int{0}, sizes...)); largest > s.MaxNumSeqs {
			what := fmt.Sprintf("the largest CUDA-graph capture size %d", largest)
			if deflt {
				what += " (ATOM's default sizes " + captureList(sizes) + ")"
			}
			kept := slices.DeleteFunc(slices.Clone(sizes), func(c int) bool { return c > s.MaxNumSeqs })
			switch s.Kind {
			case ATOM:
				if len(kept) == 0 {
					bad("--max-num-seqs %d is smaller than every CUDA-graph capture size %s: ATOM fails at start (no capture size left); pass --cudagraph-capture-sizes %q",
						s.MaxNumSeqs, captureList(sizes), captureList(fitCaptureSizes(sizes, s.MaxNumSeqs)))
					break
				}
				note("--max-num-seqs %d is smaller than %s: ATOM drops the larger sizes with a warning and captures %s (releases before May 2026 fail at start instead; for those pass --cudagraph-capture-sizes %q)",
					s.MaxNumSeqs, what, captureList(kept), captureList(fitCaptureSizes(sizes, s.MaxNumSeqs)))
			case Sim:
				bad("--max-num-seqs %d is smaller than %s: ATOM fails at start; pass --cudagraph-capture-sizes %q",
					s.MaxNumSeqs, what, captureList(fitCaptureSizes(sizes, s.MaxNumSeqs)))
			default:
				note("CUDA-graph capture sizes above --max-num-seqs %d (%s) are never replayed", s.MaxNumSeqs, captureList(sizes))
			}
		}
	}
	if s.EnforceEager && (s.Kind == ATOM || s.Kind == VLLM) && (s.Level == nil || *s.Level > 0) {
		level := "the engine's default level"
		if s.Level != nil {
			level = "level " + strconv.Itoa(*s.Level)
		} else if s.Kind == ATOM {
			level = "level 3, ATOM's default"
		}
		note("--enforce-eager only disables CUDA graphs; torch.compile still runs (%s): pass --level 0 to disable it too", level)
	}
	if s.EnforceEager && len(s.CaptureSizes) > 0 {
		note("CUDA-graph capture sizes have no effect with --enforce-eager (no graphs are captured)")
	}
	if s.Kind == SGLang && s.Level != nil && *s.Level > 0 {
		note("SGLang has no compilation levels: level %d turns on --enable-torch-compile", *s.Level)
	}
	if s.Kind == SGLang && s.KVCacheDType == "fp8" {
		note("SGLang has no KV-cache dtype fp8: it gets fp8_e4m3, what ATOM and vLLM mean by fp8 (pass fp8_e5m2 for the other)")
	}
	if v, ok := s.Env[atomeshEnv]; ok && s.Kind == ATOM && v == "1" {
		bad("%s=1 starts ATOM's Atomesh router, which has no /start_profile or /stop_profile: leave it unset (this tool sets it to 0)", atomeshEnv)
	}
	if s.Kind == Sim {
		var ignored []string
		if s.KVCacheDType != "" {
			ignored = append(ignored, "--kv-cache-dtype")
		}
		if s.TP > 1 {
			ignored = append(ignored, "tensor parallelism (one rank)")
		}
		if s.Level != nil {
			ignored = append(ignored, "--level")
		}
		if s.MaxModelLen > 0 {
			ignored = append(ignored, "--max-model-len")
		}
		if s.TrustRemoteCode {
			ignored = append(ignored, "--trust-remote-code")
		}
		if len(ignored) > 0 {
			note("the simulated engine ignores %s", strings.Join(ignored, ", "))
		}
	}
	return notes, errors.Join(errs...)
}

// fitCaptureSizes keeps the sizes up to max and adds max itself, so that
// the largest batch still replays a graph.
func fitCaptureSizes(sizes []int, max int) []int {
	var out []int
	for _, c := range sizes {
		if c <= max {
			out = append(out, c)
		}
	}
	if !slices.Contains(out, max) {
		out = append(out, max)
	}
	slices.Sort(out)
	return out
}

// captureList writes sizes as ATOM's flag takes them: "[1,2,4]".
func captureList(sizes []int) string {
	s := make([]string, len(sizes))
	for i, c := range sizes {
		s[i] = strconv.Itoa(c)
	}
	return "[" + strings.Join(s, ",") + "]"
}

// Command returns the exact process the engine is started as, with the
// environment inherited from this process; it fails on what Check rejects.
// Engine none has no process and no command.
func (s Spec) Command() (Command, error) {
	return s.command(os.Environ())
}

func (s Spec) command(environ []string) (Command, error) {
	if _, err := s.Check(); err != nil {
		return Command{}, err
	}
	if s.Kind == None {
		return Command{}, errors.New("engine none attaches to a running server and starts no process")
	}
	s = s.withDefaults()
	profDir := ""
	if s.ProfilerDir != "" {
		var err error
		if profDir, err = filepath.Abs(s.ProfilerDir); err != nil {
			return Command{}, fmt.Errorf("profiler directory %q: %w", s.ProfilerDir, err)
		}
	}
	exe, err := s.executable()
	if err != nil {
		return Command{}, err
	}
	args := append(s.engineArgs(profDir), s.ExtraArgs...)
	if s.Installed != nil {
		if err := s.Installed.checkFlags(args[programWords(s.Kind):]); err != nil {
			return Command{}, err
		}
	}
	if s.Dir != "" {
		if s.Dir, err = filepath.Abs(s.Dir); err != nil {
			return Command{}, fmt.Errorf("working directory %q: %w", s.Dir, err)
		}
	}
	if strings.ContainsRune(exe, filepath.Separator) {
		// A path relative to the caller, not to Dir.
		if exe, err = filepath.Abs(exe); err != nil {
			return Command{}, fmt.Errorf("executable %q: %w", s.Exe, err)
		}
	}
	cmd := Command{Path: exe, Args: args, Dir: s.Dir}
	if err := s.setEnvironment(&cmd, environ, profDir); err != nil {
		return Command{}, err
	}
	return cmd, nil
}

// executable is the program that starts the engine: Spec.Exe, else the
// engine's usual one (for the simulated engine, this program itself).
func (s Spec) executable() (string, error) {
	if s.Exe != "" {
		return s.Exe, nil
	}
	switch s.Kind {
	case ATOM, SGLang:
		return "python3", nil
	case VLLM:
		return "vllm", nil
	case Sim:
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("finding the profile-model executable for the simulated engine: %w (set the executable explicitly)", err)
		}
		return exe, nil
	}
	return "", nil
}

// engineArgs are the engine's command-line arguments for the spec, in each
// engine's own spelling, before Spec.ExtraArgs; profDir is the absolute
// profiler directory ("" for none).
func (s Spec) engineArgs(profDir string) []string {
	switch s.Kind {
	case ATOM:
		return s.atomArgs(profDir)
	case VLLM:
		return s.vllmArgs(profDir)
	case SGLang:
		return s.sglangArgs()
	case Sim:
		return s.simArgs(profDir)
	}
	return nil
}

func (s Spec) atomArgs(profDir string) []string {
	itoa := strconv.Itoa
	args := []string{"-m", atomModule, "--model", s.Model, "--kv_cache_dtype", s.KVCacheDType, "-tp", itoa(s.TP)}
	if profDir != "" {
		args = append(args, "--torch-profiler-dir", profDir)
	}
	args = append(args, "--server-port", itoa(s.Port))
	if s.MaxNumSeqs > 0 {
		args = append(args, "--max-num-seqs", itoa(s.MaxNumSeqs))
	}
	if s.MaxModelLen > 0 {
		args = append(args, "--max-model-len", itoa(s.MaxModelLen))
	}
	if s.Level != nil {
		args = append(args, "--level", itoa(*s.Level))
	}
	if s.EnforceEager {
		args = append(args, "--enforce-eager")
	}
	if s.CaptureSizes != nil {
		args = append(args, "--cudagraph-capture-sizes", captureList(s.CaptureSizes))
	}
	if s.TrustRemoteCode {
		args = append(args, "--trust-remote-code")
	}
	return args
}

// programWords is how many of an engine's arguments come before its own
// flags: python's "-m MODULE", vllm's "serve MODEL".
func programWords(k Kind) int {
	switch k {
	case ATOM, SGLang, VLLM:
		return 2
	case Sim:
		return 1
	}
	return 0
}

// spelling is flag as the installed engine spells it: current, unless its
// --help lists only old.
func (s Spec) spelling(current, old string) string {
	if in := s.Installed; in != nil && !in.Has(current) && in.Has(old) {
		return old
	}
	return current
}

// vllmProfilerConfig is vLLM's ProfilerConfig (vllm/config/profiler.py)
// as --profiler-config takes it: the torch profiler writing to dir, with
// stacks and shapes off as ATOM records them by default (vLLM's own
// default records stacks).
type vllmProfilerConfig struct {
	Profiler     string `json:"profiler"`
	Dir          string `json:"torch_profiler_dir"`
	WithStack    bool   `json:"torch_profiler_with_stack"`
	RecordShapes bool   `json:"torch_profiler_record_shapes"`
}

func (s Spec) vllmArgs(profDir string) []string {
	itoa := strconv.Itoa
	args := []string{"serve", s.Model, "--port", itoa(s.Port), "--tensor-parallel-size", itoa(s.TP)}
	if profDir != "" {
		pc, _ := json.Marshal(vllmProfilerConfig{Profiler: "torch", Dir: profDir})
		args = append(args, "--profiler-config", string(pc))
	}
	if s.KVCacheDType != "" {
		args = append(args, "--kv-cache-dtype", s.KVCacheDType)
	}
	if s.MaxNumSeqs > 0 {
		args = append(args, "--max-num-seqs", itoa(s.MaxNumSeqs))
	}
	if s.MaxModelLen > 0 {
		args = append(args, "--max-model-len", itoa(s.MaxModelLen))
	}
	if s.EnforceEager {
		args = append(args, "--enforce-eager")
	}
	var cc []string
	if s.Level != nil {
		cc = append(cc, `"mode":`+itoa(*s.Level))
	}
	if s.CaptureSizes != nil {
		cc = append(cc, `"cudagraph_capture_sizes":`+captureList(s.CaptureSizes))
	}
	if cc != nil {
		args = append(args, "--compilation-config", "{"+strings.Join(cc, ",")+"}")
	}
	if s.TrustRemoteCode {
		args = append(args, "--trust-remote-code")
	}
	return args
}

// sglangArgs: SGLang takes its profiler directory from the environment
// (profilerEnv) and serves /metrics only when asked.
func (s Spec) sglangArgs() []string {
	itoa := strconv.Itoa
	args := []string{"-m", sglangModule, "--model-path", s.Model, "--port", itoa(s.Port), "--tensor-parallel-size", itoa(s.TP)}
	if kv := s.KVCacheDType; kv != "" {
		if kv == "fp8" {
			kv = "fp8_e4m3"
		}
		args = append(args, "--kv-cache-dtype", kv)
	}
	if s.MaxNumSeqs > 0 {
		args = append(args, "--max-running-requests", itoa(s.MaxNumSeqs))
	}
	if s.MaxModelLen > 0 {
		args = append(args, "--context-length", itoa(s.MaxModelLen))
	}
	if s.EnforceEager {
		if f := s.spelling("--cuda-graph-backend-decode", "--disable-cuda-graph"); f == "--disable-cuda-graph" {
			args = append(args, f)
		} else {
			args = append(args, "--cuda-graph-backend-decode", "disabled", "--cuda-graph-backend-prefill", "disabled")
		}
	}
	if s.CaptureSizes != nil {
		args = append(args, s.spelling("--cuda-graph-bs-decode", "--cuda-graph-bs"))
		for _, c := range s.CaptureSizes {
			args = append(args, itoa(c))
		}
	}
	if s.Level != nil && *s.Level > 0 {
		args = append(args, "--enable-torch-compile")
	}
	if s.TrustRemoteCode {
		args = append(args, "--trust-remote-code")
	}
	return append(args, "--enable-metrics")
}

func (s Spec) simArgs(profDir string) []string {
	itoa := strconv.Itoa
	args := []string{"serve-sim", "--model", s.Model, "--server-port", itoa(s.Port)}
	if profDir != "" {
		args = append(args, "--torch-profiler-dir", profDir)
	}
	if s.MaxNumSeqs > 0 {
		args = append(args, "--max-num-seqs", itoa(s.MaxNumSeqs))
	}
	if s.EnforceEager {
		args = append(args, "--enforce-eager")
	}
	if s.CaptureSizes != nil {
		args = append(args, "--cudagraph-capture-sizes", captureList(s.CaptureSizes))
	}
	if s.TimeScale > 0 {
		args = append(args, "--time-scale", strconv.FormatFloat(s.TimeScale, 'g', -1, 64))
	}
	return args
}

// profilerEnv is the environment variable that gives the engine its torch
// profiler directory, for the engines that take it so ("": a flag).
// vLLM read VLLM_TORCH_PROFILER_DIR until February 2026; it takes
// --profiler-config since v0.13.
func profilerEnv(k Kind) string {
	if k == SGLang {
		return "SGLANG_TORCH_PROFILER_DIR"
	}
	return ""
}

// atomeshEnv routes ATOM's openai_server entry point to its Atomesh
// router (atom/entrypoints/openai_server.py at ffdf3bb), which serves no
// profiling routes.
const atomeshEnv = "USE_ATOMESH_ENTRYPOINTS"

// profilingEnv are defaults, for a profiled engine of kind k, that make
// it record what the others record: SGLang records stacks and shapes
// unless told not to (python/sglang/srt/environ.py); ATOM records neither
// (ATOM_PROFILER_MORE unset), vLLM neither with its --profiler-config.
func profilingEnv(k Kind) map[string]string {
	if k == SGLang {
		return map[string]string{"SGLANG_PROFILE_WITH_STACK": "false", "SGLANG_PROFILE_RECORD_SHAPES": "false"}
	}
	return nil
}

// KinetoConfigFile is the name of the Kineto configuration written into
// the profiler directory of a real engine (KINETO_CONFIG points at it).
const KinetoConfigFile = "kineto.conf"

// kinetoConfig is the Kineto configuration for a profiler buffer of mb
// MB, for the Kineto that reads no KINETO_BUFFER_SIZE_MB: upstream Kineto
// (pytorch/kineto 114171d, libkineto/src/Config.cpp) sizes the CUPTI
// buffer by ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB (default 128) and caps the
// ROCm loggers (roctracer, rocprofiler-sdk) at ROCTRACER_MAX_EVENTS events
// (default 5,000,000; their setMaxBufferSize does nothing). mb scales
// both: 256 MB allows 10,240,000 ROCm events, twice the default.
func kinetoConfig(mb string) (string, error) {
	n, err := strconv.Atoi(mb)
	if err != nil || n < 1 {
		return "", fmt.Errorf("KINETO_BUFFER_SIZE_MB=%q: want a whole number of MB, at least 1", mb)
	}
	return fmt.Sprintf("# Written by profile-model for the engine's Kineto (KINETO_BUFFER_SIZE_MB=%d).\n"+
		"ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB=%d\nROCTRACER_MAX_EVENTS=%d\n", n, n, n*40000), nil
}

// setEnvironment sets the command's environment, by precedence: inherited
// (environ) < defaultEnv and profilingEnv (only where unset) < the
// profiler directory, ATOM's entry point and the Kineto configuration <
// Spec.Env. cmd.Env lists what this sets, sorted; cmd.environ is the whole
// environment the engine gets.
func (s Spec) setEnvironment(cmd *Command, environ []string, profDir string) error {
	inherited := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			inherited[k] = v
		}
	}
	set := map[string]string{}
	defaults := defaultEnv()
	if profDir != "" {
		maps.Copy(defaults, profilingEnv(s.Kind))
	}
	for k, v := range defaults {
		if old, ok := inherited[k]; ok {
			v = old
		}
		set[k] = v
	}
	if env := profilerEnv(s.Kind); env != "" && profDir != "" {
		set[env] = profDir
	}
	if s.Kind == ATOM {
		set[atomeshEnv] = "0"
	}
	for k, v := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("environment variable name %q: must be non-empty without '=' or NUL", k)
		}
		set[k] = v
	}
	// Kineto builds that read no KINETO_BUFFER_SIZE_MB read a file; one
	// the user points at is theirs.
	_, inheritedConf := inherited["KINETO_CONFIG"]
	if _, ownConf := set["KINETO_CONFIG"]; profDir != "" && !inheritedConf && !ownConf && (s.Kind == ATOM || s.Kind == VLLM || s.Kind == SGLang) {
		conf, err := kinetoConfig(set["KINETO_BUFFER_SIZE_MB"])
		if err != nil {
			return err
		}
		set["KINETO_CONFIG"], cmd.kinetoConf = filepath.Join(profDir, KinetoConfigFile), conf
	}
	for k, v := range set {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	slices.Sort(cmd.Env)
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, ours := set[k]; !ours {
			cmd.environ = append(cmd.environ, kv)
		}
	}
	cmd.environ = append(cmd.environ, cmd.Env...)
	if s.Dir != "" {
		// As a shell's cd would: programs trust $PWD to name their directory.
		cmd.environ = slices.DeleteFunc(cmd.environ, func(kv string) bool { return strings.HasPrefix(kv, "PWD=") })
		cmd.environ = append(cmd.environ, "PWD="+s.Dir)
	}
	return nil
}
