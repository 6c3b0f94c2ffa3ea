package profiling

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/engine"
	"github.com/profile-model/profile-model/profiling/engine/enginetest"
)

var (
	update    = flag.Bool("update", false, "rewrite the golden CSVs of the sweeps that run (fixtures/golden/) from their runs; read the diff before committing")
	sweepsDir = flag.String("sweeps", declaredSweeps, "`DIR` of the sweep declarations that TestSimSweeps, TestGPUSweeps and BenchmarkSweep run")
)

// declaredSweeps holds the project's sweep declarations.
const declaredSweeps = "../fixtures/sweeps"

// KeepRunsVar names a directory that keeps the run directory of every
// sweep the tests run, as DIR/<sweep>/run<k> (k counting go test -count's
// repeats): what a CI job uploads and profile-model merge reads. Unset:
// temporary directories, removed after the test.
const KeepRunsVar = "PROFILE_MODEL_KEEP_RUNS"

// runDirOf is where a run of the sweep goes: the next free
// $PROFILE_MODEL_KEEP_RUNS/<sweep>/run<k>, else a temporary directory.
func runDirOf(tb testing.TB, s *Sweep) string {
	tb.Helper()
	root := os.Getenv(KeepRunsVar)
	if root == "" {
		return filepath.Join(tb.TempDir(), "run")
	}
	for k := 1; ; k++ {
		dir := filepath.Join(root, s.Name, fmt.Sprintf("run%d", k))
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return dir
		}
	}
}

// RequireGPUVar, set to 1 on a GPU runner, turns every skip of a real
// sweep for want of an engine, a GPU or weights into a failure.
const RequireGPUVar = "PROFILE_MODEL_REQUIRE_GPU"

// profileModel is the profile-model binary the simulated engine runs as,
// built once per test binary on first use.
var profileModel struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	// Started as an engine's stand-in (enginetest.KindEnv), the test
	// binary is that engine instead of the tests.
	if code, ok := enginetest.Main(); ok {
		os.Exit(code)
	}
	flag.Parse()
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		// Benchmark output says which units are better higher, as a run's
		// bench.txt does, so benchstat labels throughput the right way.
		if err := results.WriteBench(os.Stdout, nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if profileModel.dir != "" {
		os.RemoveAll(profileModel.dir)
	}
	os.Exit(code)
}

func profileModelExe(tb testing.TB) string {
	tb.Helper()
	profileModel.once.Do(func() {
		dir, err := os.MkdirTemp("", "profile-model-bin")
		if err != nil {
			profileModel.err = err
			return
		}
		profileModel.dir = dir
		exe := filepath.Join(dir, "profile-model")
		// go test puts its own go first on PATH.
		out, err := exec.Command("go", "build", "-o", exe, "../cmd/profile-model").CombinedOutput()
		if err != nil {
			profileModel.err = fmt.Errorf("go build ../cmd/profile-model: %v\n%s", err, out)
			return
		}
		profileModel.path = exe
	})
	if profileModel.err != nil {
		tb.Fatalf("building the simulated engine's binary: %v", profileModel.err)
	}
	return profileModel.path
}

// loadSweeps reads the declarations of dir.
func loadSweeps(tb testing.TB, dir string) []*Sweep {
	tb.Helper()
	sweeps, err := LoadSweeps(dir)
	require.NoError(tb, err)
	return sweeps
}

// sweepNamed is one of the project's declared sweeps.
func sweepNamed(tb testing.TB, name string) *Sweep {
	tb.Helper()
	for _, s := range loadSweeps(tb, declaredSweeps) {
		if s.Name == name {
			return s
		}
	}
	tb.Fatalf("no sweep %s in %s", name, declaredSweeps)
	return nil
}

// freePort asks the kernel for a free loopback port.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// portLost tells whether an engine failed to start because its port was
// taken between the choice of a free port and the start.
func portLost(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "is taken: another process listens on it") || strings.Contains(msg, "cannot listen on")
}

// engineExeVars name the executables of the real engines on a runner.
var engineExeVars = map[engine.Kind]string{
	engine.ATOM: "PROFILE_MODEL_ATOM_EXE", engine.VLLM: "PROFILE_MODEL_VLLM_EXE", engine.SGLang: "PROFILE_MODEL_SGLANG_EXE",
}

// sweepOptions is where this machine keeps what the sweep needs: the
// binary the simulated engine runs as, a free port for a real engine, the corpus (skipping
// when a sweep needs it and it is absent), a real engine's executable.
func sweepOptions(tb testing.TB, s *Sweep, concs []int) SweepOptions {
	tb.Helper()
	o := SweepOptions{Concurrencies: concs}
	if s.NeedsCorpus() {
		o.Corpus = corpus.Dir(tb)
	}
	if s.Kind() == engine.Sim {
		o.Exe = profileModelExe(tb)
	} else {
		o.Exe = os.Getenv(engineExeVars[s.Kind()])
	}
	if s.Kind() != engine.Sim {
		o.Port = freePort(tb) // the simulated engine gets a port held from the start
	}
	return o
}

// runSweep runs the sweep (only concs when given) through Run into a
// temporary directory and fails the test on any error, with the run's log.
func runSweep(tb testing.TB, s *Sweep, o SweepOptions) *Result {
	tb.Helper()
	var res *Result
	var err error
	var log bytes.Buffer
	var plan Plan
	runDir := runDirOf(tb, s)
	for try := 1; ; try++ {
		require.NoError(tb, os.RemoveAll(runDir)) // a try that lost its port
		plan, err = s.Plan(runDir, o)
		require.NoError(tb, err)
		log.Reset()
		plan.Log, plan.Sweep.Log = &log, &log
		res, err = Run(context.Background(), plan)
		if err == nil || try == 3 || !portLost(err) {
			break
		}
		// The free port found before the start was taken meanwhile (by
		// another test's connection): start again on another one.
		tb.Logf("sweep %s: %v; retrying on another port", s.Name, err)
		o.Port = freePort(tb)
	}
	require.NoError(tb, err, "sweep %s failed; its log:\n%s", s.Name, log.String())
	require.Equal(tb, "ok", res.Info.Status)
	require.Len(tb, res.Info.Levels, len(plan.Sweep.Concurrencies), "one analysed level per concurrency")
	return res
}

// checkGoldens compares every level of a run with the sweep's goldens, or
// with -update rewrites them (and removes goldens of batch sizes the run
// no longer has, when it ran every declared level).
func checkGoldens(t *testing.T, s *Sweep, res *Result) {
	t.Helper()
	dir := s.GoldenDir()
	var ran []int
	for _, li := range res.Info.Levels {
		require.Equal(t, "ok", li.Status, "level %d", li.Conc)
		require.Positive(t, li.DecodeBS, "level %d: no decode batch size read from its trace", li.Conc)
		levelDir := filepath.Join(res.Dir, li.Dir)
		ran = append(ran, li.DecodeBS)
		if *update {
			wrote, err := WriteGolden(dir, levelDir, li.DecodeBS)
			require.NoError(t, err)
			t.Logf("level %d: wrote %s", li.Conc, strings.Join(wrote, ", "))
			continue
		}
		ms, err := CompareLevel(dir, levelDir, li.DecodeBS, s.Tolerance)
		if errors.Is(err, fs.ErrNotExist) {
			have, _ := GoldenBatchSizes(dir)
			if len(have) == 0 {
				t.Errorf("%s holds no goldens yet: record them where the sweep runs with go test ./profiling -run '%s' -update (-tags gpu for a real engine), read them and commit them",
					dir, t.Name())
				return
			}
			t.Errorf("level %d ran at decode batch size %d, and %s has no golden for it (it has batch sizes %v): "+
				"a server that never reached the concurrency needs more prompts per level or a larger max_num_seqs; "+
				"if the sweep changed on purpose, rewrite the goldens with go test ./profiling -run '%s' -update and read the diff",
				li.Conc, li.DecodeBS, dir, have, t.Name())
			continue
		}
		require.NoError(t, err)
		if len(ms) > 0 {
			var b strings.Builder
			FormatMismatches(&b, ms)
			t.Errorf("level %d (decode batch size %d) differs from the goldens in %s (tolerance %s):\n%s"+
				"If the change is intended, rewrite them with go test ./profiling -run '%s' -update and read the diff before committing.",
				li.Conc, li.DecodeBS, dir, s.Tolerance, b.String(), t.Name())
		}
	}
	have, err := GoldenBatchSizes(dir)
	if err != nil {
		return // reported per level above
	}
	for _, bs := range have {
		if slices.Contains(ran, bs) {
			continue
		}
		if *update {
			for _, f := range GoldenFiles(dir, bs) {
				require.NoError(t, os.Remove(f))
			}
			t.Logf("removed the goldens of batch size %d, which no level ran", bs)
			continue
		}
		t.Errorf("%s has goldens for decode batch size %d, which no level ran (levels ran at %v)", dir, bs, ran)
	}
}

// TestSimSweeps runs every sweep declared on the simulated engine through
// Run and checks each level against its goldens: the golden regression
// check of CI, seconds per sweep.
func TestSimSweeps(t *testing.T) {
	for _, s := range loadSweeps(t, *sweepsDir) {
		if s.Kind() != engine.Sim {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			res := runSweep(t, s, sweepOptions(t, s, nil))
			for _, li := range res.Info.Levels {
				require.Equal(t, "AMD Instinct MI355X", li.Device, "the simulated engine's traces name its device")
			}
			checkGoldens(t, s, res)
		})
	}
}

func requireGPU() bool { return os.Getenv(RequireGPUVar) == "1" }

// skipGPU skips a real sweep, or fails it on a GPU runner.
func skipGPU(t testing.TB, format string, a ...any) {
	t.Helper()
	if requireGPU() {
		t.Fatalf(format+" (failing: %s=1 requires every real sweep to run)", append(a, RequireGPUVar)...)
	}
	t.Skipf(format, a...)
}

// realSweepReady skips (or fails, on a GPU runner) a real sweep this
// machine cannot run, naming what is missing.
func realSweepReady(t testing.TB, s *Sweep, o SweepOptions) {
	t.Helper()
	spec, err := s.EngineSpec(o)
	require.NoError(t, err)
	if missing := s.Missing(context.Background(), spec); len(missing) > 0 {
		skipGPU(t, "sweep %s needs what this machine lacks:\n  %s", s.Name, strings.Join(missing, "\n  "))
	}
}

// levelOf finds a level of a run.
func levelOf(t testing.TB, res *Result, conc int) results.LevelInfo {
	t.Helper()
	for _, li := range res.Info.Levels {
		if li.Conc == conc {
			return li
		}
	}
	t.Fatalf("no level %d in %s", conc, res.Dir)
	return results.LevelInfo{}
}
