package plan

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/engine"
	"github.com/profile-model/profile-model/profiling/engine/enginetest"
)

func TestMain(m *testing.M) {
	// Started as an engine's stand-in, the test binary is that engine.
	if code, ok := enginetest.Main(); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// minimalHelp is the help fixture of kind's engine that the launch
// checks against: the newest complete one (the minimal ones list only
// what the stand-in tests of other packages pass).
func minimalHelp(tb testing.TB, kind string) string {
	tb.Helper()
	all, err := filepath.Glob(filepath.Join("..", "engine", "testdata", "help", kind+"-*.txt"))
	require.NoError(tb, err)
	all = slices.DeleteFunc(all, func(f string) bool { return strings.HasSuffix(f, "-minimal.txt") })
	require.NotEmpty(tb, all)
	slices.Sort(all)
	abs, err := filepath.Abs(all[len(all)-1])
	require.NoError(tb, err)
	return abs
}

// TestStandInPlans runs a plan (run --plan) of each real engine at two
// ranks against the engine's conformance stand-in: every level of every
// pair ok, a trace for each rank, rank 0 the worker trace.
func TestStandInPlans(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the engine's process group is read from /proc (Linux only)")
	}
	t.Parallel()
	self, err := os.Executable()
	require.NoError(t, err)
	for _, kind := range []string{"atom", "vllm", "sglang"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			p, err := Parse([]byte(fmt.Sprintf(`{"name": "standin-%s", "engine": %q, "model": "Qwen/Qwen3-0.6B", "tp": 2,
				"isl": 64, "osl": 8, "random_range_ratio": 1, "concurrencies": [2, 4], "num_prompts_mul": 2, "warmups": 1, "seed": 3}`, kind, kind)), "")
			require.NoError(t, err)
			l, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			port := l.Addr().(*net.TCPAddr).Port
			l.Close()
			env := map[string]string{enginetest.KindEnv: kind, enginetest.HelpEnv: minimalHelp(t, kind), enginetest.RankLagEnv: "3s"}
			var log bytes.Buffer
			res, err := Run(context.Background(), p, RunOptions{
				Options: Options{Exe: self, Env: env, Port: port},
				Out:     t.TempDir(), NoReport: true, Log: &log, BenchLog: &log,
			})
			require.NoError(t, err, "its log:\n%s", log.String())
			require.Equal(t, StatusOK, res.Index.Status)
			for _, pe := range res.Index.Pairs {
				require.Equal(t, StatusOK, pe.Status, pe.Error)
				info, err := results.LoadRunInfo(results.Run(filepath.Join(res.Dir, pe.Dir)).RunInfo())
				require.NoError(t, err)
				require.Len(t, info.Levels, 2)
				for _, li := range info.Levels {
					require.Equal(t, "ok", li.Status)
					require.Len(t, li.Traces, 2, "a trace per rank")
					require.Positive(t, li.DecodeBS)
					rank0 := li.Traces[0]
					switch engine.Kind(kind) {
					case engine.ATOM:
						require.Equal(t, "rank_0", filepath.Base(filepath.Dir(rank0)))
					case engine.VLLM:
						require.False(t, strings.Contains(rank0, ".async_llm."))
						require.Contains(t, rank0, "-rank-0.")
					case engine.SGLang:
						require.Contains(t, rank0, "-TP-0.")
					}
				}
			}
		})
	}
}
