package engine

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

func TestCommand(t *testing.T) {
	t.Parallel()
	base := []string{"PATH=/usr/bin", "HOME=/home/u", "PWD=/elsewhere"}
	tests := []struct {
		name string
		spec Spec
		want Command
	}{{
		name: "atom defaults: fp8 KV cache, TP 1, port 8000, profiler dir by flag, Atomesh off, Kineto file",
		spec: Spec{Kind: ATOM, Model: "MiniMaxAI/MiniMax-M2.5", ProfilerDir: "/traces"},
		want: Command{Path: "python3", Args: []string{"-m", "atom.entrypoints.openai_server",
			"--model", "MiniMaxAI/MiniMax-M2.5", "--kv_cache_dtype", "fp8", "-tp", "1",
			"--torch-profiler-dir", "/traces", "--server-port", "8000"},
			Env: []string{"KINETO_BUFFER_SIZE_MB=256", "KINETO_CONFIG=/traces/kineto.conf", "OMP_NUM_THREADS=1", "USE_ATOMESH_ENTRYPOINTS=0"}},
	}, {
		name: "atom with every option",
		spec: Spec{Kind: ATOM, Model: "m", TP: 8, Port: 9001, KVCacheDType: "bf16", MaxNumSeqs: 64,
			MaxModelLen: 4096, Level: new(0), EnforceEager: true, CaptureSizes: []int{1, 2, 4, 64},
			TrustRemoteCode: true, ExtraArgs: []string{"--gpu-memory-utilization", "0.85"},
			Dir: "/src/ATOM", Exe: "/opt/venv/bin/python", ProfilerDir: "/traces",
			Env: map[string]string{"OMP_NUM_THREADS": "4", "HIP_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}},
		want: Command{Path: "/opt/venv/bin/python", Dir: "/src/ATOM", Args: []string{"-m", "atom.entrypoints.openai_server",
			"--model", "m", "--kv_cache_dtype", "bf16", "-tp", "8", "--torch-profiler-dir", "/traces",
			"--server-port", "9001", "--max-num-seqs", "64", "--max-model-len", "4096", "--level", "0",
			"--enforce-eager", "--cudagraph-capture-sizes", "[1,2,4,64]", "--trust-remote-code",
			"--gpu-memory-utilization", "0.85"},
			Env: []string{"HIP_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", "KINETO_BUFFER_SIZE_MB=256", "KINETO_CONFIG=/traces/kineto.conf", "OMP_NUM_THREADS=4", "USE_ATOMESH_ENTRYPOINTS=0"}},
	}, {
		name: "atom without profiler: no --torch-profiler-dir, no Kineto file",
		spec: Spec{Kind: ATOM, Model: "m"},
		want: Command{Path: "python3", Args: []string{"-m", "atom.entrypoints.openai_server",
			"--model", "m", "--kv_cache_dtype", "fp8", "-tp", "1", "--server-port", "8000"},
			Env: []string{"KINETO_BUFFER_SIZE_MB=256", "OMP_NUM_THREADS=1", "USE_ATOMESH_ENTRYPOINTS=0"}},
	}, {
		name: "vllm: model positional, profiler by --profiler-config (stacks and shapes off), engine's own KV default",
		spec: Spec{Kind: VLLM, Model: "Qwen/Qwen3-8B", TP: 2, Port: 8100, ProfilerDir: "/traces"},
		want: Command{Path: "vllm", Args: []string{"serve", "Qwen/Qwen3-8B", "--port", "8100", "--tensor-parallel-size", "2",
			"--profiler-config", `{"profiler":"torch","torch_profiler_dir":"/traces","torch_profiler_with_stack":false,"torch_profiler_record_shapes":false}`},
			Env: []string{"KINETO_BUFFER_SIZE_MB=256", "KINETO_CONFIG=/traces/kineto.conf", "OMP_NUM_THREADS=1"}},
	}, {
		name: "vllm: mode and capture sizes share one --compilation-config (-O is its alias)",
		spec: Spec{Kind: VLLM, Model: "m", KVCacheDType: "fp8", MaxNumSeqs: 32, MaxModelLen: 8192,
			Level: new(3), EnforceEager: true, CaptureSizes: []int{1, 8, 32}, TrustRemoteCode: true, ExtraArgs: []string{"--seed", "0"}},
		want: Command{Path: "vllm", Args: []string{"serve", "m", "--port", "8000", "--tensor-parallel-size", "1",
			"--kv-cache-dtype", "fp8", "--max-num-seqs", "32", "--max-model-len", "8192", "--enforce-eager",
			"--compilation-config", `{"mode":3,"cudagraph_capture_sizes":[1,8,32]}`, "--trust-remote-code", "--seed", "0"},
			Env: []string{"KINETO_BUFFER_SIZE_MB=256", "OMP_NUM_THREADS=1"}},
	}, {
		name: "vllm: level alone is the compilation mode",
		spec: Spec{Kind: VLLM, Model: "m", Level: new(0)},
		want: Command{Path: "vllm", Args: []string{"serve", "m", "--port", "8000", "--tensor-parallel-size", "1",
			"--compilation-config", `{"mode":0}`},
			Env: []string{"KINETO_BUFFER_SIZE_MB=256", "OMP_NUM_THREADS=1"}},
	}, {
		name: "sglang: its own names; capture sizes as separate arguments; metrics on; stacks and shapes off",
		spec: Spec{Kind: SGLang, Model: "deepseek-ai/DeepSeek-V3", TP: 8, Port: 30000, KVCacheDType: "fp8_e4m3",
			MaxNumSeqs: 128, MaxModelLen: 16384, CaptureSizes: []int{1, 2, 4, 128}, Level: new(3),
			TrustRemoteCode: true, ProfilerDir: "/traces"},
		want: Command{Path: "python3", Args: []string{"-m", "sglang.launch_server", "--model-path", "deepseek-ai/DeepSeek-V3",
			"--port", "30000", "--tensor-parallel-size", "8", "--kv-cache-dtype", "fp8_e4m3", "--max-running-requests", "128",
			"--context-length", "16384", "--cuda-graph-bs-decode", "1", "2", "4", "128", "--enable-torch-compile", "--trust-remote-code",
			"--enable-metrics"},
			Env: []string{"KINETO_BUFFER_SIZE_MB=256", "KINETO_CONFIG=/traces/kineto.conf", "OMP_NUM_THREADS=1",
				"SGLANG_PROFILE_RECORD_SHAPES=false", "SGLANG_PROFILE_WITH_STACK=false", "SGLANG_TORCH_PROFILER_DIR=/traces"}},
	}, {
		name: "sglang: eager disables decode and prefill graphs; level 0 adds nothing; fp8 is fp8_e4m3",
		spec: Spec{Kind: SGLang, Model: "m", EnforceEager: true, Level: new(0), KVCacheDType: "fp8"},
		want: Command{Path: "python3", Args: []string{"-m", "sglang.launch_server", "--model-path", "m",
			"--port", "8000", "--tensor-parallel-size", "1", "--kv-cache-dtype", "fp8_e4m3",
			"--cuda-graph-backend-decode", "disabled", "--cuda-graph-backend-prefill", "disabled", "--enable-metrics"},
			Env: []string{"KINETO_BUFFER_SIZE_MB=256", "OMP_NUM_THREADS=1"}},
	}, {
		name: "sim: serve-sim with ATOM's flags it uses, and the time scale",
		spec: Spec{Kind: Sim, Model: "MiniMaxAI/MiniMax-M2.5", Port: 8001, Exe: "/bin/profile-model", ProfilerDir: "/traces",
			MaxNumSeqs: 16, CaptureSizes: []int{1, 2, 4, 8, 16}, EnforceEager: true, TimeScale: 20, ExtraArgs: []string{"--seed", "7"}},
		want: Command{Path: "/bin/profile-model", Args: []string{"serve-sim", "--model", "MiniMaxAI/MiniMax-M2.5",
			"--server-port", "8001", "--torch-profiler-dir", "/traces", "--max-num-seqs", "16", "--enforce-eager",
			"--cudagraph-capture-sizes", "[1,2,4,8,16]", "--time-scale", "20", "--seed", "7"},
			Env: []string{"KINETO_BUFFER_SIZE_MB=256", "OMP_NUM_THREADS=1"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.spec.command(base)
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(tt.want, got, cmp.AllowUnexported(Command{}), cmp.FilterPath(func(p cmp.Path) bool {
				return p.Last().String() == ".environ" || p.Last().String() == ".kinetoConf"
			}, cmp.Ignore())))
			// The process environment: the inherited one with ours on top,
			// and PWD following the working directory.
			wantEnviron := append([]string{"PATH=/usr/bin", "HOME=/home/u"}, tt.want.Env...)
			pwd := "PWD=/elsewhere"
			if tt.spec.Dir != "" {
				pwd = "PWD=" + tt.spec.Dir
			}
			require.ElementsMatch(t, append(wantEnviron, pwd), got.environ)
		})
	}
}

func TestCommandEnvPrecedence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		base    []string
		env     map[string]string
		want    []string
		environ string // one variable of the process environment, K=V
	}{{
		name: "defaults where nothing is set",
		want: []string{"KINETO_BUFFER_SIZE_MB=256", "KINETO_CONFIG=/traces/kineto.conf", "OMP_NUM_THREADS=1", "SGLANG_PROFILE_RECORD_SHAPES=false",
			"SGLANG_PROFILE_WITH_STACK=false", "SGLANG_TORCH_PROFILER_DIR=/traces"},
	}, {
		name: "the inherited environment wins over a default",
		base: []string{"OMP_NUM_THREADS=8", "KINETO_BUFFER_SIZE_MB=1024", "SGLANG_PROFILE_WITH_STACK=true"},
		want: []string{"KINETO_BUFFER_SIZE_MB=1024", "KINETO_CONFIG=/traces/kineto.conf", "OMP_NUM_THREADS=8", "SGLANG_PROFILE_RECORD_SHAPES=false",
			"SGLANG_PROFILE_WITH_STACK=true", "SGLANG_TORCH_PROFILER_DIR=/traces"},
		environ: "OMP_NUM_THREADS=8",
	}, {
		name: "the run's profiler directory wins over an inherited one, or traces land elsewhere",
		base: []string{"SGLANG_TORCH_PROFILER_DIR=/old"},
		want: []string{"KINETO_BUFFER_SIZE_MB=256", "KINETO_CONFIG=/traces/kineto.conf", "OMP_NUM_THREADS=1", "SGLANG_PROFILE_RECORD_SHAPES=false",
			"SGLANG_PROFILE_WITH_STACK=false", "SGLANG_TORCH_PROFILER_DIR=/traces"},
		environ: "SGLANG_TORCH_PROFILER_DIR=/traces",
	}, {
		name:    "an inherited KINETO_CONFIG is the user's: left as it is",
		base:    []string{"KINETO_CONFIG=/etc/my.conf"},
		want:    []string{"KINETO_BUFFER_SIZE_MB=256", "OMP_NUM_THREADS=1", "SGLANG_PROFILE_RECORD_SHAPES=false", "SGLANG_PROFILE_WITH_STACK=false", "SGLANG_TORCH_PROFILER_DIR=/traces"},
		environ: "KINETO_CONFIG=/etc/my.conf",
	}, {
		name: "Spec.Env wins over everything",
		base: []string{"OMP_NUM_THREADS=8"},
		env:  map[string]string{"OMP_NUM_THREADS": "2", "SGLANG_TORCH_PROFILER_DIR": "/mine", "SGLANG_ENABLE_JIT_DEEPGEMM": "1", "KINETO_CONFIG": "/k.conf"},
		want: []string{"KINETO_BUFFER_SIZE_MB=256", "KINETO_CONFIG=/k.conf", "OMP_NUM_THREADS=2", "SGLANG_ENABLE_JIT_DEEPGEMM=1", "SGLANG_PROFILE_RECORD_SHAPES=false",
			"SGLANG_PROFILE_WITH_STACK=false", "SGLANG_TORCH_PROFILER_DIR=/mine"},
		environ: "OMP_NUM_THREADS=2",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Spec{Kind: SGLang, Model: "m", ProfilerDir: "/traces", Env: tt.env}.command(tt.base)
			require.NoError(t, err)
			require.Equal(t, tt.want, got.Env)
			if tt.environ != "" {
				k, _, _ := strings.Cut(tt.environ, "=")
				var vals []string
				for _, kv := range got.environ {
					if strings.HasPrefix(kv, k+"=") {
						vals = append(vals, kv)
					}
				}
				require.Equal(t, []string{tt.environ}, vals, "exactly one %s in the process environment", k)
			}
		})
	}
}

func TestCommandString(t *testing.T) {
	t.Parallel()
	c := Command{Path: "python", Dir: "/src/my ATOM", Env: []string{"A=1", "B=x y"},
		Args: []string{"--cudagraph-capture-sizes", "[1,2,4]", "--model", "it's"}}
	require.Equal(t, `cd '/src/my ATOM' && A=1 B='x y' python --cudagraph-capture-sizes '[1,2,4]' --model 'it'\''s'`, c.String())
}

func TestCommandRelativePaths(t *testing.T) {
	t.Chdir(t.TempDir())
	got, err := Spec{Kind: Sim, Model: "m", Exe: "./bin/profile-model", Dir: "work", ProfilerDir: "traces"}.command(nil)
	require.NoError(t, err)
	for _, p := range []string{got.Path, got.Dir, got.Args[6]} {
		require.True(t, strings.HasPrefix(p, "/"), "%q is absolute, so Dir does not change what it names", p)
	}
	require.Equal(t, "--torch-profiler-dir", got.Args[5])
}

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		spec    Spec
		wantErr []string // substrings of the error; nil: no error
		notes   []string // substrings, one per expected note
	}{{
		name: "a plain ATOM spec",
		spec: Spec{Kind: ATOM, Model: "m"},
	}, {
		name: "max-num-seqs below ATOM's default capture sizes (512 among them): ATOM drops the larger ones, and the note says which it captures",
		spec: Spec{Kind: ATOM, Model: "m", MaxNumSeqs: 64},
		notes: []string{"--max-num-seqs 64 is smaller than the largest CUDA-graph capture size 512 (ATOM's default sizes [1,2,4,8,16,32,48,64,128,256,512]): " +
			`ATOM drops the larger sizes with a warning and captures [1,2,4,8,16,32,48,64] (releases before May 2026 fail at start instead; for those pass --cudagraph-capture-sizes "[1,2,4,8,16,32,48,64]")`},
	}, {
		name:  "explicit sizes above max-num-seqs: captured are those below; the suggestion keeps max-num-seqs itself",
		spec:  Spec{Kind: ATOM, Model: "m", MaxNumSeqs: 12, CaptureSizes: []int{1, 2, 4, 8, 16}},
		notes: []string{`smaller than the largest CUDA-graph capture size 16: ATOM drops the larger sizes with a warning and captures [1,2,4,8] (releases before May 2026 fail at start instead; for those pass --cudagraph-capture-sizes "[1,2,4,8,12]")`},
	}, {
		name:    "no capture size left: ATOM fails at start",
		spec:    Spec{Kind: ATOM, Model: "m", MaxNumSeqs: 4, CaptureSizes: []int{8, 16}},
		wantErr: []string{"--max-num-seqs 4 is smaller than every CUDA-graph capture size [8,16]: ATOM fails at start", `"[4]"`},
	}, {
		name:  "sglang's fp8 is fp8_e4m3, and the note says so",
		spec:  Spec{Kind: SGLang, Model: "m", KVCacheDType: "fp8"},
		notes: []string{"SGLang has no KV-cache dtype fp8: it gets fp8_e4m3"},
	}, {
		name:    "ATOM's Atomesh router has no profiling routes",
		spec:    Spec{Kind: ATOM, Model: "m", Env: map[string]string{"USE_ATOMESH_ENTRYPOINTS": "1"}},
		wantErr: []string{"USE_ATOMESH_ENTRYPOINTS=1 starts ATOM's Atomesh router, which has no /start_profile"},
	}, {
		name:    "the simulator fails the same way",
		spec:    Spec{Kind: Sim, Model: "m", MaxNumSeqs: 4, CaptureSizes: []int{8}},
		wantErr: []string{"--max-num-seqs 4 is smaller than the largest CUDA-graph capture size 8"},
	}, {
		name: "matching sizes pass",
		spec: Spec{Kind: ATOM, Model: "m", MaxNumSeqs: 64, CaptureSizes: []int{1, 2, 4, 8, 16, 32, 64}},
	}, {
		name:  "eager captures no graph, so the sizes do not matter; torch.compile still runs",
		spec:  Spec{Kind: ATOM, Model: "m", MaxNumSeqs: 8, EnforceEager: true},
		notes: []string{"--enforce-eager only disables CUDA graphs; torch.compile still runs (level 3, ATOM's default): pass --level 0"},
	}, {
		name: "eager with level 0 is fully eager: no note",
		spec: Spec{Kind: ATOM, Model: "m", EnforceEager: true, Level: new(0)},
	}, {
		name:  "vllm eager at an explicit level",
		spec:  Spec{Kind: VLLM, Model: "m", EnforceEager: true, Level: new(3), CaptureSizes: []int{1}},
		notes: []string{"torch.compile still runs (level 3)", "no effect with --enforce-eager"},
	}, {
		name:  "vllm never replays graphs above max-num-seqs but starts",
		spec:  Spec{Kind: VLLM, Model: "m", MaxNumSeqs: 4, CaptureSizes: []int{1, 8}},
		notes: []string{"capture sizes above --max-num-seqs 4 ([1,8]) are never replayed"},
	}, {
		name:  "sglang has only torch.compile on or off",
		spec:  Spec{Kind: SGLang, Model: "m", Level: new(2)},
		notes: []string{"level 2 turns on --enable-torch-compile"},
	}, {
		name:  "the simulator says what it ignores; a time scale elsewhere does nothing",
		spec:  Spec{Kind: Sim, Model: "m", TP: 2, KVCacheDType: "fp8", Level: new(0), MaxModelLen: 9, TrustRemoteCode: true},
		notes: []string{"ignores --kv-cache-dtype, tensor parallelism (one rank), --level, --max-model-len, --trust-remote-code"},
	}, {
		name:  "time scale on a real engine",
		spec:  Spec{Kind: ATOM, Model: "m", TimeScale: 10},
		notes: []string{"time scale 10 applies to the simulated engine only"},
	}, {
		name:    "bad values, all named at once",
		spec:    Spec{Kind: VLLM, TP: -1, MaxNumSeqs: -2, MaxModelLen: -3, Level: new(-1), CaptureSizes: []int{0}, TimeScale: -1},
		wantErr: []string{"no model", "tensor-parallel size -1", "max-num-seqs -2", "max-model-len -3", "level -1", "capture size 0", "time scale -1"},
	}, {
		name:    "port out of range",
		spec:    Spec{Kind: ATOM, Model: "m", Port: 70000},
		wantErr: []string{"port 70000"},
	}, {
		name:    "unknown engine",
		spec:    Spec{Kind: "tgi", Model: "m"},
		wantErr: []string{`unknown engine "tgi"`},
	}, {
		name:    "URL belongs to engine none",
		spec:    Spec{Kind: ATOM, Model: "m", URL: "http://127.0.0.1:8000"},
		wantErr: []string{"only for engine none"},
	}, {
		name:    "none needs a URL",
		spec:    Spec{Kind: None, Model: "m"},
		wantErr: []string{"engine none attaches to a running server: give its URL"},
	}, {
		name:    "none needs an http URL",
		spec:    Spec{Kind: None, Model: "m", URL: "127.0.0.1:8000"},
		wantErr: []string{`URL "127.0.0.1:8000": want http://HOST:PORT`},
	}, {
		name:  "none starts nothing",
		spec:  Spec{Kind: None, Model: "m", URL: "http://h:1", Exe: "python"},
		notes: []string{"engine none starts no process"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			notes, err := tt.spec.Check()
			if tt.wantErr == nil {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				for _, w := range tt.wantErr {
					require.Contains(t, err.Error(), w)
				}
			}
			require.Len(t, notes, len(tt.notes), "notes: %q", notes)
			for i, w := range tt.notes {
				require.Contains(t, notes[i], w)
			}
			if err != nil {
				_, cerr := tt.spec.command(nil)
				require.Error(t, cerr, "Command refuses what Check refuses")
			}
		})
	}
}

func TestParseKind(t *testing.T) {
	t.Parallel()
	for _, k := range kinds() {
		got, err := ParseKind(" " + strings.ToUpper(string(k)) + " ")
		require.NoError(t, err)
		require.Equal(t, k, got)
	}
	_, err := ParseKind("trt")
	require.ErrorContains(t, err, "use one of atom, vllm, sglang, sim, none")
}
