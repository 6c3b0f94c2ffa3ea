package profiling

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/engine"
)

// BenchmarkSweep reports every level of every declared sweep as a Go
// benchmark, BenchmarkSweep/sweep=S/model=M/isl=I/osl=O/conc=N, with the
// units of a run's bench.txt (ttft-p50-ms, tpot-p50-ms, out-tok/s, …)
// plus layer-us and <category>-us/layer from the level's trace. One op is
// one profiled level (sec/op is its wall time, export and analysis
// included) against an engine started once per sweep; -count N gives N
// independent levels for benchstat:
//
//	go test -run '^$' -bench Sweep -count 6 ./profiling/ > new.txt
//	go tool benchstat old.txt new.txt
//
// Without -tags gpu only the simulated engine's sweeps run.
func BenchmarkSweep(b *testing.B) {
	for _, s := range loadSweeps(b, *sweepsDir) {
		if s.Kind() != engine.Sim && !gpuTag {
			continue
		}
		b.Run("sweep="+s.Name, func(b *testing.B) { benchSweep(b, s) })
	}
}

func benchSweep(b *testing.B, s *Sweep) {
	ctx := context.Background()
	o := sweepOptions(b, s, nil)
	if s.Kind() != engine.Sim {
		realSweepReady(b, s, o)
	}
	spec, err := s.EngineSpec(o)
	require.NoError(b, err)
	dir := b.TempDir()
	spec.ProfilerDir = filepath.Join(dir, "traces")
	var srv *engine.Server
	for try := 1; ; try++ {
		srv, err = engine.Start(ctx, spec, engine.Options{RunDir: filepath.Join(dir, fmt.Sprintf("engine%d", try))})
		if err == nil || try == 3 || !portLost(err) {
			break
		}
		spec.Port = freePort(b) // taken since it was found free
	}
	require.NoError(b, err)
	defer func() {
		stopCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		require.NoError(b, srv.Stop(stopCtx))
	}()
	ops := 0
	for _, conc := range s.Concurrencies {
		name := strings.TrimPrefix(results.BenchName(s.Model, s.ISL, s.OSL, conc), "Sweep/")
		b.Run(name, func(b *testing.B) {
			var units []string
			sums := map[string]float64{}
			for range b.N {
				ops++
				// Each op is a run of its own (Run, attached to the engine
				// started above), removed once its metrics are read.
				runDir := filepath.Join(dir, fmt.Sprintf("op%d", ops))
				plan := Plan{
					Engine:   engine.Spec{Kind: engine.None, Model: s.Model, URL: srv.URL()},
					TraceDir: spec.ProfilerDir, RunDir: runDir, ModelConfig: s.rel(s.ModelConfig),
					Sweep: s.SweepConfig(SweepOptions{Concurrencies: []int{conc}}),
				}
				res, err := Run(ctx, plan)
				require.NoError(b, err)
				li := levelOf(b, res, conc)
				r, err := LevelBench(res.Dir, li, s.ISL, s.OSL)
				require.NoError(b, err)
				for _, m := range r.Metrics {
					if _, ok := sums[m.Unit]; !ok {
						units = append(units, m.Unit)
					}
					sums[m.Unit] += m.Value
				}
				for _, tr := range li.Traces {
					if !filepath.IsAbs(tr) {
						tr = filepath.Join(res.Dir, tr)
					}
					require.NoError(b, os.Remove(tr))
				}
				require.NoError(b, os.RemoveAll(runDir))
			}
			for _, u := range units {
				b.ReportMetric(sums[u]/float64(b.N), u)
			}
		})
	}
}
