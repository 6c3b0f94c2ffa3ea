package profiling

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/engine"
	"github.com/profile-model/profile-model/profiling/engine/enginetest"
)

// helpFixture is the help text of kind's engine that its stand-in
// parses: the newest complete one written from the engine's argument parser
// when this checkout has it, else the minimal one with just the options
// these tests pass.
func helpFixture(tb testing.TB, kind engine.Kind) string {
	tb.Helper()
	all, err := filepath.Glob(filepath.Join("engine", "testdata", "help", string(kind)+"-*.txt"))
	require.NoError(tb, err)
	slices.SortFunc(all, func(a, b string) int {
		// Complete fixtures before the minimal ones.
		am, bm := strings.HasSuffix(a, "-minimal.txt"), strings.HasSuffix(b, "-minimal.txt")
		if am != bm {
			if am {
				return 1
			}
			return -1
		}
		// The newest release first (vllm-0.27.1 before vllm-0.12.0).
		return strings.Compare(b, a)
	})
	require.NotEmpty(tb, all, "no help fixture for %s", kind)
	abs, err := filepath.Abs(all[0])
	require.NoError(tb, err)
	return abs
}

// standIn makes plan start this test binary as its engine's stand-in.
func standIn(tb testing.TB, p *Plan, env map[string]string) {
	tb.Helper()
	self, err := os.Executable()
	require.NoError(tb, err)
	p.Engine.Exe = self
	e := map[string]string{enginetest.KindEnv: string(p.Engine.Kind), enginetest.HelpEnv: helpFixture(tb, p.Engine.Kind)}
	for k, v := range p.Engine.Env {
		e[k] = v
	}
	for k, v := range env {
		e[k] = v
	}
	p.Engine.Env = e
}

// TestStandInSweeps runs each real engine's declared sweep against its
// conformance stand-in, at one and two ranks: every level ok, a trace
// found for every rank, rank 0 the worker trace with GPU kernels (never
// vLLM's CPU-only API-process trace), and ATOM's refreshing /metrics read
// after a refresh that followed the level.
func TestStandInSweeps(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the engine's process group is read from /proc (Linux only)")
	}
	t.Parallel()
	for _, tc := range []struct {
		sweep string
		tp    int
	}{
		{"atom-minimax-m2.5-mi355x", 1},
		{"atom-minimax-m2.5-mi355x", 2},
		{"vllm-qwen3-0.6b", 1},
		{"vllm-qwen3-0.6b", 2},
		{"sglang-qwen3-0.6b", 1},
		{"sglang-qwen3-0.6b", 2},
	} {
		t.Run(fmt.Sprintf("%s/tp%d", tc.sweep, tc.tp), func(t *testing.T) {
			t.Parallel()
			s := sweepNamed(t, tc.sweep)
			var p Plan
			var res *Result
			var err error
			var log bytes.Buffer
			var runDir string
			// A port chosen free can be taken by a parallel test before the
			// engine binds it: choose again.
			for try := 1; ; try++ {
				runDir = filepath.Join(t.TempDir(), "run")
				p, err = s.Plan(runDir, SweepOptions{Port: freePort(t), Concurrencies: []int{4, 8}})
				require.NoError(t, err)
				p.Engine.TP = tc.tp
				p.Sweep.NumPromptsMul = 2 // the declared 4 adds time, not checks
				p.Sweep.ExportTimeout = time.Minute
				standIn(t, &p, map[string]string{
					enginetest.MetricsRefreshEnv: "300ms",
					enginetest.RankLagEnv:        "3s", // longer than rank 0's analysis takes
				})
				log.Reset()
				p.Log, p.Sweep.Log = &log, &log
				res, err = Run(context.Background(), p)
				if err == nil || try == 3 || !portLost(err) {
					break
				}
			}
			require.NoError(t, err, "its log:\n%s", log.String())
			require.Equal(t, "ok", res.Info.Status)
			if p.Engine.Kind == engine.ATOM && os.Getenv("ATOM_PROFILER_TIMEOUT") == "" {
				require.Contains(t, res.Info.Engine.Env, "ATOM_PROFILER_TIMEOUT=60", "ATOM's /stop_profile waits as long as the client")
			}
			require.Len(t, res.Sweep.Levels, 2)
			for i, lv := range res.Sweep.Levels {
				require.Equal(t, "ok", lv.Status, "conc %d: %v", lv.Conc, lv.Warnings)
				require.Len(t, lv.TraceFiles, tc.tp, "one trace per rank")
				for _, f := range lv.TraceFiles {
					require.NotContains(t, filepath.Base(f), ".async_llm.", "the API process's trace is never a level's")
				}
				li := res.Info.Levels[i]
				require.Equal(t, lv.Conc, li.Conc)
				require.Positive(t, li.DecodeBS, "rank 0 is a worker trace with decode steps")
				rank0 := filepath.Base(li.Traces[0])
				switch p.Engine.Kind {
				case engine.ATOM:
					require.Equal(t, "rank_0", filepath.Base(filepath.Dir(li.Traces[0])))
				case engine.VLLM:
					require.Contains(t, rank0, "-rank-0.")
				case engine.SGLang:
					require.Contains(t, rank0, "-TP-0.")
				}
				if p.Engine.Kind == engine.ATOM {
					m := lv.Server
					require.NotNil(t, m, "ATOM's /metrics is read")
					require.Empty(t, m.Stale)
					// The shortest gap seen between two refreshes: a
					// multiple of the 300 ms interval.
					require.GreaterOrEqual(t, m.RefreshS, 0.29)
					require.InDelta(t, 0, math.Remainder(m.RefreshS, 0.3), 0.05, "refresh_s %v", m.RefreshS)
					gen, ok := m.Counter(results.GeneratedMetrics...)
					require.True(t, ok)
					require.Equal(t, float64(lv.Metrics.TotalOutput), gen, "counters read after refreshes that followed the level's start and end")
				}
			}
			if p.Engine.Kind == engine.VLLM {
				fe, err := filepath.Glob(filepath.Join(results.Run(runDir).Traces(), "*.async_llm.*.pt.trace.json.gz"))
				require.NoError(t, err)
				require.Len(t, fe, 2, "the API process wrote its trace at each level")
			}
		})
	}
}
