package enginetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/sim"
)

// TestStandInArguments: each stand-in parses its engine's command line as
// the engine's argparse parser does: --help prints the help text, an
// option the text does not list exits 2 with argparse's message, and the
// options it lists are taken with their values.
func TestStandInArguments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind     sim.Personality
		launcher []string
		prog     string
		good     []string
	}{
		{sim.PersonalityATOM, []string{"-m", "atom.entrypoints.openai_server"}, "openai_server.py",
			[]string{"--model", "M", "-tp", "2", "--kv_cache_dtype", "fp8", "--enforce-eager", "--server-port=9"}},
		{sim.PersonalityVLLM, []string{"serve"}, "vllm serve",
			[]string{"M", "--port", "9", "--tensor-parallel-size", "2", "--profiler-config", `{"profiler":"torch"}`}},
		{sim.PersonalitySGLang, []string{"-m", "sglang.launch_server"}, "launch_server.py",
			[]string{"--model-path", "M", "--tp", "2", "--cuda-graph-bs", "1", "2", "4", "--disable-cuda-graph"}},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			t.Parallel()
			all, err := filepath.Glob(filepath.Join("..", "testdata", "help", string(tc.kind)+"-*-minimal.txt"))
			require.NoError(t, err)
			require.Len(t, all, 1)
			text, err := os.ReadFile(all[0])
			require.NoError(t, err)
			h := parseHelp(string(text))
			require.Equal(t, tc.prog, h.prog)

			var out, errOut strings.Builder
			_, code := h.parseArgs([]string{"--help"}, &out, &errOut)
			require.Equal(t, 0, code)
			require.Equal(t, string(text), out.String())

			out.Reset()
			args := append(tc.good[:len(tc.good):len(tc.good)], "--no-such-flag", "1")
			if tc.kind == sim.PersonalityVLLM {
				args = args[1:] // the model is positional
			}
			_, code = h.parseArgs(args, &out, &errOut)
			require.Equal(t, 2, code)
			require.True(t, strings.HasPrefix(errOut.String(), "usage: "))
			require.Contains(t, errOut.String(), "\n"+tc.prog+": error: unrecognized arguments: --no-such-flag 1\n")

			errOut.Reset()
			good := tc.good
			if tc.kind == sim.PersonalityVLLM {
				good = good[1:]
			}
			vals, code := h.parseArgs(good, &out, &errOut)
			require.Equal(t, -1, code, errOut.String())
			require.Empty(t, errOut.String())
			switch tc.kind {
			case sim.PersonalityATOM:
				require.Equal(t, "2", last(vals, "-tp", "--tensor-parallel-size"))
				require.Equal(t, "9", last(vals, "--server-port"))
			case sim.PersonalitySGLang:
				require.Equal(t, []string{"1", "2", "4"}, vals["--cuda-graph-bs"])
				require.Equal(t, "2", last(vals, "--tp", "--tp-size"))
			case sim.PersonalityVLLM:
				require.Equal(t, `{"profiler":"torch"}`, last(vals, "--profiler-config"))
			}
		})
	}
}

// TestStandInWrongLauncher: a command line that is not the engine's is
// refused before anything starts.
func TestStandInWrongLauncher(t *testing.T) {
	t.Parallel()
	var out, errOut strings.Builder
	require.Equal(t, 2, run(sim.PersonalityATOM, []string{"-m", "sglang.launch_server"}, &out, &errOut))
	require.Contains(t, errOut.String(), `does not start with "-m atom.entrypoints.openai_server"`)
}

// TestStandInVersion: a version query is answered before anything starts.
func TestStandInVersion(t *testing.T) {
	t.Parallel()
	var out, errOut strings.Builder
	require.Equal(t, 0, run(sim.PersonalityVLLM, []string{"--version"}, &out, &errOut))
	require.Equal(t, "0.27.1\n", out.String())
}
