package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/perf/benchfmt"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/profiling/sim"
)

const simModel = "MiniMaxAI/MiniMax-M2.5"

// startSim runs the simulated engine in-process until the test ends.
// The returned wait blocks until Serve returned and gives its error.
func startSim(t *testing.T, cfg sim.Config) (url string, wait func() error) {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = simModel
	}
	if cfg.Exit == nil {
		cfg.Exit = func(int) {} // a simulated crash ends Serve, not the test binary
	}
	srv, err := sim.New(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { ch <- srv.Serve(ctx, ln) }()
	wait = sync.OnceValue(func() error { return <-ch })
	t.Cleanup(func() {
		cancel()
		wait()
	})
	return "http://" + ln.Addr().String(), wait
}

// TestProfiledSweepAgainstSim runs a 3-level profiled sweep (4, 8, 16)
// against the simulated engine with a slow export, and checks the run
// directory: three result JSONs, one trace per level mapped to it, the
// summary CSV, a benchmark file benchfmt reads, and a benchmark duration
// that ends before the export started.
func TestProfiledSweepAgainstSim(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a sweep against the simulated engine; skipped with -short")
	}
	const exportDelay = 1500 * time.Millisecond
	for _, async := range []bool{false, true} {
		t.Run("async_stop="+strconv.FormatBool(async), func(t *testing.T) {
			t.Parallel()
			traceDir := t.TempDir()
			url, _ := startSim(t, sim.Config{ProfilerDir: traceDir, TimeScale: 20, ExportDelay: exportDelay, AsyncStop: async, PythonPerStep: -1})
			out := t.TempDir()
			var log bytes.Buffer
			res, err := Sweep(context.Background(), SweepConfig{
				URL: url, ISL: 256, OSL: 24, RangeRatio: 0.8,
				Concurrencies: []int{4, 8, 16}, NumPromptsMul: 2, Warmups: 1, Seed: 7,
				Profile: true, TraceDir: traceDir, ExportTimeout: time.Minute, PollInterval: 20 * time.Millisecond,
				OutDir: out, Log: &log, ReadTraces: analysis.TraceFacts,
			})
			require.NoError(t, err, log.String())
			require.Equal(t, simModel, res.Model, "model read from /v1/models")
			require.True(t, res.Shaper.Calibrated)
			require.InDelta(t, 1.0, res.Shaper.PerWord, 1e-9, "the stand-in tokenizer counts a short word as one token")
			require.Len(t, res.Levels, 3)

			seen := map[string]bool{}
			for i, lv := range res.Levels {
				conc := []int{4, 8, 16}[i]
				require.Equal(t, statusOK, lv.Status, "level %d: %v", conc, lv.Warnings)
				require.Equal(t, conc*2, lv.Metrics.Completed)
				require.Len(t, lv.TraceFiles, 1, "one rank")
				tr := lv.TraceFiles[0]
				require.False(t, seen[tr], "each level has its own trace")
				seen[tr] = true
				require.True(t, strings.HasSuffix(tr, ".pt.trace.json.gz"))
				require.Equal(t, "rank_0", filepath.Base(filepath.Dir(tr)))
				_, err := os.Stat(strings.TrimSuffix(tr, ".gz"))
				require.True(t, os.IsNotExist(err), "no .json left behind")
				info, err := os.Stat(tr)
				require.NoError(t, err)
				// The export (held exportDelay before the gzip) began after
				// the measured window closed.
				require.GreaterOrEqual(t, info.ModTime().Sub(lv.End), exportDelay-50*time.Millisecond,
					"trace written %v after the window's end: the duration must not include the export", info.ModTime().Sub(lv.End))
				require.Less(t, lv.Metrics.Duration, info.ModTime().Sub(lv.Start)-exportDelay+50*time.Millisecond)
				require.Positive(t, lv.DecodeBS, "decode batch size read from the trace")
				require.LessOrEqual(t, lv.DecodeBS, conc)

				// Real input lengths from usage lie in the requested range.
				for _, n := range lv.Metrics.InputLens {
					require.GreaterOrEqual(t, n, 204) // ⌊256·0.8⌋
					require.LessOrEqual(t, n, 256)
				}
				for _, n := range lv.Metrics.OutputLens {
					require.GreaterOrEqual(t, n, 19)
					require.LessOrEqual(t, n, 24)
				}

				data, err := os.ReadFile(lv.ResultFile)
				require.NoError(t, err)
				var doc map[string]any
				require.NoError(t, json.Unmarshal(data, &doc))
				for _, k := range []string{"duration", "completed", "total_input_tokens", "total_output_tokens", "request_throughput",
					"output_throughput", "total_token_throughput", "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms",
					"mean_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "p99_itl_ms", "mean_e2el_ms", "p99_e2el_ms", "std_ttft_ms", "p90_itl_ms"} {
					require.Contains(t, doc, k)
				}
				require.Equal(t, float64(conc), doc["max_concurrency"])
				require.Equal(t, float64(conc*2), doc["completed"])
				require.Equal(t, []any{tr}, doc["trace_files"])
				require.InDelta(t, lv.Metrics.Duration.Seconds(), doc["duration"], 1e-9)
			}

			// Summary CSV: header and one row per level.
			f, err := os.Open(res.SummaryCSV)
			require.NoError(t, err)
			rows, err := csv.NewReader(f).ReadAll()
			f.Close()
			require.NoError(t, err)
			require.Equal(t, results.SummaryHeader, rows[0])
			require.Len(t, rows, 4)
			col := map[string]int{}
			for i, h := range rows[0] {
				col[h] = i
			}
			for i, row := range rows[1:] {
				require.Equal(t, strconv.Itoa(res.Levels[i].Conc), row[col["conc"]])
				require.Equal(t, "ok", row[col["status"]])
				require.Equal(t, strconv.Itoa(res.Levels[i].Metrics.Completed), row[col["completed"]])
				require.Equal(t, strconv.Itoa(res.Levels[i].DecodeBS), row[col["decode_bs"]])
			}

			// The benchmark file parses, with the expected names and units.
			bf, err := os.Open(res.BenchFile)
			require.NoError(t, err)
			defer bf.Close()
			rd := benchfmt.NewReader(bf, res.BenchFile)
			var names []string
			for rd.Scan() {
				switch r := rd.Result().(type) {
				case *benchfmt.Result:
					names = append(names, string(r.Name))
					v, ok := r.Value("out-tok/s")
					require.True(t, ok)
					require.Positive(t, v)
					_, ok = r.Value("ttft-p50-ms")
					require.True(t, ok)
					_, ok = r.Value("tpot-p50-ms")
					require.True(t, ok)
				case *benchfmt.SyntaxError:
					t.Fatalf("benchmark file: %v", r)
				}
			}
			require.NoError(t, rd.Err())
			require.Equal(t, []string{
				"Sweep/model=MiniMaxAI_MiniMax-M2.5/isl=256/osl=24/conc=4",
				"Sweep/model=MiniMaxAI_MiniMax-M2.5/isl=256/osl=24/conc=8",
				"Sweep/model=MiniMaxAI_MiniMax-M2.5/isl=256/osl=24/conc=16",
			}, names)
		})
	}
}

// TestSweepServerDiesMidLevel: the engine crashes during the first level;
// that level's partial results are written and marked, the rest skipped,
// and Sweep returns an error.
func TestSweepServerDiesMidLevel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a sweep against the simulated engine; skipped with -short")
	}
	t.Parallel()
	// 2 calibration probes + 1 warmup + 3 measured requests, then the crash.
	url, wait := startSim(t, sim.Config{TimeScale: 50, CrashAfterRequests: 6})
	var log bytes.Buffer
	res, err := Sweep(context.Background(), SweepConfig{
		URL: url, Model: simModel, ISL: 64, OSL: 32, Concurrencies: []int{4, 8}, NumPromptsMul: 4, Warmups: 1,
		OutDir: t.TempDir(), Log: &log,
	})
	require.Error(t, err)
	require.ErrorContains(t, err, "concurrency 4")
	require.True(t, errors.Is(wait(), sim.ErrCrashed))
	require.Len(t, res.Levels, 1)
	lv := res.Levels[0]
	require.Equal(t, statusFailed, lv.Status)
	require.Equal(t, []int{8}, res.Skipped)
	require.Equal(t, 3, lv.Metrics.Completed, "the requests completed before the crash")
	require.Positive(t, lv.Metrics.Failed)
	require.Equal(t, 16, lv.Metrics.Completed+lv.Metrics.Failed+lv.Metrics.NotSent)
	for k := range lv.Metrics.Failures {
		require.Contains(t, []failureKind{failStream, failConnection}, k, "a dead server cuts streams and refuses connections")
	}
	data, err := os.ReadFile(lv.ResultFile)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	require.Equal(t, "failed", doc["status"])
	require.Equal(t, 3.0, doc["completed"])
	rows, err := os.ReadFile(res.SummaryCSV)
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(rows), "\n"), "header and the failed level")
	b, err := os.ReadFile(res.BenchFile)
	require.NoError(t, err)
	require.NotContains(t, string(b), "Benchmark", "a failed level is not a benchmark result")
}

// TestSweepInterrupted: a cancelled run (Ctrl-C) keeps the completed level,
// writes the interrupted one marked as such, and reports the cancellation.
func TestSweepInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a sweep against the simulated engine; skipped with -short")
	}
	t.Parallel()
	url, _ := startSim(t, sim.Config{TimeScale: 20})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := Sweep(ctx, SweepConfig{
		URL: url, Model: simModel, ISL: 32, OSL: 64, Concurrencies: []int{2, 4, 8}, NumPromptsMul: 2,
		OutDir: t.TempDir(),
		Progress: func(conc, total int) (func(int), func()) {
			return func(done int) {
				if conc == 4 && done == 1 {
					cancel() // Ctrl-C during the second level
				}
			}, func() {}
		},
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, res.Levels, 2)
	require.Equal(t, statusOK, res.Levels[0].Status)
	require.Equal(t, statusInterrupted, res.Levels[1].Status)
	require.Equal(t, []int{8}, res.Skipped)
	_, err = os.Stat(res.Levels[0].ResultFile)
	require.NoError(t, err)
	data, err := os.ReadFile(res.Levels[1].ResultFile)
	require.NoError(t, err)
	require.Contains(t, string(data), `"status": "interrupted"`)
	b, err := os.ReadFile(res.BenchFile)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(b), "BenchmarkSweep/"), "only the completed level is a benchmark result")
	require.Contains(t, string(b), "conc=2 ")
}

func TestBatchWarning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		conc, bs int
		want     string
	}{
		{8, 8, ""},
		{16, 14, ""}, // a little below: requests finishing and starting
		{8, 9, "above the requested concurrency"},
		{32, 12, "far below the requested concurrency"},
		{4, 0, "no decode step"},
	} {
		got := batchWarning(tc.conc, tc.bs)
		if tc.want == "" {
			require.Empty(t, got, "conc %d bs %d", tc.conc, tc.bs)
		} else {
			require.Contains(t, got, tc.want, "conc %d bs %d", tc.conc, tc.bs)
		}
	}
}

func TestResultDetails(t *testing.T) {
	t.Parallel()
	cfg := SweepConfig{URL: "http://x", ISL: 8, OSL: 4, Concurrencies: []int{1}, Details: true}
	require.NoError(t, cfg.defaults())
	lv := &LevelResult{Conc: 1, NumPrompts: 2, Status: statusFailed, Outputs: []output{
		{TTFT: 20 * time.Millisecond, ITL: gapsOf(5 * time.Millisecond), E2EL: 25 * time.Millisecond, PromptTokens: 8, OutputTokens: 2, TokenEvents: 2, UsageOutput: true, UsagePrompt: true},
		{Failure: failHTTP4xx, Error: "HTTP 400: wrong model", PromptTokens: 8},
	}}
	lv.Metrics = aggregate(lv.Outputs, 2, time.Second, cfg.Percentiles, cfg.SLO)
	var buf bytes.Buffer
	require.NoError(t, levelDoc(&cfg, "m", shaper{PerWord: 1}, lv).Write(&buf))
	data := buf.Bytes()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	require.Equal(t, []any{8.0, 8.0}, doc["input_lens"])
	require.Equal(t, []any{2.0, 0.0}, doc["output_lens"])
	require.Equal(t, []any{0.02, 0.0}, doc["ttfts"])
	require.Equal(t, []any{[]any{0.005}, []any{}}, doc["itls"])
	require.Equal(t, []any{"", "HTTP 400: wrong model"}, doc["errors"])
	require.Equal(t, map[string]any{"http_4xx": 1.0}, doc["failures"])
	require.Nil(t, doc["request_goodput"], "null without SLOs, as vLLM writes")
	require.Equal(t, 20.0, doc["p99_ttft_ms"])
	require.Equal(t, "inf", doc["request_rate"])
}

// TestSweepThinkingModel: a thinking model's reasoning_content deltas are
// tokens. TTFT is to the first of them (not to the end of the thinking),
// and every token is counted, so the level completes.
func TestSweepThinkingModel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a sweep against the simulated engine; skipped with -short")
	}
	t.Parallel()
	const osl, reasoning = 30, 20
	url, _ := startSim(t, sim.Config{TimeScale: 20, ReasoningTokens: reasoning})
	res, err := Sweep(context.Background(), SweepConfig{
		URL: url, Model: simModel, Endpoint: "/v1/chat/completions", ISL: 32, OSL: osl, RangeRatio: 1,
		Concurrencies: []int{2}, NumPromptsMul: 2, OutDir: t.TempDir(),
	})
	require.NoError(t, err)
	lv := res.Levels[0]
	require.Equal(t, statusOK, lv.Status)
	for _, o := range lv.Outputs {
		require.Equal(t, osl, o.OutputTokens)
		// All 30 tokens are events, the 20 reasoning ones first: so TTFT,
		// taken at the first event, is to the first reasoning token. (A
		// timing bound would be flaky on a loaded machine.)
		require.Equal(t, osl, o.TokenEvents, "each reasoning and answer token is an event")
	}
}
