package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/sim"
)

// The test binary doubles as the engine behind the stand-in executables:
// with helperEnv set it runs the simulated server (package sim) on the
// model and port that the engine's own command line names, instead of the
// tests. Its behaviour is steered through the environment the engine
// package passes on (Spec.Env):
const (
	helperEnv    = "ENGINE_TEST_HELPER"      // "serve": an engine; "idle": a process it spawned
	recordEnv    = "ENGINE_TEST_RECORD"      // directory for the helper's pids file
	servedEnv    = "ENGINE_TEST_SERVED"      // serve under this model name instead
	neverEnv     = "ENGINE_TEST_NEVER_READY" // /health never answers 200
	exitEnv      = "ENGINE_TEST_EXIT_EARLY"  // print this and exit 1 before listening
	childEnv     = "ENGINE_TEST_CHILD"       // spawn a worker: "term" dies on SIGTERM, "ignore-term" does not
	ignoreTermEv = "ENGINE_TEST_IGNORE_TERM" // set in the worker's own environment
	helpDirEnv   = "ENGINE_TEST_HELP_DIR"    // testdata/help, for the stand-in's --help
)

// standInVersion is the version a stand-in engine says it is.
const standInVersion = "9.9.9"

// helpFixture is each engine's --help as the stand-ins print it: the flags
// of its argument parser at the commit docs/engines.md names.
var helpFixture = map[Kind]string{ATOM: "atom-ffdf3bb.txt", VLLM: "vllm-0.27.1.txt", SGLang: "sglang-d315eb7.txt"}

// built is the profile-model binary that TestSimRealBinary builds once.
var built struct {
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	if os.Getenv(helpDirEnv) == "" {
		if dir, err := filepath.Abs(filepath.Join("testdata", "help")); err == nil {
			os.Setenv(helpDirEnv, dir) // the stand-ins inherit it
		}
	}
	switch os.Getenv(helperEnv) {
	case "serve":
		os.Exit(helperServe(os.Args[1:]))
	case "idle":
		if os.Getenv(ignoreTermEv) != "" {
			signal.Ignore(syscall.SIGTERM)
		}
		fmt.Println("worker: idle")
		// Tell the engine that the worker is set up (fd 3), so that a test
		// never stops it before it has printed or ignored SIGTERM.
		up := os.NewFile(3, "up")
		up.Write([]byte("up"))
		up.Close()
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	code := m.Run()
	if built.path != "" {
		os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(code)
}

// helperServe is a stand-in engine: it reads the model, port and profiler
// directory from whichever engine's command line it was given, prints to
// stdout and stderr, spawns a worker when asked, and serves until SIGTERM.
func helperServe(args []string) int {
	flagVal := func(name string) string {
		for i, a := range args {
			if a == name && i+1 < len(args) {
				return args[i+1]
			}
		}
		return ""
	}
	if code, ok := helperProbe(args); ok {
		return code
	}
	var model, port, prof string
	switch {
	case len(args) > 1 && args[0] == "-m" && args[1] == "atom.entrypoints.openai_server":
		model, port, prof = flagVal("--model"), flagVal("--server-port"), flagVal("--torch-profiler-dir")
	case len(args) > 1 && args[0] == "-m" && args[1] == "sglang.launch_server":
		model, port, prof = flagVal("--model-path"), flagVal("--port"), os.Getenv("SGLANG_TORCH_PROFILER_DIR")
	case len(args) > 1 && args[0] == "serve":
		var pc struct {
			Dir string `json:"torch_profiler_dir"`
		}
		if c := flagVal("--profiler-config"); c != "" {
			if err := json.Unmarshal([]byte(c), &pc); err != nil {
				fmt.Fprintln(os.Stderr, "helper: --profiler-config:", err)
				return 2
			}
		}
		model, port, prof = args[1], flagVal("--port"), pc.Dir
	case len(args) > 0 && args[0] == "serve-sim":
		model, port, prof = flagVal("--model"), flagVal("--server-port"), flagVal("--torch-profiler-dir")
	default:
		fmt.Fprintf(os.Stderr, "helper: no engine command line: %q\n", args)
		return 2
	}
	// An inherited socket is taken first, before the worker is spawned.
	ln, err := InheritedListener()
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	how := "inherited"
	fmt.Printf("helper: loading %s (stdout)\n", model)
	fmt.Fprintf(os.Stderr, "helper: port %s (stderr)\n", port)
	pids := []string{strconv.Itoa(os.Getpid())}
	if mode := os.Getenv(childEnv); mode != "" {
		w := exec.Command(os.Args[0])
		w.Env = append(os.Environ(), helperEnv+"=idle")
		if mode == "ignore-term" {
			w.Env = append(w.Env, ignoreTermEv+"=1")
		}
		w.Stdout, w.Stderr = os.Stdout, os.Stderr
		up, upW, err := os.Pipe()
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 1
		}
		w.ExtraFiles = []*os.File{upW}
		if err := w.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 1
		}
		upW.Close()
		io.ReadAll(up) // until the worker closes its end
		up.Close()
		pids = append(pids, strconv.Itoa(w.Process.Pid))
	}
	if dir := os.Getenv(recordEnv); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "pids"), []byte(strings.Join(pids, " ")), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 1
		}
	}
	if msg := os.Getenv(exitEnv); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
		return 1
	}
	if served := os.Getenv(servedEnv); served != "" {
		model = served
	}
	srv, err := sim.New(sim.Config{Model: model, ProfilerDir: prof, NeverReady: os.Getenv(neverEnv) != "",
		TimeScale: 1000, ShutdownGrace: time.Second, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	if ln == nil {
		if ln, err = net.Listen("tcp", "127.0.0.1:"+port); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 1
		}
		how = "bound"
	}
	fmt.Fprintf(os.Stderr, "helper: listening on %s (%s)\n", ln.Addr(), how)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "helper: stopped on SIGTERM")
	return 0
}

// helperProbe answers Identify's probes as the engines do: the version of
// the package (python -c …) or of vllm (--version), and the engine's
// --help from its fixture.
func helperProbe(args []string) (int, bool) {
	if len(args) == 0 {
		return 0, false
	}
	if args[0] == "-c" || args[0] == "--version" {
		fmt.Println(standInVersion)
		return 0, true
	}
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--help") }) {
		return 0, false
	}
	kind := VLLM
	if args[0] == "-m" && len(args) > 1 {
		kind = map[string]Kind{atomModule: ATOM, sglangModule: SGLang}[args[1]]
	}
	help, err := os.ReadFile(filepath.Join(os.Getenv(helpDirEnv), helpFixture[kind]))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2, true
	}
	os.Stdout.Write(help)
	return 0, true
}

// writeScript writes an executable script for a test to run. No process
// is forked while the file is open for writing: a child forked then (by
// a parallel test starting a process) holds the write descriptor until
// its own exec, and running the script in that moment fails with "text
// file busy", as it did on a loaded machine.
func writeScript(t *testing.T, path, script string) {
	t.Helper()
	syscall.ForkLock.RLock()
	err := os.WriteFile(path, []byte(script), 0o755)
	syscall.ForkLock.RUnlock()
	require.NoError(t, err)
}

// readHelp is kind's --help fixture.
func readHelp(t *testing.T, kind Kind) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "help", helpFixture[kind]))
	require.NoError(t, err)
	return string(b)
}
