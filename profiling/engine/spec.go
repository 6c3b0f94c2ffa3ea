package engine

import (
	"errors"
	"fmt"
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

// ATOM's defaults that the catches before start depend on.
var atomDefaultCaptureSizes = []int{1, 2, 4, 8, 16, 32, 48, 64, 128, 256}

// defaultEnv holds the variables every engine process gets unless the
// inherited environment or Spec.Env sets them: a single OpenMP thread per
// process (the engines' own recommendation; more only contend for CPUs) and
// a larger profiler buffer, without which Kineto silently drops GPU events
// of long profiling windows.
func defaultEnv() map[string]string {
	return map[string]string{"OMP_NUM_THREADS": "1", "KINETO_BUFFER_SIZE_MB": "256"}
}

// Spec says which engine to run and how. Every engine gets the same fields;
// Command maps them to that engine's own flag names:
//
//	field            atom / sim                     vllm                       sglang
//	Model            --model M                      serve M                    --model-path M
//	Port             --server-port P                --port P                   --port P
//	TP               -tp N                          --tensor-parallel-size N   --tp N
//	KVCacheDType     --kv_cache_dtype (fp8)         --kv-cache-dtype           --kv-cache-dtype
//	MaxNumSeqs       --max-num-seqs                 --max-num-seqs             --max-running-requests
//	MaxModelLen      --max-model-len                --max-model-len            --context-length
//	Level            --level L                      --compilation-config *     --enable-torch-compile (L > 0)
//	EnforceEager     --enforce-eager                --enforce-eager            --disable-cuda-graph
//	CaptureSizes     --cudagraph-capture-sizes [..] --compilation-config *     --cuda-graph-bs 1 2 4
//	TrustRemoteCode  --trust-remote-code            --trust-remote-code        --trust-remote-code
//	ProfilerDir      --torch-profiler-dir DIR       $VLLM_TORCH_PROFILER_DIR   $SGLANG_TORCH_PROFILER_DIR
//
// (*) vLLM's -O is another spelling of --compilation-config (the last one
// given wins), so the level and the capture sizes travel in one JSON value:
// {"level":L,"cudagraph_capture_sizes":[1,2,4]}. ATOM's KV-cache flag keeps
// the snake_case spelling that older releases accept alone. The simulated
// engine takes ATOM's flags that it uses (model, port, profiler directory,
// max-num-seqs, capture sizes, enforce-eager) plus --time-scale, and
// ignores the rest (Check says which).
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
	// (ATOM [1,2,4,8,16,32,48,64,128,256]). ATOM fails at start when the
	// largest exceeds MaxNumSeqs.
	CaptureSizes    []int
	TrustRemoteCode bool
	TimeScale       float64  // sim only: run this many times faster than the modelled GPU; 0: real time
	ExtraArgs       []string // free-form arguments appended to the command line as given

	// Env sets environment variables of the engine process; it wins over
	// the inherited environment and over defaultEnv.
	Env map[string]string
	Dir string // working directory (ATOM users run from its checkout), made absolute; "": the caller's
	// Exe replaces the executable: the Python interpreter for atom and
	// sglang ("python"), the vllm command ("vllm"), the profile-model binary
	// for sim (default: the running executable).
	Exe string
	// ProfilerDir is the torch profiler's trace directory; "": profiling off.
	// It is made absolute, so a relative one means the same with Dir set.
	ProfilerDir string
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

	// The capture-size trap: ATOM (and the simulator, like it) fails at
	// start when a graph is larger than the largest batch it may run.
	if s.MaxNumSeqs > 0 && !s.EnforceEager {
		sizes, deflt := s.CaptureSizes, false
		if sizes == nil && s.Kind == ATOM {
			sizes, deflt = atomDefaultCaptureSizes, true
		}
		if largest := slices.Max(append([]int{0}, sizes...)); largest > s.MaxNumSeqs {
			switch s.Kind {
			case ATOM, Sim:
				what := fmt.Sprintf("the largest CUDA-graph capture size %d", largest)
				if deflt {
					what += " (ATOM's default sizes " + captureList(sizes) + ")"
				}
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
		return "python", nil
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
		return s.vllmArgs()
	case SGLang:
		return s.sglangArgs()
	case Sim:
		return s.simArgs(profDir)
	}
	return nil
}

func (s Spec) atomArgs(profDir string) []string {
	itoa := strconv.Itoa
	args := []string{"-m", "atom.entrypoints.openai_server", "--model", s.Model, "--kv_cache_dtype", s.KVCacheDType, "-tp", itoa(s.TP)}
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

// vllmArgs: vLLM takes its profiler directory from the environment
// (profilerEnv).
func (s Spec) vllmArgs() []string {
	itoa := strconv.Itoa
	args := []string{"serve", s.Model, "--port", itoa(s.Port), "--tensor-parallel-size", itoa(s.TP)}
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
		cc = append(cc, `"level":`+itoa(*s.Level))
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
// (profilerEnv).
func (s Spec) sglangArgs() []string {
	itoa := strconv.Itoa
	args := []string{"-m", "sglang.launch_server", "--model-path", s.Model, "--port", itoa(s.Port), "--tp", itoa(s.TP)}
	if s.KVCacheDType != "" {
		args = append(args, "--kv-cache-dtype", s.KVCacheDType)
	}
	if s.MaxNumSeqs > 0 {
		args = append(args, "--max-running-requests", itoa(s.MaxNumSeqs))
	}
	if s.MaxModelLen > 0 {
		args = append(args, "--context-length", itoa(s.MaxModelLen))
	}
	if s.EnforceEager {
		args = append(args, "--disable-cuda-graph")
	}
	if s.CaptureSizes != nil {
		args = append(args, "--cuda-graph-bs")
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
	return args
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
func profilerEnv(k Kind) string {
	switch k {
	case VLLM:
		return "VLLM_TORCH_PROFILER_DIR"
	case SGLang:
		return "SGLANG_TORCH_PROFILER_DIR"
	}
	return ""
}

// setEnvironment sets the command's environment, by precedence: inherited
// (environ) < defaultEnv (only where unset) < the profiler directory <
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
	for k, v := range defaultEnv() {
		if old, ok := inherited[k]; ok {
			v = old
		}
		set[k] = v
	}
	if env := profilerEnv(s.Kind); env != "" && profDir != "" {
		set[env] = profDir
	}
	for k, v := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("environment variable name %q: must be non-empty without '=' or NUL", k)
		}
		set[k] = v
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
