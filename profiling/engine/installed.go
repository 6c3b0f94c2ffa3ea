package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Installed is what Identify read of the engine that is installed: its
// version, the commit of its checkout, and the flags its --help lists.
// Command checks every flag it passes against it and picks the spelling it
// knows where an engine renamed a flag.
type Installed struct {
	Kind    Kind
	Version string // the package version ("0.27.1"); "" when not read
	Commit  string // the checkout's commit when the working directory is a git checkout
	HelpCmd string // the command whose output listed the flags
	flags   map[string]bool
}

// NewInstalled is an engine of kind at version and commit whose --help
// printed help.
func NewInstalled(kind Kind, version, commit, help string) *Installed {
	return &Installed{Kind: kind, Version: version, Commit: commit, flags: ParseHelp(help)}
}

// String names the engine as the errors do: "vllm 0.27.1", "atom (commit
// ffdf3bb5d…)", "sglang 0.5.17 (commit …)".
func (in *Installed) String() string {
	s := string(in.Kind)
	if in.Version != "" {
		s += " " + in.Version
	}
	if in.Commit != "" {
		s += " (commit " + in.Commit + ")"
	}
	return s
}

// Has reports whether the engine's --help lists flag.
func (in *Installed) Has(flag string) bool { return in.flags[flag] }

// Flags are the flags the engine's --help lists, sorted.
func (in *Installed) Flags() []string {
	out := make([]string, 0, len(in.flags))
	for f := range in.flags {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// helpFlag finds option strings as argparse prints them: after a space,
// a comma, "[" or "|", up to a space, "=", ",", "]" or the end.
var helpFlag = regexp.MustCompile(`(?:^|[\s,\[|(])(--?[A-Za-z][A-Za-z0-9_.-]*)`)

// ParseHelp lists the option strings in an engine's --help output.
func ParseHelp(help string) map[string]bool {
	flags := map[string]bool{}
	for _, m := range helpFlag.FindAllStringSubmatch(help, -1) {
		flags[strings.TrimRight(m[1], ".")] = true
	}
	return flags
}

// probeTimeout bounds each probe command: --help imports the engine's
// Python packages (torch among them), which takes seconds to a minute.
const probeTimeout = 3 * time.Minute

// Probe is how Identify asks an engine who it is, run through the spec's
// executable in its working directory and environment. A stand-in for an
// engine in tests answers the same commands.
type Probe struct {
	Version []string   // prints the version on its last line
	Help    [][]string // print the flags; the first that exits 0 counts
}

// probeFor is each engine's probe:
//
//	atom    python3 -c 'import importlib.metadata as m; print(m.version("atom"))'
//	        python3 -m atom.entrypoints.openai_server --help
//	sglang  python3 -c 'import importlib.metadata as m; print(m.version("sglang"))'
//	        python3 -m sglang.launch_server --help
//	vllm    vllm --version
//	        vllm serve --help=all (vLLM since mid-2025 prints only the groups
//	        on --help), else vllm serve --help
func probeFor(k Kind) Probe {
	pkgVersion := func(pkg string) []string {
		return []string{"-c", `import importlib.metadata as m; print(m.version("` + pkg + `"))`}
	}
	switch k {
	case ATOM:
		return Probe{Version: pkgVersion("atom"), Help: [][]string{{"-m", atomModule, "--help"}}}
	case SGLang:
		return Probe{Version: pkgVersion("sglang"), Help: [][]string{{"-m", sglangModule, "--help"}}}
	case VLLM:
		return Probe{Version: []string{"--version"}, Help: [][]string{{"serve", "--help=all"}, {"serve", "--help"}}}
	}
	return Probe{}
}

// Identify reads, before the engine starts, which engine spec would run:
// its version (or its checkout's commit when spec.Dir is a git checkout)
// and the flags its --help lists. Nothing for the simulated engine and
// engine none (nil, nil). It fails when the help cannot be read, or
// neither a version nor a commit.
func Identify(ctx context.Context, spec Spec) (*Installed, error) {
	p := probeFor(spec.Kind)
	if p.Help == nil {
		return nil, nil
	}
	spec.Installed = nil
	cmd, err := spec.Command()
	if err != nil {
		return nil, err
	}
	in := &Installed{Kind: spec.Kind}
	out, verr := runProbe(ctx, cmd, p.Version)
	if errors.Is(verr, exec.ErrNotFound) || errors.Is(verr, fs.ErrNotExist) {
		return nil, fmt.Errorf("could not run %s (set the engine's executable, or PATH): %w", shellQuote(cmd.Path), verr)
	}
	if verr == nil {
		in.Version = lastLine(out)
	}
	if cmd.Dir != "" {
		in.Commit = gitCommit(ctx, cmd.Dir)
	}
	if in.Version == "" && in.Commit == "" {
		return nil, fmt.Errorf("cannot tell which %s is installed: %s: %v, and %s is no git checkout; install the engine's package, or run it from its checkout (the working directory)",
			spec.Kind, probeLine(cmd, p.Version), verr, orDefault(cmd.Dir, "the working directory"))
	}
	var herr error
	for _, args := range p.Help {
		out, err := runProbe(ctx, cmd, args)
		if err == nil {
			in.HelpCmd, in.flags = probeLine(cmd, args), ParseHelp(out)
			break
		}
		herr = errors.Join(herr, fmt.Errorf("%s: %w", probeLine(cmd, args), err))
	}
	if in.flags == nil {
		return nil, fmt.Errorf("reading the flags of %s: %w", in, herr)
	}
	if len(in.flags) == 0 {
		return nil, fmt.Errorf("%s printed no flags: is %s the %s engine?", in.HelpCmd, cmd.Path, spec.Kind)
	}
	return in, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// runProbe runs the engine's executable with args as the engine would run
// (its directory and environment) and returns what it printed.
func runProbe(ctx context.Context, cmd Command, args []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Path, args...)
	c.Dir, c.Env = cmd.Dir, cmd.environ
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Run(); err != nil {
		if msg := lastLine(errOut.String()); msg != "" {
			return "", fmt.Errorf("%w: %s", err, msg)
		}
		return "", err
	}
	return out.String(), nil
}

func probeLine(cmd Command, args []string) string {
	return Command{Path: cmd.Path, Args: args}.String()
}

// gitCommit is the commit checked out at dir, "" when dir is not the top
// of a git checkout (a directory inside some other repository says
// nothing about the engine).
func gitCommit(ctx context.Context, dir string) string {
	top, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--show-toplevel", "HEAD").Output()
	if err != nil {
		return ""
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return ""
	}
	if got, err := filepath.EvalSymlinks(f[0]); err != nil || got != top {
		return ""
	}
	return f[1]
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// checkFlags fails, naming the flags and the engine, when args (the
// engine's own, after its program words) hold a flag the installed engine
// does not list.
func (in *Installed) checkFlags(args []string) error {
	var unknown []string
	for _, a := range args {
		f, ok := flagOf(a)
		if !ok || in.knows(f) {
			continue
		}
		if !slices.Contains(unknown, f) {
			unknown = append(unknown, f)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	var hints []string
	for _, f := range unknown {
		if h := flagHints[f]; h != "" {
			hints = append(hints, f+": "+h)
		}
	}
	msg := fmt.Sprintf("%s does not know %s (%s lists no such flag): it would stop at start; remove the flag or install a release that has it",
		in, strings.Join(unknown, ", "), orDefault(in.HelpCmd, "its --help"))
	if len(hints) > 0 {
		msg += " (" + strings.Join(hints, "; ") + ")"
	}
	return errors.New(msg)
}

// flagHints say why a flag this tool passes may be missing.
var flagHints = map[string]string{
	"--profiler-config":    "vLLM has it since v0.13; older releases take the profiler directory from VLLM_TORCH_PROFILER_DIR, which this tool no longer sets",
	"--enable-metrics":     "SGLang serves /metrics only with it",
	"--tp":                 "SGLang's flag is --tp-size or --tensor-parallel-size; a bare --tp was only argparse's abbreviation of --tp-size",
	"--torch-profiler-dir": "ATOM writes no traces without it",
}

// knows reports whether the engine accepts flag as argparse parses it:
// as listed, as an attached short option (-O3), or as the unambiguous
// abbreviation of one long option; and as vLLM's parser rewrites it first
// (vllm/utils/argparse_utils.py): a dotted sub-key of a listed flag
// (--compilation-config.mode), underscores read as dashes.
func (in *Installed) knows(f string) bool {
	if !strings.HasPrefix(f, "--") {
		return in.flags[f] || len(f) > 2 && in.flags[f[:2]]
	}
	if i := strings.IndexByte(f, '.'); i > 0 {
		f = f[:i]
	}
	if in.Kind == VLLM {
		f = "--" + strings.ReplaceAll(f[2:], "_", "-")
	}
	if in.flags[f] {
		return true
	}
	n := 0
	for g := range in.flags {
		if strings.HasPrefix(g, f) {
			n++
		}
	}
	return n == 1
}

// flagOf is the option a command-line word names ("--x=1" → "--x"); not
// one for values, negative numbers among them.
func flagOf(a string) (string, bool) {
	if len(a) < 2 || a[0] != '-' || a == "--" {
		return "", false
	}
	if c := a[1]; c >= '0' && c <= '9' || c == '.' {
		return "", false
	}
	f, _, _ := strings.Cut(a, "=")
	return f, true
}
