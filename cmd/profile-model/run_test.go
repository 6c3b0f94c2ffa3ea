package main

import (
	"bytes"
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/bench"
)

// simArgs make run start this test binary as the simulated engine.
func simArgs(t *testing.T) []string {
	exe, err := os.Executable()
	require.NoError(t, err)
	return []string{"--engine", "sim", "--server-exe", exe, "--server-env", "PROFILE_MODEL_TEST_MAIN=1"}
}

func onlyDir(t *testing.T, parent string) string {
	t.Helper()
	entries, err := os.ReadDir(parent)
	require.NoError(t, err)
	require.Len(t, entries, 1, "one run directory")
	return filepath.Join(parent, entries[0].Name())
}

func TestRunSim(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	args := append([]string{"run", "--conc", "2,4", "--isl", "64", "--osl", "8", "--num-prompts-mul", "2",
		"--time-scale", "50", "--tokenizer", "none", "--out", out}, simArgs(t)...)
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), args, &stdout, &stderr), stderr.String())
	dir := onlyDir(t, out)
	r := results.Run(dir)
	require.True(t, strings.HasPrefix(filepath.Base(dir), "MiniMax-M2.5-"), dir)

	info, err := results.LoadRunInfo(r.RunInfo())
	require.NoError(t, err)
	require.Equal(t, "ok", info.Status)
	require.Equal(t, "sim", info.Engine.Kind)
	require.Contains(t, info.Engine.Command, "serve-sim --model MiniMaxAI/MiniMax-M2.5")
	require.Contains(t, info.Engine.Env, "KINETO_BUFFER_SIZE_MB=256")
	require.Len(t, info.Levels, 2)
	for i, conc := range []int{2, 4} {
		li := info.Levels[i]
		require.Equal(t, conc, li.Conc)
		require.Equal(t, "ok", li.Status)
		require.Equal(t, "AMD Instinct MI355X", li.Device)
		require.NotEmpty(t, li.Traces)
		require.False(t, filepath.IsAbs(li.Traces[0]), "trace paths are relative to the run directory")
		lv, err := results.LoadLevel(r.LevelResult(conc))
		require.NoError(t, err)
		require.Equal(t, conc*2, lv.Completed)
		require.Equal(t, li.DecodeBS, lv.DecodeBS)
		files := results.InDir(r.Level(conc), li.DecodeBS)
		for _, f := range []string{files.Layer, files.CompatLayer, files.Kernels, files.Categories} {
			require.FileExists(t, f)
		}
	}
	rows, err := results.LoadSummary(r.Summary())
	require.NoError(t, err)
	require.Len(t, rows, 2)
	bench, err := results.LoadBench(r.Bench())
	require.NoError(t, err)
	require.Len(t, bench, 2)
	// The report, from the run directory alone.
	readme, err := os.ReadFile(r.Readme())
	require.NoError(t, err)
	for _, section := range []string{"## Key observations", "## Throughput", "## Step-time reconciliation", "## Kernel inventory"} {
		require.Contains(t, string(readme), section)
	}
	for _, svg := range []string{"latency.svg", "throughput.svg", "throughput_tpot.svg", "layer_time.svg"} {
		require.FileExists(t, filepath.Join(dir, svg))
	}
	for _, conc := range []int{2, 4} {
		require.FileExists(t, r.LevelAnalysis(conc))
	}
	log, err := os.ReadFile(r.ServerLog())
	require.NoError(t, err)
	require.Contains(t, string(log), "serve-sim: serving")
	requireLayoutDocumented(t, dir)
}

// TestRunSimMarkTrace: an engine started with --mark-trace leaves capture
// traces beside the level's traces; the run's layer table and report name
// each position's module from them.
func TestRunSimMarkTrace(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	args := append([]string{"run", "--conc", "2", "--isl", "64", "--osl", "8", "--num-prompts-mul", "2",
		"--time-scale", "50", "--tokenizer", "none", "--out", out, "--server-arg", "--mark-trace"}, simArgs(t)...)
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), args, &stdout, &stderr), stderr.String())
	r := results.Run(onlyDir(t, out))
	info, err := results.LoadRunInfo(r.RunInfo())
	require.NoError(t, err)
	require.Len(t, info.Levels, 1)
	layer, err := os.ReadFile(results.InDir(r.Level(2), info.Levels[0].DecodeBS).Layer)
	require.NoError(t, err)
	header, rows, _ := strings.Cut(string(layer), "\n")
	// The sim's model config is known: the roofline columns come last.
	require.True(t, strings.HasSuffix(header, ",module,op,input_dims,input_types,role,achieved_tbs,achieved_tflops,intensity,bound,pct_roofline"), header)
	require.Contains(t, rows, "model.layers.*.")
	readme, err := os.ReadFile(r.Readme())
	require.NoError(t, err)
	require.Contains(t, string(readme), "| module |")
	// Without --config the simulated engine's own model config describes
	// the architecture, and the roofline has what it needs.
	require.Equal(t, "config.json", info.ModelConfig)
	require.Contains(t, string(readme), "| Type | MoE: 256 experts, top-8")
	require.Contains(t, string(readme), "| pos | position | time (µs) | TFLOP/s |")
}

// requireLayoutDocumented checks that the documented run-directory layout
// names every file the run wrote (numbers stand for {N} or {bs}; the
// traces keep the engine's names).
func requireLayoutDocumented(t *testing.T, dir string) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "run-directory.md"))
	require.NoError(t, err)
	_, block, ok := strings.Cut(string(readme), "## Run directory\n\n```\n")
	require.True(t, ok, "docs/run-directory.md has a run-directory layout")
	block, _, _ = strings.Cut(block, "```")
	digits := regexp.MustCompile(`[0-9]+|\{N\}|\{bs\}`)
	documented := digits.ReplaceAllString(block, "#")
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if strings.HasPrefix(rel, "traces"+string(filepath.Separator)) {
			require.Contains(t, block, "traces/rank_*/", rel)
			return nil
		}
		require.Contains(t, documented, digits.ReplaceAllString(filepath.Base(rel), "#"), "docs/run-directory.md's layout does not name %s", rel)
		return nil
	})
	require.NoError(t, err)
}

func TestRunEngineNeverReady(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	args := append([]string{"run", "--conc", "2", "--out", out, "--ready-timeout", "1s", "--server-arg", "--never-ready"}, simArgs(t)...)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, &stdout, &stderr)
	require.Error(t, err)
	require.Contains(t, err.Error(), "serve-sim", "the log's last lines are in the error")
	dir := onlyDir(t, out)
	info, lerr := results.LoadRunInfo(results.Run(dir).RunInfo())
	require.NoError(t, lerr)
	require.Equal(t, "failed", info.Status)
	require.NotEmpty(t, info.Error)
	require.NoFileExists(t, results.Run(dir).Summary())
}

func TestRunUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"none without url", []string{"--engine", "none", "--model", "m"}, "--engine none attaches to a running server"},
		{"atom without model", []string{"--engine", "atom"}, "--model is required"},
		{"unknown engine", []string{"--engine", "tgi"}, "tgi"},
		{"time scale on atom", []string{"--engine", "atom", "--model", "m", "--time-scale", "10"}, "--time-scale applies to --engine sim only"},
		{"bad capture sizes", []string{"--engine", "sim", "--cudagraph-capture-sizes", "[1,x]"}, "--cudagraph-capture-sizes"},
		{"every capture size above max seqs", []string{"--engine", "atom", "--model", "m", "--max-num-seqs", "16", "--cudagraph-capture-sizes", "[32,64]"}, `no capture size left); pass --cudagraph-capture-sizes "[16]"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			err := run(context.Background(), append(append([]string{"run"}, tt.args...), "--out", out), &bytes.Buffer{}, &bytes.Buffer{})
			require.ErrorContains(t, err, tt.want)
			entries, _ := os.ReadDir(out)
			require.Empty(t, entries, "nothing created before the checks pass")
		})
	}
}

// docs/engines.md lists every failure kind the client counts, in its order.
func TestDocumentedFailureKinds(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "engines.md"))
	require.NoError(t, err)
	m := regexp.MustCompile(`Failures are counted by kind \(([^)]+)\)`).FindSubmatch(readme)
	require.NotNil(t, m, "docs/engines.md lists the failure kinds")
	var want []string
	for _, k := range bench.FailureKinds {
		want = append(want, string(k))
	}
	require.Equal(t, strings.Join(want, ", "), strings.Join(strings.Fields(string(m[1])), " "))
}

// atomStandIn is an executable that answers as an installed ATOM would:
// its package version, and on --help the flags ATOM's parser defines at
// ffdf3bb (the engine package's fixture); started as the ATOM server, it
// is this test binary as serve-sim, which takes ATOM's flags.
func atomStandIn(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	help, err := filepath.Abs(filepath.Join("..", "..", "profiling", "engine", "testdata", "help", "atom-ffdf3bb.txt"))
	require.NoError(t, err)
	require.FileExists(t, help)
	stand := filepath.Join(t.TempDir(), "python3")
	script := "#!/bin/sh\n" +
		"if [ \"$1\" = -c ]; then echo 0.1.6; exit 0; fi\n" +
		"for a in \"$@\"; do if [ \"$a\" = --help ]; then exec cat '" + help + "'; fi; done\n" +
		"shift 2\n" +
		"PROFILE_MODEL_TEST_MAIN=1 exec '" + exe + "' serve-sim \"$@\"\n"
	require.NoError(t, os.WriteFile(stand, []byte(script), 0o755))
	return stand
}

// TestRunATOMCommandLine runs a sweep through ATOM's own command line: the
// installed engine is identified before the start, every flag checked
// against its --help, and run.json records its version.
func TestRunATOMCommandLine(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	stand := atomStandIn(t)
	// A port the stand-in binds as ATOM does (it may be taken meanwhile: then skip).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	args := []string{"run", "--engine", "atom", "--model", "MiniMaxAI/MiniMax-M2.5", "--server-exe", stand, "--port", port,
		"--max-num-seqs", "4", "--conc", "2", "--isl", "64", "--osl", "4", "--num-prompts-mul", "1", "--tokenizer", "none", "--out", out}
	var stdout, stderr bytes.Buffer
	err = run(context.Background(), args, &stdout, &stderr)
	if err != nil && strings.Contains(err.Error(), "is taken") {
		t.Skipf("no free port for the stand-in engine: %v", err)
	}
	require.NoError(t, err, stderr.String())
	require.Contains(t, stderr.String(), "atom 0.1.6: every flag checked against "+stand+" -m atom.entrypoints.openai_server --help")
	// ATOM drops the default capture sizes above --max-num-seqs: said, not refused.
	require.Contains(t, stderr.String(), "ATOM drops the larger sizes with a warning and captures [1,2,4]")
	info, err := results.LoadRunInfo(results.Run(onlyDir(t, out)).RunInfo())
	require.NoError(t, err)
	require.Equal(t, "ok", info.Status)
	require.Equal(t, "0.1.6", info.Engine.Version)
	require.Contains(t, info.Engine.Env, "USE_ATOMESH_ENTRYPOINTS=0")
	require.Contains(t, info.Engine.Command, "-m atom.entrypoints.openai_server --model MiniMaxAI/MiniMax-M2.5 --kv_cache_dtype fp8")

	// A flag ATOM does not know stops the run before the engine starts.
	out2 := t.TempDir()
	err = run(context.Background(), append(args[:len(args)-1:len(args)-1], out2, "--server-arg", "--time-scale", "--server-arg", "50"), &bytes.Buffer{}, &bytes.Buffer{})
	require.ErrorContains(t, err, "atom 0.1.6 does not know --time-scale")
	require.NoFileExists(t, filepath.Join(onlyDir(t, out2), "server.log"))
}
