package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/profile-model/profile-model/internal/results"
)

// Scrape modes of SweepConfig.ScrapeMetrics.
const (
	ScrapeAuto = "auto" // when GET /metrics answers with engine metrics
	ScrapeOn   = "on"   // always; a server without /metrics is an error
	ScrapeOff  = "off"
)

// engineNamespaces are the metric name prefixes read from /metrics: the
// engines' own metrics, not the process or runtime ones beside them.
var engineNamespaces = []string{"atom:", "vllm:", "sglang:"}

// promValue is one metric read from /metrics, summed over its label sets.
type promValue struct {
	v     float64
	gauge bool
}

// parsePrometheus reads the counters and gauges of the engine namespaces
// from Prometheus text exposition format. A counter is keyed by its sample
// name (with the _total suffix the client libraries add); histograms and
// summaries are left out, and so is a NaN or infinite sample (a gauge with
// nothing to report yet; it would poison the sums and cannot be written to
// JSON). It fails on text that is not the format (a line that is neither a
// comment nor a sample), and finds nothing in text of another server.
func parsePrometheus(data []byte) (map[string]promValue, error) {
	types := map[string]string{}
	out := map[string]promValue{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(s, "#"); ok {
			f := strings.Fields(rest)
			if len(f) >= 3 && f[0] == "TYPE" {
				types[f[1]] = f[2]
			}
			continue
		}
		name, value, err := promSample(s)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if !hasEnginePrefix(name) || math.IsNaN(value) || math.IsInf(value, 0) {
			continue
		}
		typ, ok := types[name]
		if !ok {
			if base, found := strings.CutSuffix(name, "_total"); found {
				typ = types[base]
			}
		}
		switch typ {
		case "counter", "gauge", "", "untyped":
		default:
			continue // a histogram's or summary's samples
		}
		if typ == "" && (strings.HasSuffix(name, "_bucket") || strings.HasSuffix(name, "_sum") || strings.HasSuffix(name, "_count")) {
			continue
		}
		pv := out[name]
		pv.v += value
		// Without a TYPE line, a _total name is a counter's.
		pv.gauge = typ == "gauge" || typ != "counter" && !strings.HasSuffix(name, "_total")
		out[name] = pv
	}
	return out, sc.Err()
}

func hasEnginePrefix(name string) bool {
	for _, p := range engineNamespaces {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// promSample reads `name{labels} value [timestamp]`.
func promSample(s string) (name string, v float64, err error) {
	i := strings.IndexAny(s, "{ \t")
	if i <= 0 {
		return "", 0, fmt.Errorf("not a sample line: %.80q", s)
	}
	name, rest := s[:i], s[i:]
	if rest[0] == '{' {
		// Skip the labels; a quoted value may hold '}' or an escaped quote.
		quoted, end := false, -1
		for j := 1; j < len(rest) && end < 0; j++ {
			switch c := rest[j]; {
			case c == '\\' && quoted:
				j++
			case c == '"':
				quoted = !quoted
			case c == '}' && !quoted:
				end = j
			}
		}
		if end < 0 {
			return "", 0, fmt.Errorf("unterminated labels: %.80q", s)
		}
		rest = rest[end+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 1 || len(f) > 2 {
		return "", 0, fmt.Errorf("not a sample line: %.80q", s)
	}
	if v, err = strconv.ParseFloat(f[0], 64); err != nil {
		return "", 0, fmt.Errorf("sample %s: value %q is not a number", name, f[0])
	}
	return name, v, nil
}

// maxMetricsBytes bounds what is read of a /metrics answer.
const maxMetricsBytes = 8 << 20

// fetchMetrics reads GET url (the server's /metrics).
func fetchMetrics(ctx context.Context, hc *http.Client, url string) (map[string]promValue, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("GET %s: no answer within %v", url, time.Since(start).Round(100*time.Millisecond))
		}
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetricsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	if len(body) > maxMetricsBytes {
		return nil, fmt.Errorf("GET %s: the answer is larger than %d MB, more than an engine's metrics", url, maxMetricsBytes>>20)
	}
	m, err := parsePrometheus(body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: not Prometheus text: %w", url, err)
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("GET %s: no %s metrics in the answer", url, strings.Join(engineNamespaces, ", "))
	}
	return m, nil
}

// gaugeAcc accumulates a gauge's readings.
type gaugeAcc struct {
	peak, sum, last float64
	n               int
}

func (g *gaugeAcc) add(v float64) {
	if g.n == 0 || v > g.peak {
		g.peak = v
	}
	g.sum += v
	g.last = v
	g.n++
}

// scraper reads a server's /metrics before a level, every interval during
// it (for the gauges' peaks; one reading at a time, so a slow server
// slows the sampling, never stacks requests), and after it.
type scraper struct {
	hc       *http.Client
	url      string
	interval time.Duration

	mu        sync.Mutex
	before    map[string]promValue
	gauges    map[string]*gaugeAcc
	samples   int
	lastStamp float64  // the last snapshot's refresh time (0: live readings)
	refresh   float64  // the shortest gap between two refreshes seen, seconds
	stale     []string // why figures may be older than the level
	stop      context.CancelFunc
	done      chan struct{}
}

// refreshStamp is the gauge in which ATOM's /metrics says when its
// snapshot was taken: its API server refreshes the snapshot every 5 s
// (atom/entrypoints/openai/api_server.py, _METRICS_REFRESH_INTERVAL_SECONDS),
// so a reading may be that much older than the request.
const refreshStamp = "atom:metrics_last_refresh_timestamp_seconds"

// refreshWait bounds the wait for a refresh newer than a reading: two
// of ATOM's intervals.
const refreshWait = 12 * time.Second

// stamp is the refresh time a reading says (0: a live reading).
func stamp(m map[string]promValue) float64 { return m[refreshStamp].v }

// fetchFresh reads /metrics; when the server refreshes it on an interval,
// it reads again until the snapshot is of a refresh after the call (the
// stamp moved past the first reading's), at most refreshWait. fresh is
// false when that did not come.
func fetchFresh(ctx context.Context, hc *http.Client, url string, poll time.Duration) (m map[string]promValue, fresh bool, err error) {
	m, err = fetchMetrics(ctx, hc, url)
	if err != nil || stamp(m) == 0 {
		return m, true, err
	}
	first, deadline := stamp(m), time.Now().Add(refreshWait)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return m, false, nil
		case <-time.After(poll):
		}
		next, err := fetchMetrics(ctx, hc, url)
		if err != nil {
			return m, false, nil
		}
		if m = next; stamp(m) > first {
			return m, true, nil
		}
	}
	return m, false, nil
}

// refreshPoll is how often a refreshing /metrics is read for a new snapshot.
func refreshPoll(interval time.Duration) time.Duration { return min(interval, 250*time.Millisecond) }

// startScrape reads /metrics once and starts the sampling.
func startScrape(ctx context.Context, hc *http.Client, url string, interval time.Duration) (*scraper, error) {
	before, fresh, err := fetchFresh(ctx, hc, url, refreshPoll(interval))
	if err != nil {
		return nil, err
	}
	s := &scraper{hc: hc, url: url, interval: interval, before: before, gauges: map[string]*gaugeAcc{}, done: make(chan struct{})}
	if !fresh {
		s.stale = append(s.stale, fmt.Sprintf("no refresh of /metrics within %v before the level: its counters' growth may include what came before", refreshWait))
	}
	s.take(before)
	var sctx context.Context
	sctx, s.stop = context.WithCancel(ctx)
	go s.loop(sctx)
	return s, nil
}

func (s *scraper) take(m map[string]promValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := stamp(m); st != 0 {
		// A snapshot already taken says nothing new.
		if st == s.lastStamp {
			return
		}
		if d := st - s.lastStamp; s.lastStamp != 0 && (s.refresh == 0 || d < s.refresh) {
			s.refresh = d // the shortest gap seen: the refresh interval
		}
		s.lastStamp = st
	}
	s.samples++
	for name, v := range m {
		if !v.gauge || name == refreshStamp {
			continue
		}
		g := s.gauges[name]
		if g == nil {
			g = &gaugeAcc{}
			s.gauges[name] = g
		}
		g.add(v.v)
	}
}

func (s *scraper) loop(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if m, err := fetchMetrics(ctx, s.hc, s.url); err == nil {
			s.take(m)
		}
	}
}

// finish stops the sampling, reads /metrics once more and returns the
// counters' growth and the gauges' readings.
func (s *scraper) finish(ctx context.Context) (*results.ServerMetrics, error) {
	s.stop()
	<-s.done
	after, fresh, err := fetchFresh(ctx, s.hc, s.url, refreshPoll(s.interval))
	if err != nil {
		return nil, err
	}
	if !fresh {
		s.stale = append(s.stale, fmt.Sprintf("no refresh of /metrics within %v after the level: its counters' growth may miss its end", refreshWait))
	}
	s.take(after)
	m := &results.ServerMetrics{Samples: s.samples, IntervalMS: float64(s.interval) / 1e6, Stale: strings.Join(s.stale, "; ")}
	if s.lastStamp != 0 {
		m.RefreshS = roundSmall(math.Round(s.refresh*1000) / 1000)
	}
	for name, v := range after {
		if v.gauge || name == refreshStamp {
			continue
		}
		if b, ok := s.before[name]; ok {
			m.Counters = append(m.Counters, results.CounterDelta{Name: name, Delta: roundSmall(v.v - b.v)})
		}
	}
	for name, g := range s.gauges {
		// With no reading between the first and the last (a level shorter
		// than the interval) the gauges saw only an idle server: a peak of
		// 0 running requests at concurrency 8 would mislead, so none is
		// kept.
		if _, ok := after[name]; !ok || s.samples <= 2 {
			continue
		}
		m.Gauges = append(m.Gauges, results.GaugeStats{Name: name, Peak: roundSmall(g.peak), Mean: roundSmall(g.sum / float64(g.n)), Last: roundSmall(g.last)})
	}
	m.Sort()
	return m, nil
}

// roundSmall rounds away binary noise (0.30000000000000004) for the file.
func roundSmall(v float64) float64 { return math.Round(v*1e9) / 1e9 }

// checkMetrics decides whether the sweep reads the server's /metrics.
func (cfg *SweepConfig) checkMetrics(ctx context.Context, hc *http.Client) error {
	if cfg.ScrapeMetrics == ScrapeOff {
		return nil
	}
	url := cfg.URL + "/metrics"
	_, err := fetchMetrics(ctx, hc, url)
	switch {
	case err == nil:
		cfg.metricsURL = url
		fmt.Fprintf(cfg.Log, "server metrics: %s read before and after each level, gauges every %v\n", url, cfg.ScrapeInterval)
	case cfg.ScrapeMetrics == ScrapeOn:
		return fmt.Errorf("--scrape-metrics on: %w (pass --scrape-metrics off to run without)", err)
	default:
		fmt.Fprintf(cfg.Log, "server metrics: not read (%v)\n", err)
	}
	return nil
}
