package profiling

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/engine"
)

// TestSweepDeclarations checks the declared sweeps: every one loads and
// maps to an engine that passes its own checks; the ones the issue of
// this harness asks for are there; each simulated sweep has a golden for
// every level.
func TestSweepDeclarations(t *testing.T) {
	t.Parallel()
	sweeps := loadSweeps(t, declaredSweeps)
	byName := map[string]*Sweep{}
	kinds := map[engine.Kind]int{}
	for _, s := range sweeps {
		byName[s.Name] = s
		kinds[s.Kind()]++
		spec, err := s.EngineSpec(SweepOptions{Corpus: "CORPUS"})
		require.NoError(t, err, s.Name)
		require.Equal(t, s.Model, spec.Model)
		if s.Kind() == engine.Sim {
			bss, err := GoldenBatchSizes(s.GoldenDir())
			require.NoError(t, err, "sweep %s: its goldens (run go test ./profiling -run TestSimSweeps -update)", s.Name)
			require.Equal(t, s.Concurrencies, bss, "sweep %s: one golden per level, keyed by the level's decode batch size", s.Name)
		}
	}
	require.GreaterOrEqual(t, kinds[engine.Sim], 2, "two simulated sweeps")
	for _, k := range []engine.Kind{engine.ATOM, engine.VLLM, engine.SGLang} {
		require.GreaterOrEqual(t, kinds[k], 1, "a sweep on %s", k)
	}
	require.True(t, slices.ContainsFunc(sweeps, (*Sweep).NeedsCorpus), "a simulated sweep driven by the corpus's per-layer tables")

	// The real sweep the corpus was recorded with.
	atom := byName["atom-minimax-m2.5-mi355x"]
	require.NotNil(t, atom)
	spec, err := atom.EngineSpec(SweepOptions{})
	require.NoError(t, err)
	cmd, err := spec.Command()
	require.NoError(t, err)
	require.Equal(t, []string{"-m", "atom.entrypoints.openai_server", "--model", "MiniMaxAI/MiniMax-M2.5", "--kv_cache_dtype", "fp8", "-tp", "1",
		"--server-port", "8000", "--max-num-seqs", "64", "--level", "3", "--cudagraph-capture-sizes", "[1,2,4,8,16,32,48,64]", "--trust-remote-code"}, cmd.Args)
	require.Equal(t, "AMD Instinct MI355X", atom.GPU)
	cfg := atom.SweepConfig(SweepOptions{})
	require.Equal(t, []int{4, 8, 16, 32}, cfg.Concurrencies)
	require.Equal(t, [2]int{1024, 50}, [2]int{cfg.ISL, cfg.OSL})
	require.Equal(t, DefaultTolerance, atom.Tolerance)
	plan, err := atom.Plan(t.TempDir(), SweepOptions{})
	require.NoError(t, err)
	require.FileExists(t, plan.ModelConfig, "the model's config.json checks the layer count of every table")
}

func TestSweepCorpusPaths(t *testing.T) {
	t.Parallel()
	s := sweepNamed(t, "sim-atom-corpus-tables")
	_, err := s.EngineSpec(SweepOptions{})
	require.ErrorContains(t, err, "reads the reference corpus, which is not here")
	spec, err := s.EngineSpec(SweepOptions{Corpus: "/c"})
	require.NoError(t, err)
	i := slices.Index(spec.ExtraArgs, "--kernels")
	require.GreaterOrEqual(t, i, 0, "%v", spec.ExtraArgs)
	require.Equal(t, "/c/atom-minimax-m2.5/conc4_layer.csv,/c/atom-minimax-m2.5/conc8_layer.csv,/c/atom-minimax-m2.5/conc16_layer.csv,/c/atom-minimax-m2.5/conc32_layer.csv",
		spec.ExtraArgs[i+1])
}

// TestSimKernelsArgs covers the three kinds of kernel-table path that
// sweep declarations and plans share.
func TestSimKernelsArgs(t *testing.T) {
	t.Parallel()
	rel := func(p string) string { return filepath.Join("decl", p) }
	require.Nil(t, SimKernelsArgs(nil, "/c", rel), "no tables, no flag")
	tables := []string{CorpusPrefix + "a/conc4_layer.csv", "t.csv"}
	require.Equal(t, []string{"--kernels", "/c/a/conc4_layer.csv,decl/t.csv"}, SimKernelsArgs(tables, "/c", rel))
	require.Equal(t, []string{"--kernels", "corpus:a/conc4_layer.csv,decl/t.csv"}, SimKernelsArgs(tables, "", rel),
		"without a corpus a corpus: path stays as it is")
}

// TestParseSweep covers the declaration format's checks: each bad file
// fails with a message that names the file and the field.
func TestParseSweep(t *testing.T) {
	t.Parallel()
	const ok = `{"name": "x", "engine": "sim", "model": "m", "isl": 64, "osl": 8, "concurrencies": [2, 4], "num_prompts_mul": 2, "golden": "g"}`
	edit := func(old, new string) string { return strings.Replace(ok, old, new, 1) }
	cases := []struct {
		name, file, json string
		want             string // "" for no error
	}{
		{name: "minimal", json: ok},
		{name: "unknown field", json: edit(`"isl"`, `"input_len": 3, "isl"`), want: `unknown object member name "input_len"`},
		{name: "name not the file's", file: "y.json", json: ok, want: `name "x": must be the file's base name "y"`},
		{name: "unknown engine", json: edit(`"sim"`, `"trt"`), want: `unknown engine "trt"`},
		{name: "engine none", json: edit(`"sim"`, `"none"`), want: "engine none attaches"},
		{name: "no model", json: edit(`"m"`, `""`), want: "no model"},
		{name: "levels out of order", json: edit(`[2, 4]`, `[4, 2]`), want: "in increasing order"},
		{name: "levels twice", json: edit(`[2, 4]`, `[2, 2]`), want: "in increasing order"},
		{name: "no levels", json: edit(`[2, 4]`, `[]`), want: "no concurrencies"},
		{name: "no prompts", json: edit(`"num_prompts_mul": 2`, `"num_prompts_mul": 0`), want: "num_prompts_mul 0"},
		{name: "sim kernels on a real engine", json: edit(`"sim"`, `"vllm", "sim_kernels": ["a.csv"]`), want: "for engine sim only"},
		{name: "gpu on the simulator", json: edit(`"sim"`, `"sim", "gpu": "AMD Instinct MI355X"`), want: "the simulated engine needs none"},
		{name: "negative tolerance", json: edit(`"golden"`, `"tolerance": {"rel": -1, "abs_us": 2}, "golden"`), want: "must not be negative"},
		{name: "capture-size trap", json: edit(`"sim"`, `"sim", "max_num_seqs": 4, "cudagraph_capture_sizes": [8]`), want: "ATOM fails at start"},
		{name: "not JSON", json: `name: x`, want: "x.json: jsontext: invalid character"},
		{name: "model config not there", json: edit(`"golden"`, `"model_config": "no/config.json", "golden"`), want: "model_config: stat decl/no/config.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("decl", "x.json")
			if tc.file != "" {
				path = filepath.Join("decl", tc.file)
			}
			s, err := ParseSweep([]byte(tc.json), path)
			if tc.want == "" {
				require.NoError(t, err)
				require.Equal(t, DefaultTolerance, s.Tolerance, "the default tolerance")
				require.Equal(t, filepath.Join("decl", "g"), s.GoldenDir(), "relative to the declaration")
				return
			}
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, path)
		})
	}
}

func TestLoadSweepsErrors(t *testing.T) {
	t.Parallel()
	_, err := LoadSweeps(t.TempDir())
	require.ErrorContains(t, err, "no sweep declarations")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.json"), []byte(`{"name": "a"}`), 0o644))
	_, err = LoadSweeps(dir)
	require.ErrorContains(t, err, "a.json")
	require.ErrorContains(t, err, "no model")
}

func TestTolerance(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name             string
		golden, measured float64
		ok               bool
	}{
		{"equal", 50, 50, true},
		{"14% slower", 100, 114, true},
		{"16% slower", 100, 116, false},
		{"16% faster", 100, 84, false},
		{"small kernel: 2 µs beats 15%", 5, 6.9, true},
		{"small kernel: past 2 µs", 5, 7.1, false},
		{"zero golden", 0, 1.9, true},
	}
	for _, tc := range cases {
		require.Equal(t, tc.ok, DefaultTolerance.Allows(tc.golden, tc.measured), tc.name)
	}
}
