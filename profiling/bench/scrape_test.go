package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/sim"
)

func TestParsePrometheus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		want       map[string]promValue
		err        string
	}{
		{
			name: "ATOM's names",
			text: "# HELP atom:requests_running Number of requests.\n# TYPE atom:requests_running gauge\natom:requests_running 4\n" +
				"# TYPE atom:generation_tokens counter\natom:generation_tokens_total 1.5e3\n" +
				"# TYPE atom:kv_cache_blocks_total gauge\natom:kv_cache_blocks_total 65536\n" +
				"atom:untyped_total 3\natom:untyped 2\n",
			want: map[string]promValue{"atom:requests_running": {4, true}, "atom:generation_tokens_total": {1500, false},
				"atom:kv_cache_blocks_total": {65536, true}, "atom:untyped_total": {3, false}, "atom:untyped": {2, true}},
		},
		{
			name: "vLLM's: labels summed, histograms and other namespaces left out",
			text: "# TYPE vllm:num_requests_running gauge\n" +
				`vllm:num_requests_running{model_name="a",engine="0"} 3` + "\n" +
				`vllm:num_requests_running{model_name="b}\"x",engine="1"} 2 1700000000000` + "\n" +
				"# TYPE vllm:e2e_request_latency_seconds histogram\n" +
				`vllm:e2e_request_latency_seconds_bucket{le="0.3"} 7` + "\n" +
				"vllm:e2e_request_latency_seconds_count 7\n" +
				"# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 12.5\n" +
				"# TYPE vllm:num_preemptions counter\nvllm:num_preemptions_total 0\n",
			want: map[string]promValue{"vllm:num_requests_running": {5, true}, "vllm:num_preemptions_total": {0, false}},
		},
		{
			name: "NaN and infinite samples left out (no value yet; JSON cannot hold them)",
			text: "# TYPE vllm:gpu_prefix_cache_hit_rate gauge\nvllm:gpu_prefix_cache_hit_rate NaN\n" +
				"# TYPE vllm:x counter\nvllm:x_total +Inf\nvllm:y -Inf\n" +
				`vllm:num_requests_running{engine="0"} 2` + "\n" + `vllm:num_requests_running{engine="1"} NaN` + "\n",
			want: map[string]promValue{"vllm:num_requests_running": {2, true}},
		},
		{name: "an HTML page", text: "<html><body>metrics</body></html>\n", err: "line 1"},
		{name: "JSON", text: `{"running": 4}`, err: "line 1"},
		{name: "a value that is no number", text: "atom:x abc\n", err: "not a number"},
		{name: "unterminated labels", text: `atom:x{a="1" 2` + "\n", err: "unterminated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePrometheus([]byte(tc.text))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(promValue{})); d != "" {
				t.Fatalf("(-want +got):\n%s", d)
			}
		})
	}
}

// With auto, a server without engine metrics is run without them; with
// on, that is an error naming the URL and the way out.
func TestCheckMetrics(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		mode    string
		read    bool
		err     string
	}{
		{"not found, auto", http.NotFound, ScrapeAuto, false, ""},
		{"not found, on", http.NotFound, ScrapeOn, false, "HTTP 404"},
		{"an HTML page, on", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "<html>hi</html>") }, ScrapeOn, false, "not Prometheus text"},
		{"a 9 MB answer, on", func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, strings.Repeat("atom:requests_running 0\n", 9<<20/24))
		}, ScrapeOn, false, "larger than 8 MB"},
		{"only process metrics, on", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "process_open_fds 9\n") }, ScrapeOn, false, "no atom:"},
		{"engine metrics, auto", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "atom:requests_running 0\n") }, ScrapeAuto, true, ""},
		{"engine metrics, off", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "atom:requests_running 0\n") }, ScrapeOff, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			cfg := SweepConfig{URL: srv.URL, ISL: 1, OSL: 1, Concurrencies: []int{1}, ScrapeMetrics: tc.mode}
			require.NoError(t, cfg.defaults())
			var log bytes.Buffer
			cfg.Log = &log
			err := cfg.checkMetrics(context.Background(), srv.Client())
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.ErrorContains(t, err, "--scrape-metrics off")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.read, cfg.metricsURL != "", log.String())
		})
	}
}

// A level shorter than the sampling interval keeps its counters' growth
// but no gauges: the readings before and after it are of an idle server.
func TestScrapeShortLevelKeepsNoGauges(t *testing.T) {
	t.Parallel()
	var reads int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reads++
		fmt.Fprintf(w, "# TYPE atom:requests_running gauge\natom:requests_running 0\n# TYPE atom:generation_tokens counter\natom:generation_tokens_total %d\n", 100*reads)
	}))
	defer srv.Close()
	s, err := startScrape(context.Background(), srv.Client(), srv.URL, time.Hour)
	require.NoError(t, err)
	m, err := s.finish(context.Background())
	require.NoError(t, err)
	require.Equal(t, 2, m.Samples)
	gen, ok := m.Counter(results.GeneratedMetrics...)
	require.True(t, ok)
	require.Equal(t, 100.0, gen)
	require.Empty(t, m.Gauges, "no gauge was read under load")
	require.NotContains(t, m.String(), "running_peak")
}

// A gauge summed over label sets keeps no binary noise in its peak and
// last reading (0.1 + 0.2 is 0.3 in summary.csv, not 0.30000000000000004).
func TestScrapeGaugeSumsRounded(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "# TYPE vllm:kv_cache_usage_perc gauge\n"+`vllm:kv_cache_usage_perc{engine="0"} 0.1`+"\n"+`vllm:kv_cache_usage_perc{engine="1"} 0.2`+"\n")
	}))
	defer srv.Close()
	s, err := startScrape(context.Background(), srv.Client(), srv.URL, time.Millisecond)
	require.NoError(t, err)
	for {
		s.mu.Lock()
		n := s.samples
		s.mu.Unlock()
		if n >= 2 {
			break
		}
		runtime.Gosched()
	}
	m, err := s.finish(context.Background())
	require.NoError(t, err)
	g, ok := m.Gauge(results.KVUsageMetrics...)
	require.True(t, ok)
	require.Equal(t, results.GaugeStats{Name: "vllm:kv_cache_usage_perc", Peak: 0.3, Mean: 0.3, Last: 0.3}, g)
}

// A /metrics that never answers is named as such, with how long it was
// waited for, not as net/http's "context deadline exceeded".
func TestFetchMetricsNoAnswer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := fetchMetrics(ctx, srv.Client(), srv.URL+"/metrics")
	require.Error(t, err)
	require.Regexp(t, `^GET `+regexp.QuoteMeta(srv.URL)+`/metrics: no answer within [0-9.]+m?s$`, err.Error())
}

// A sweep against the simulated engine stores what its /metrics said over
// each level: counters' growth (the level's generated tokens and finished
// requests, warmups excluded) and gauges' peaks, in the JSON and the
// summary.
func TestSweepScrapesMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a level against the simulated engine; skipped with -short")
	}
	t.Parallel()
	const conc = 4
	lv, doc := sweepSim(t, sim.Config{TimeScale: 5}, SweepConfig{ISL: 64, OSL: 48, Concurrencies: []int{conc}, NumPromptsMul: 3,
		Warmups: 1, ScrapeInterval: 20 * time.Millisecond})
	m := doc.Server
	require.NotNil(t, m, "%v", lv.Warnings)
	require.Equal(t, lv.Server, m, "the file holds what the level measured")
	gen, ok := m.Counter(results.GeneratedMetrics...)
	require.True(t, ok)
	require.Equal(t, float64(doc.TotalOutputTokens), gen, "generated tokens over the level, warmup excluded")
	fin, ok := m.Counter("atom:requests_finished_total")
	require.True(t, ok)
	require.Equal(t, float64(doc.Completed), fin)
	run, ok := m.Gauge(results.RunningMetrics...)
	require.True(t, ok)
	require.GreaterOrEqual(t, run.Peak, 1.0, "requests ran while sampled")
	require.LessOrEqual(t, run.Peak, float64(conc))
	require.Greater(t, m.Samples, 2, "sampled during the level")

	rows, err := results.LoadSummary(results.Run(filepath.Dir(lv.ResultFile)).Summary())
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, run.Peak, rows[0].Server[0], "srv_running_peak")
	require.Equal(t, gen, rows[0].Server[4], "srv_generated_tokens")

	data, err := os.ReadFile(lv.ResultFile)
	require.NoError(t, err)
	require.Contains(t, string(data), `"server_metrics"`)
}

// parsePrometheus never panics, and keeps only the engines' metrics.
func FuzzParsePrometheus(f *testing.F) {
	f.Add([]byte("# TYPE atom:requests_running gauge\natom:requests_running 4\n"))
	f.Add([]byte(`vllm:num_requests_running{model_name="a\"}"} 3 17` + "\n"))
	f.Add([]byte("# TYPE vllm:x histogram\nvllm:x_bucket{le=\"+Inf\"} 2\nvllm:x_count 2\n"))
	f.Add([]byte("<html>\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parsePrometheus(data)
		if err != nil {
			require.Nil(t, m)
			return
		}
		for name := range m {
			require.True(t, hasEnginePrefix(name), name)
		}
	})
}
