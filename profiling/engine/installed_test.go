package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// installedFixture is kind's engine at the commit or release its help
// fixture was written from.
func installedFixture(t *testing.T, kind Kind, file string) *Installed {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "help", file))
	require.NoError(t, err)
	version, _ := strings.CutSuffix(strings.TrimPrefix(file, string(kind)+"-"), ".txt")
	return NewInstalled(kind, version, "", string(b))
}

// TestLaunchDefects: each launch defect of issue 34, as the command line
// built for the engine and checked against the flags its argument parser
// defines (testdata/help, written from the parser at the commit
// docs/engines.md names). Each failed with the command lines built before.
func TestLaunchDefects(t *testing.T) {
	t.Parallel()
	atom := installedFixture(t, ATOM, "atom-ffdf3bb.txt")
	vllm := installedFixture(t, VLLM, "vllm-0.27.1.txt")
	sglang := installedFixture(t, SGLang, "sglang-d315eb7.txt")
	everything := func(k Kind, in *Installed) Spec {
		return Spec{Kind: k, Model: "m", TP: 2, KVCacheDType: "fp8", MaxNumSeqs: 64, MaxModelLen: 8192, Level: new(3),
			CaptureSizes: []int{1, 2, 4, 8, 16, 32, 64}, TrustRemoteCode: true, ProfilerDir: "/traces", Installed: in}
	}
	build := func(t *testing.T, s Spec, environ ...string) Command {
		t.Helper()
		c, err := s.command(environ)
		require.NoError(t, err, "every flag is one the installed engine's parser defines")
		return c
	}
	env := func(c Command, k string) (string, bool) {
		for _, kv := range c.environ {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v, true
			}
		}
		return "", false
	}
	argAfter := func(c Command, flag string) string {
		for i, a := range c.Args {
			if a == flag && i+1 < len(c.Args) {
				return c.Args[i+1]
			}
		}
		return ""
	}

	t.Run("vllm: profiler by --profiler-config, not the removed VLLM_TORCH_PROFILER_DIR", func(t *testing.T) {
		t.Parallel()
		c := build(t, everything(VLLM, vllm))
		require.Equal(t, `{"profiler":"torch","torch_profiler_dir":"/traces","torch_profiler_with_stack":false,"torch_profiler_record_shapes":false}`,
			argAfter(c, "--profiler-config"))
		_, set := env(c, "VLLM_TORCH_PROFILER_DIR")
		require.False(t, set)
	})
	t.Run("vllm: --compilation-config takes mode, not level", func(t *testing.T) {
		t.Parallel()
		cc := argAfter(build(t, everything(VLLM, vllm)), "--compilation-config")
		require.Equal(t, `{"mode":3,"cudagraph_capture_sizes":[1,2,4,8,16,32,64]}`, cc)
		require.NotContains(t, cc, "level")
	})
	t.Run("sglang: fp8 KV cache is fp8_e4m3", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "fp8_e4m3", argAfter(build(t, everything(SGLang, sglang)), "--kv-cache-dtype"))
	})
	t.Run("sglang: --tensor-parallel-size, not the bare --tp", func(t *testing.T) {
		t.Parallel()
		c := build(t, everything(SGLang, sglang))
		require.Equal(t, "2", argAfter(c, "--tensor-parallel-size"))
		require.NotContains(t, c.Args, "--tp")
		require.False(t, sglang.Has("--tp"), "SGLang's parser defines no --tp")
	})
	t.Run("sglang: per-phase CUDA-graph flags, not the deprecated --disable-cuda-graph and --cuda-graph-bs", func(t *testing.T) {
		t.Parallel()
		c := build(t, everything(SGLang, sglang))
		require.Equal(t, "1", argAfter(c, "--cuda-graph-bs-decode"))
		require.NotContains(t, c.Args, "--cuda-graph-bs")
		eager := everything(SGLang, sglang)
		eager.EnforceEager, eager.CaptureSizes = true, nil
		c = build(t, eager)
		require.Equal(t, "disabled", argAfter(c, "--cuda-graph-backend-decode"))
		require.Equal(t, "disabled", argAfter(c, "--cuda-graph-backend-prefill"))
		require.NotContains(t, c.Args, "--disable-cuda-graph")
	})
	t.Run("sglang before its CUDA-graph refactor: the old spellings", func(t *testing.T) {
		t.Parallel()
		// The flags of an SGLang whose parser predates the per-phase ones.
		old := NewInstalled(SGLang, "old", "", "  --model-path MODEL_PATH\n  --port PORT\n  --tensor-parallel-size TP_SIZE, --tp-size TP_SIZE\n"+
			"  --kv-cache-dtype {auto,fp8_e5m2,fp8_e4m3}\n  --enable-metrics\n  --disable-cuda-graph\n  --cuda-graph-bs CUDA_GRAPH_BS [CUDA_GRAPH_BS ...]\n")
		s := Spec{Kind: SGLang, Model: "m", CaptureSizes: []int{1, 2}, Installed: old}
		require.Contains(t, build(t, s).Args, "--cuda-graph-bs")
		s.CaptureSizes, s.EnforceEager = nil, true
		require.Contains(t, build(t, s).Args, "--disable-cuda-graph")
	})
	t.Run("sglang: --enable-metrics, so /metrics exists", func(t *testing.T) {
		t.Parallel()
		require.Contains(t, build(t, everything(SGLang, sglang)).Args, "--enable-metrics")
	})
	t.Run("sglang: stacks and shapes off, as ATOM and vLLM here record them", func(t *testing.T) {
		t.Parallel()
		c := build(t, everything(SGLang, sglang))
		for _, k := range []string{"SGLANG_PROFILE_WITH_STACK", "SGLANG_PROFILE_RECORD_SHAPES"} {
			v, _ := env(c, k)
			require.Equal(t, "false", v, k)
		}
	})
	t.Run("atom: max-num-seqs below the largest capture size starts, and the note says which sizes are captured", func(t *testing.T) {
		t.Parallel()
		s := everything(ATOM, atom)
		s.CaptureSizes, s.MaxNumSeqs = nil, 32
		build(t, s)
		notes, err := s.Check()
		require.NoError(t, err)
		require.Contains(t, notes[0], "captures [1,2,4,8,16,32]")
	})
	t.Run("atom: default capture sizes include 512", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, 512, atomDefaultCaptureSizes[len(atomDefaultCaptureSizes)-1])
	})
	t.Run("atom: an inherited USE_ATOMESH_ENTRYPOINTS=1 is turned off", func(t *testing.T) {
		t.Parallel()
		c := build(t, everything(ATOM, atom), "USE_ATOMESH_ENTRYPOINTS=1", "PATH=/bin")
		v, _ := env(c, "USE_ATOMESH_ENTRYPOINTS")
		require.Equal(t, "0", v)
		require.Contains(t, c.Env, "USE_ATOMESH_ENTRYPOINTS=0", "run.json shows it")
	})
	t.Run("default executable python3", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "python3", build(t, everything(ATOM, atom)).Path)
		require.Equal(t, "python3", build(t, everything(SGLang, sglang)).Path)
	})
	t.Run("kineto: KINETO_BUFFER_SIZE_MB kept, and a KINETO_CONFIG file for upstream Kineto", func(t *testing.T) {
		t.Parallel()
		for _, k := range []Kind{ATOM, VLLM, SGLang} {
			c := build(t, Spec{Kind: k, Model: "m", ProfilerDir: "/traces"}, "KINETO_BUFFER_SIZE_MB=512")
			mb, _ := env(c, "KINETO_BUFFER_SIZE_MB")
			require.Equal(t, "512", mb, "%s: the inherited buffer size stays", k)
			conf, _ := env(c, "KINETO_CONFIG")
			require.Equal(t, "/traces/"+KinetoConfigFile, conf, "%s", k)
			require.Contains(t, c.kinetoConf, "\nACTIVITIES_MAX_GPU_BUFFER_SIZE_MB=512\n", "%s: CUPTI's buffer", k)
			require.Contains(t, c.kinetoConf, "\nROCTRACER_MAX_EVENTS=20480000\n", "%s: the ROCm loggers' event cap", k)
		}
		_, err := Spec{Kind: VLLM, Model: "m", ProfilerDir: "/traces", Env: map[string]string{"KINETO_BUFFER_SIZE_MB": "big"}}.command(nil)
		require.ErrorContains(t, err, `KINETO_BUFFER_SIZE_MB="big": want a whole number of MB`)
	})
}

// TestHelpCheckRefuses: a flag the installed engine's --help does not
// list is refused before the start, naming the flag and the version, for
// each engine.
func TestHelpCheckRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		spec    Spec
		in      *Installed
		wantErr string
	}{{
		name:    "atom: a misspelt flag",
		spec:    Spec{Kind: ATOM, Model: "m", ExtraArgs: []string{"--max-num-batch-tokens", "8192"}},
		in:      installedFixture(t, ATOM, "atom-ffdf3bb.txt"),
		wantErr: "atom ffdf3bb does not know --max-num-batch-tokens (python3 -m atom.entrypoints.openai_server --help lists no such flag)",
	}, {
		name:    "vllm before v0.13 has no --profiler-config",
		spec:    Spec{Kind: VLLM, Model: "m", ProfilerDir: "/traces"},
		in:      installedFixture(t, VLLM, "vllm-0.12.0.txt"),
		wantErr: "vllm 0.12.0 does not know --profiler-config",
	}, {
		name:    "vllm: an unknown flag, next to a known one in its underscore and = spellings",
		spec:    Spec{Kind: VLLM, Model: "m", ExtraArgs: []string{"--max_num_batched_tokens=8192", "-O3", "--compilation-config.mode", "3", "--speculative-model", "x"}},
		in:      installedFixture(t, VLLM, "vllm-0.27.1.txt"),
		wantErr: "vllm 0.27.1 does not know --speculative-model",
	}, {
		name:    "sglang: a misspelt flag, next to an abbreviation argparse takes (--mem-fraction for --mem-fraction-static)",
		spec:    Spec{Kind: SGLang, Model: "m", ExtraArgs: []string{"--mem-fraction", "0.8", "--chunked-prefil-size", "4096"}},
		in:      installedFixture(t, SGLang, "sglang-d315eb7.txt"),
		wantErr: "sglang d315eb7 does not know --chunked-prefil-size",
	}, {
		name:    "sglang: an ambiguous abbreviation is refused, as argparse does",
		spec:    Spec{Kind: SGLang, Model: "m", ExtraArgs: []string{"--cuda-graph-bs-", "4"}},
		in:      installedFixture(t, SGLang, "sglang-d315eb7.txt"),
		wantErr: "sglang d315eb7 does not know --cuda-graph-bs-",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.in.HelpCmd = probeLine(Command{Path: "python3"}, probeFor(tt.spec.Kind).Help[0])
			tt.spec.Installed = tt.in
			_, err := tt.spec.command(nil)
			require.ErrorContains(t, err, tt.wantErr)
			require.ErrorContains(t, err, "it would stop at start")
			// Without the flag the same engine takes the command.
			tt.spec.ExtraArgs, tt.spec.ProfilerDir = nil, ""
			_, err = tt.spec.command(nil)
			require.NoError(t, err)
		})
	}
}

func TestParseHelp(t *testing.T) {
	t.Parallel()
	got := ParseHelp("usage: x [-h] [--a A] [--b-c | --no-b-c]\n\noptions:\n  --tensor-parallel-size N, -tp N\n" +
		"  --kv_cache_dtype {bf16,fp8}, --kv-cache-dtype {bf16,fp8}\n  --x.y X  use --z. not-a-flag -1\n")
	for _, f := range []string{"-h", "--a", "--b-c", "--no-b-c", "--tensor-parallel-size", "-tp", "--kv_cache_dtype", "--kv-cache-dtype", "--x.y", "--z"} {
		require.True(t, got[f], "%s listed", f)
	}
	require.False(t, got["not-a-flag"])
	require.False(t, got["-1"])
	require.Len(t, got, 10)
}

// TestIdentify runs the probes through a fake engine executable.
func TestIdentify(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	help, err := os.ReadFile(filepath.Join("testdata", "help", "vllm-0.27.1.txt"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "help.txt"), help, 0o644))
	fake := filepath.Join(dir, "vllm")
	writeScript(t, fake, `#!/bin/sh
case "$1 $2" in
"--version ") echo "INFO some log line"; echo 0.27.1 ;;
"serve --help=all") cat "$(dirname "$0")/help.txt" ;;
*) echo "unexpected: $*" >&2; exit 2 ;;
esac
`)
	in, err := Identify(t.Context(), Spec{Kind: VLLM, Model: "m", Exe: fake})
	require.NoError(t, err)
	require.Equal(t, "0.27.1", in.Version)
	require.Empty(t, in.Commit)
	require.Equal(t, fake+" serve --help=all", in.HelpCmd)
	require.True(t, in.Has("--profiler-config"))
	require.Equal(t, "vllm 0.27.1", in.String())

	t.Run("help without =all, as older vLLM", func(t *testing.T) {
		t.Parallel()
		old := filepath.Join(dir, "vllm-old")
		writeScript(t, old, "#!/bin/sh\ncase \"$1 $2\" in\n\"--version \") echo 0.8.5 ;;\n\"serve --help\") echo '  --port PORT' ;;\n*) echo \"vllm: error: argument --help: ignored explicit argument 'all'\" >&2; exit 2 ;;\nesac\n")
		in, err := Identify(t.Context(), Spec{Kind: VLLM, Model: "m", Exe: old})
		require.NoError(t, err)
		require.Equal(t, []string{"--port"}, in.Flags())
	})
	t.Run("a checkout's commit, without a package version", func(t *testing.T) {
		t.Parallel()
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("git is not installed: no checkout to read a commit from")
		}
		co := t.TempDir()
		for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"}} {
			out, err := exec.Command("git", append([]string{"-C", co}, args...)...).CombinedOutput()
			require.NoError(t, err, "%s", out)
		}
		head, err := exec.Command("git", "-C", co, "rev-parse", "HEAD").Output()
		require.NoError(t, err)
		py := filepath.Join(dir, "python3-checkout")
		writeScript(t, py, "#!/bin/sh\nif [ \"$1\" = -c ]; then echo \"PackageNotFoundError: atom\" >&2; exit 1; fi\necho '  --model MODEL'\n")
		in, err := Identify(t.Context(), Spec{Kind: ATOM, Model: "m", Exe: py, Dir: co})
		require.NoError(t, err)
		require.Empty(t, in.Version)
		require.Equal(t, strings.TrimSpace(string(head)), in.Commit)
		// A directory inside the checkout is not the engine's checkout.
		sub := filepath.Join(co, "sub")
		require.NoError(t, os.Mkdir(sub, 0o755))
		_, err = Identify(t.Context(), Spec{Kind: ATOM, Model: "m", Exe: py, Dir: sub})
		require.ErrorContains(t, err, "cannot tell which atom is installed")
	})
	t.Run("neither version nor checkout", func(t *testing.T) {
		t.Parallel()
		py := filepath.Join(dir, "python3-bare")
		writeScript(t, py, "#!/bin/sh\necho \"No module named 'sglang'\" >&2; exit 1\n")
		_, err := Identify(t.Context(), Spec{Kind: SGLang, Model: "m", Exe: py})
		require.ErrorContains(t, err, "cannot tell which sglang is installed: "+py+` -c 'import importlib.metadata as m; print(m.version("sglang"))': exit status 1: No module named 'sglang'`)
	})
	t.Run("help that fails", func(t *testing.T) {
		t.Parallel()
		py := filepath.Join(dir, "python3-nohelp")
		writeScript(t, py, "#!/bin/sh\nif [ \"$1\" = -c ]; then echo 0.5.17; exit 0; fi\necho 'ImportError: torch' >&2; exit 1\n")
		_, err := Identify(t.Context(), Spec{Kind: SGLang, Model: "m", Exe: py})
		require.ErrorContains(t, err, "reading the flags of sglang 0.5.17: "+py+" -m sglang.launch_server --help: exit status 1: ImportError: torch")
	})
	t.Run("nothing to probe for the simulated engine and engine none", func(t *testing.T) {
		t.Parallel()
		for _, s := range []Spec{{Kind: Sim, Model: "m"}, {Kind: None, Model: "m", URL: "http://h:1"}} {
			in, err := Identify(t.Context(), s)
			require.NoError(t, err)
			require.Nil(t, in)
		}
	})
}
