package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/profiling/kernelmodel"
	"github.com/profile-model/profile-model/tracing"
)

// closedLoop keeps conc clients sending streamed requests (each client its
// own output length, so finishes are staggered) until stop is closed; each
// completed request sends on completed.
func closedLoop(t *testing.T, url string, conc int, completed chan<- struct{}, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := map[string]any{"prompt": strings.Repeat("w ", 64+i), "max_tokens": 30 + 5*i, "ignore_eos": true, "stream": true}
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, out, err := streamBody(t, url+"/v1/completions", body)
				if !assert.NoError(t, err) || !assert.True(t, strings.HasSuffix(string(out), "data: [DONE]\n\n")) {
					return
				}
				select {
				case completed <- struct{}{}:
				case <-stop:
					return
				}
			}
		}()
	}
	return &wg
}

// profileWindow runs a closed loop at conc 8, profiles from the 8th to the
// 32nd completed request, and returns the trace written and the server's
// own count of the profiled steps. Steps take about 12 ms of wall time
// (20 layers, half speed) so that a client's turnaround, even under the
// race detector on a loaded machine, fits in one step and the batch stays
// full, as with a real engine.
func profileWindow(t *testing.T, cfg Config) (*tracing.Trace, stepCounts) {
	dir := t.TempDir()
	cfg.ProfilerDir, cfg.clock, cfg.PythonPerStep = dir, realClock{}, 50
	ts := start(t, cfg)
	completed := make(chan struct{})
	stop := make(chan struct{})
	wg := closedLoop(t, ts.URL, 8, completed, stop)
	n := 0
	waitFor := func(want int) {
		for ; n < want; n++ {
			<-completed
		}
	}
	waitFor(8)
	code, body := post(t, ts.URL+"/start_profile", nil)
	require.Equal(t, http.StatusOK, code, string(body))
	waitFor(32)
	code, body = post(t, ts.URL+"/stop_profile", nil)
	counts := ts.stepCounts()
	close(stop)
	wg.Wait()
	require.Equal(t, http.StatusOK, code, string(body))
	var reply struct {
		Status string `json:"status"`
		Traces []struct {
			TraceDir string  `json:"trace_dir"`
			Elapsed  float64 `json:"elapsed"`
		} `json:"traces"`
	}
	require.NoError(t, json.Unmarshal(body, &reply))
	require.Len(t, reply.Traces, 1, string(body))
	require.Equal(t, filepath.Join(dir, "rank_0"), reply.Traces[0].TraceDir)
	files, err := filepath.Glob(filepath.Join(dir, "rank_0", "*"))
	require.NoError(t, err)
	require.Len(t, files, 1, "one trace, no .json left behind")
	require.Regexp(t, `^m_ts_\d{8}_\d{6}_\d{3}\.pt\.trace\.json\.gz$`, filepath.Base(files[0]))
	tr, err := tracing.Load(context.Background(), files[0], tracing.Options{})
	require.NoError(t, err)
	return tr, counts
}

// checkRoundTrip compares the trace's steps and per-layer table with what the
// engine ran and the table it used.
func checkRoundTrip(t *testing.T, tr *tracing.Trace, counts stepCounts, want []inventory.LayerRow) {
	t.Helper()
	sum := tr.Summarize()
	require.Equal(t, 8, sum.DecodeBS, "decode_bs; histogram %v", sum.DecodeBSHist)
	require.Equal(t, map[string]int{"prefill": int(counts.ProfiledPrefill), "decode": int(counts.ProfiledDecode)}, sum.Steps)
	for bs, n := range counts.ProfiledDecodeBS {
		require.Equal(t, n, sum.DecodeBSHist[fmt.Sprint(bs)], "decode steps at bs %d", bs)
	}
	require.Empty(t, sum.Warnings)
	for _, mode := range []string{inventory.ModeCompat, inventory.ModeRobust} {
		lt, err := inventory.DecodeLayers(context.Background(), tr, inventory.LayerOptions{Mode: mode})
		require.NoError(t, err, mode)
		got := lt.Rows()
		require.Len(t, got, len(want), mode)
		for i := range want {
			require.Equal(t, want[i].Kernel, got[i].Kernel, "%s pos %d", mode, i)
			require.InEpsilon(t, want[i].AvgUS, got[i].AvgUS, 0.02, "%s pos %d (%s): avg µs", mode, i, want[i].ShortName)
		}
	}
}

// TestRoundTripOwnTable: the engine runs from a per-layer table (the
// built-in model's bs-8 layer written as a compatible CSV, min and max at
// ±3 std so that clipping does not move the mean of the draws); the trace it
// writes gives back that table.
func TestRoundTripOwnTable(t *testing.T) {
	t.Parallel()
	var want []inventory.LayerRow
	for _, p := range kernelmodel.Default().DecodeLayer(8, 0) {
		want = append(want, inventory.LayerRow{Pos: p.Pos, ShortName: p.ShortName, Kernel: p.Kernel,
			AvgUS: p.AvgUS, StdUS: p.StdUS, MinUS: max(p.AvgUS-3*p.StdUS, 0.1), MaxUS: p.AvgUS + 3*p.StdUS})
	}
	csvPath := filepath.Join(t.TempDir(), "conc8_layer.csv")
	require.NoError(t, os.WriteFile(csvPath, inventory.FormatLayerCSV(want), 0o644))
	want, err := inventory.ReadLayerCSV(csvPath) // as the engine read it (one decimal)
	require.NoError(t, err)
	tr, counts := profileWindow(t, Config{KernelCSVs: []string{csvPath}, Layers: 20, TimeScale: 0.5})
	checkRoundTrip(t, tr, counts, want)
}

// clippedMean is the mean of a normal(avg, std) draw clipped to [lo, hi]:
// what the kernel model's draws average to when a table's min and max are
// not symmetric around its avg (the real tables' are not).
func clippedMean(avg, std, lo, hi float64) float64 {
	if std <= 0 {
		return min(max(avg, lo), hi)
	}
	phi := func(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }
	cdf := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	a, b := (lo-avg)/std, (hi-avg)/std
	return lo*cdf(a) + hi*(1-cdf(b)) + avg*(cdf(b)-cdf(a)) + std*(phi(a)-phi(b))
}

// TestRoundTripCorpusTable does the same with the real conc8 table. Its
// min/max are the real extremes, lopsided around avg, so the kernel model's
// clipped draws average up to 1.5% away from avg (MoE GEMM): the expected
// value is the clipped mean.
func TestRoundTripCorpusTable(t *testing.T) {
	t.Parallel()
	csvPath := corpus.Path(t, "atom-minimax-m2.5/conc8_layer.csv")
	want, err := inventory.ReadLayerCSV(csvPath)
	require.NoError(t, err)
	for i := range want {
		want[i].AvgUS = clippedMean(want[i].AvgUS, want[i].StdUS, want[i].MinUS, want[i].MaxUS)
	}
	tr, counts := profileWindow(t, Config{KernelCSVs: []string{csvPath}, Layers: 20, TimeScale: 0.5})
	checkRoundTrip(t, tr, counts, want)
}
