// Package enginetest holds the conformance stand-ins of the real engines
// for tests: a test binary that calls Main at its start becomes, when the
// engine package starts it as ATOM, vLLM or SGLang (Spec.Exe, with KindEnv
// in Spec.Env), a loopback server with that engine's command line, routes,
// replies and trace files, as read from the engine's source at the
// commits docs/engines.md names. The serving and the trace contents are
// the simulated engine's (package sim); what the stand-in adds is each
// engine's surface.
package enginetest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/profile-model/profile-model/profiling/sim"
)

// The environment that steers a stand-in.
const (
	// KindEnv makes the process a stand-in of that engine: atom, vllm or sglang.
	KindEnv = "PROFILE_MODEL_STANDIN"
	// HelpEnv is the help fixture the stand-in prints for --help and
	// whose options are the only ones it accepts.
	HelpEnv = "PROFILE_MODEL_STANDIN_HELP"
	// EraEnv picks an engine era where the surface changed: vLLM
	// "early-2026" takes its profiler directory from
	// $VLLM_TORCH_PROFILER_DIR (removed in February 2026); by default
	// ("current") only from --profiler-config.
	EraEnv = "PROFILE_MODEL_STANDIN_ERA"
	// TimeScaleEnv runs the simulated GPU this many times faster (default 200).
	TimeScaleEnv = "PROFILE_MODEL_STANDIN_TIME_SCALE"
	// MetricsRefreshEnv is the ATOM stand-in's /metrics refresh interval
	// (a Go duration; default ATOM's 5 s).
	MetricsRefreshEnv = "PROFILE_MODEL_STANDIN_METRICS_REFRESH"
	// VersionEnv is the version a stand-in reports when asked.
	VersionEnv = "PROFILE_MODEL_STANDIN_VERSION"
	// RankLagEnv is how long after /stop_profile's reply the ATOM
	// stand-in's ranks after the first finish their export (a Go duration).
	RankLagEnv = "PROFILE_MODEL_STANDIN_RANK_LAG"
)

// Main runs the stand-in when KindEnv is set and returns its exit status;
// ok is false when the process is no stand-in.
func Main() (code int, ok bool) {
	kind := os.Getenv(KindEnv)
	if kind == "" {
		return 0, false
	}
	return run(sim.Personality(kind), os.Args[1:], os.Stdout, os.Stderr), true
}

// defaultVersions are the versions the stand-ins were read from.
var defaultVersions = map[sim.Personality]string{
	sim.PersonalityATOM: "ffdf3bb", sim.PersonalityVLLM: "0.27.1", sim.PersonalitySGLang: "0.5.17",
}

// launchers are the arguments before an engine's own options.
var launchers = map[sim.Personality][]string{
	sim.PersonalityATOM:   {"-m", "atom.entrypoints.openai_server"},
	sim.PersonalitySGLang: {"-m", "sglang.launch_server"},
	sim.PersonalityVLLM:   {"serve"},
}

func run(kind sim.Personality, args []string, stdout, stderr io.Writer) int {
	launcher, ok := launchers[kind]
	if !ok {
		fmt.Fprintf(stderr, "stand-in: unknown engine %q\n", kind)
		return 2
	}
	// A version query before the start (`vllm --version`, `python -c
	// "import sglang; print(sglang.__version__)"`, `python --version`)
	// answers $VersionEnv.
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-V" || args[0] == "-c") {
		fmt.Fprintln(stdout, cmp.Or(os.Getenv(VersionEnv), defaultVersions[kind]))
		return 0
	}
	for i, a := range launcher {
		if i >= len(args) || args[i] != a {
			fmt.Fprintf(stderr, "stand-in %s: the command line does not start with %q: %q\n", kind, strings.Join(launcher, " "), args)
			return 2
		}
	}
	args = args[len(launcher):]
	helpText, err := os.ReadFile(os.Getenv(HelpEnv))
	if err != nil {
		fmt.Fprintf(stderr, "stand-in %s: the help fixture ($%s): %v\n", kind, HelpEnv, err)
		return 2
	}
	h := parseHelp(string(helpText))
	var positional []string
	if kind == sim.PersonalityVLLM && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		positional, args = args[:1], args[1:] // vllm serve MODEL
	}
	vals, code := h.parseArgs(args, stdout, stderr)
	if code >= 0 {
		return code
	}
	return serve(kind, vals, positional, stderr)
}

// help is what an argparse help text says of its options.
type help struct {
	text  string
	usage string // the usage paragraph, as argparse prints it before an error
	prog  string
	takes map[string]int // option → values it takes: 0 none, 1 one, -1 one or more
}

var optionSpec = regexp.MustCompile(`^(-{1,2}[A-Za-z0-9][\w.-]*)(?:[ =](.*))?$`)

// parseHelp reads the options of an argparse help text: each line that
// begins with spaces and a dash lists an option's spellings, comma
// separated, each with its metavar ("[X ...]" for one or more values).
func parseHelp(text string) help {
	h := help{text: text, takes: map[string]int{}}
	usage, _, _ := strings.Cut(text, "\n\n")
	h.usage = usage
	if f := strings.Fields(strings.TrimPrefix(usage, "usage:")); len(f) > 0 {
		h.prog = f[0]
		if len(f) > 1 && !strings.HasPrefix(f[1], "[") && !strings.HasPrefix(f[1], "-") {
			h.prog += " " + f[1] // vllm serve
		}
	}
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimLeft(line, " ")
		if len(t) == len(line) || !strings.HasPrefix(t, "-") {
			continue
		}
		spec, _, _ := strings.Cut(t, "  ") // the description follows two spaces
		for _, part := range strings.Split(spec, ", ") {
			m := optionSpec.FindStringSubmatch(strings.TrimSpace(part))
			if m == nil {
				continue
			}
			n := 0
			switch {
			case strings.Contains(m[2], "..."):
				n = -1
			case strings.TrimSpace(m[2]) != "":
				n = 1
			}
			h.takes[m[1]] = n
		}
	}
	return h
}

// parseArgs reads args as the engine's parser does; code ≥ 0 means exit
// with it: 0 after --help, 2 (argparse's) for arguments it does not know.
func (h help) parseArgs(args []string, stdout, stderr io.Writer) (vals map[string][]string, code int) {
	vals = map[string][]string{}
	var unknown []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		// vLLM's parser also takes --help=all (argparse_utils.py) and
		// prints every group; the fixture is that listing.
		if a == "-h" || a == "--help" || strings.HasPrefix(a, "--help=") {
			io.WriteString(stdout, h.text)
			return nil, 0
		}
		name, inline, hasInline := strings.Cut(a, "=")
		n, known := h.takes[name]
		if !strings.HasPrefix(a, "-") || !known {
			unknown = append(unknown, a)
			continue
		}
		switch {
		case hasInline:
			vals[name] = append(vals[name], inline)
		case n == 0:
			vals[name] = append(vals[name], "")
		case n == 1:
			if i+1 >= len(args) {
				fmt.Fprintf(stderr, "%s\n%s: error: argument %s: expected one argument\n", h.usage, h.prog, name)
				return nil, 2
			}
			i++
			vals[name] = append(vals[name], args[i])
		default:
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				vals[name] = append(vals[name], args[i])
			}
		}
	}
	if len(unknown) > 0 {
		fmt.Fprintf(stderr, "%s\n%s: error: unrecognized arguments: %s\n", h.usage, h.prog, strings.Join(unknown, " "))
		return nil, 2
	}
	return vals, -1
}

// last is the last value given for any of names (argparse: the last wins).
func last(vals map[string][]string, names ...string) string {
	v := ""
	for _, n := range names {
		if vs := vals[n]; len(vs) > 0 {
			v = vs[len(vs)-1]
		}
	}
	return v
}

// serve runs the simulated engine with the engine's settings until SIGTERM.
func serve(kind sim.Personality, vals map[string][]string, positional []string, stderr io.Writer) int {
	cfg := sim.Config{Personality: kind, TimeScale: 200, ShutdownGrace: time.Second, Log: stderr}
	var port, tp, maxSeqs string
	switch kind {
	case sim.PersonalityATOM:
		cfg.Model, cfg.ProfilerDir = last(vals, "--model"), last(vals, "--torch-profiler-dir")
		port, tp, maxSeqs = last(vals, "--server-port"), last(vals, "-tp", "--tensor-parallel-size"), last(vals, "--max-num-seqs")
	case sim.PersonalityVLLM:
		if len(positional) > 0 {
			cfg.Model = positional[0]
		}
		cfg.Model = cmp.Or(last(vals, "--model"), cfg.Model)
		port, tp, maxSeqs = last(vals, "--port"), last(vals, "-tp", "--tensor-parallel-size"), last(vals, "--max-num-seqs")
		if os.Getenv(EraEnv) == "early-2026" {
			cfg.ProfilerDir = os.Getenv("VLLM_TORCH_PROFILER_DIR")
		} else if pc := last(vals, "--profiler-config"); pc != "" {
			var c struct {
				Profiler string `json:"profiler"`
				Dir      string `json:"torch_profiler_dir"`
			}
			if err := json.Unmarshal([]byte(pc), &c); err != nil {
				fmt.Fprintf(stderr, "vllm serve: error: argument --profiler-config: %v\n", err)
				return 2
			}
			if c.Profiler == "torch" {
				cfg.ProfilerDir = c.Dir
			}
		}
	case sim.PersonalitySGLang:
		cfg.Model, cfg.ProfilerDir = last(vals, "--model-path"), os.Getenv("SGLANG_TORCH_PROFILER_DIR")
		port, tp, maxSeqs = last(vals, "--port"), last(vals, "--tp", "--tp-size", "--tensor-parallel-size"), last(vals, "--max-running-requests")
	}
	var err error
	atoi := func(s string) int {
		n, e := strconv.Atoi(s)
		if e != nil && s != "" && err == nil {
			err = fmt.Errorf("%q is not a number", s)
		}
		return n
	}
	cfg.TP, cfg.MaxNumSeqs = atoi(tp), atoi(maxSeqs)
	if v := os.Getenv(TimeScaleEnv); v != "" {
		cfg.TimeScale, err = strconv.ParseFloat(v, 64)
	}
	for env, d := range map[string]*time.Duration{MetricsRefreshEnv: &cfg.MetricsRefresh, RankLagEnv: &cfg.RankExportLag} {
		if v := os.Getenv(env); v != "" && err == nil {
			*d, err = time.ParseDuration(v)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "stand-in:", err)
		return 2
	}
	srv, err := sim.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "stand-in:", err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+cmp.Or(port, "8000"))
	if err != nil {
		fmt.Fprintln(stderr, "stand-in:", err)
		return 1
	}
	fmt.Fprintf(stderr, "stand-in %s: serving %s on %s (profiler directory %q)\n", kind, cfg.Model, ln.Addr(), cfg.ProfilerDir)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Fprintln(stderr, "stand-in:", err)
		return 1
	}
	return 0
}
