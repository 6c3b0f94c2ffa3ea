package results

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ServerMetrics is what the server's /metrics said over a level: read
// before and after it, and its gauges sampled in between.
type ServerMetrics struct {
	Samples    int     // readings of /metrics, the first and last included
	IntervalMS float64 // between the samples in the level
	Counters   []CounterDelta
	Gauges     []GaugeStats
	// RefreshS, when the server says when it refreshed what /metrics
	// reports (ATOM: every 5 s), is the shortest gap seen between two
	// refreshes, seconds (at least the interval; 0: live readings). The
	// readings before and after the level are then of refreshes after
	// the level's start and end, and the samples between are the
	// distinct refreshes.
	RefreshS float64
	// Stale says why figures may be older than the level (a refresh that
	// did not come in time); "": none.
	Stale string
}

// CounterDelta is how much a counter grew over the level (summed over its
// label sets).
type CounterDelta struct {
	Name  string
	Delta float64
}

// GaugeStats are a gauge's readings over the level (summed over its label
// sets): the highest, their mean, and the last (after the level).
type GaugeStats struct {
	Name             string
	Peak, Mean, Last float64
}

// Counter returns the first of names that was read, and whether one was.
func (m *ServerMetrics) Counter(names ...string) (float64, bool) {
	for _, n := range names {
		for _, c := range m.Counters {
			if c.Name == n {
				return c.Delta, true
			}
		}
	}
	return 0, false
}

// Gauge returns the first of names that was sampled, and whether one was.
func (m *ServerMetrics) Gauge(names ...string) (GaugeStats, bool) {
	for _, n := range names {
		for _, g := range m.Gauges {
			if g.Name == n {
				return g, true
			}
		}
	}
	return GaugeStats{}, false
}

// The metric names each summary column is taken from, in order of
// preference: ATOM's, then vLLM's (current, then older) and SGLang's.
var (
	RunningMetrics     = []string{"atom:requests_running", "vllm:num_requests_running", "sglang:num_running_reqs"}
	WaitingMetrics     = []string{"atom:requests_waiting", "vllm:num_requests_waiting", "sglang:num_queue_reqs"}
	KVUsageMetrics     = []string{"atom:kv_cache_usage_ratio", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"}
	PreemptionMetrics  = []string{"atom:preemptions_total", "vllm:num_preemptions_total", "vllm:num_preemptions"}
	GeneratedMetrics   = []string{"atom:generation_tokens_total", "vllm:generation_tokens_total", "sglang:generation_tokens_total"}
	PrefixCacheMetrics = []string{"atom:prefix_cache_cached_tokens_total", "vllm:prefix_cache_hits_total", "sglang:cached_tokens_total"}
)

// serverColumns are the summary columns taken from ServerMetrics: a peak
// gauge or a counter's growth; empty cells when the server had no such
// metric or was not scraped.
var serverColumns = []struct {
	name  string
	names []string
	gauge bool
}{
	{"srv_running_peak", RunningMetrics, true},
	{"srv_waiting_peak", WaitingMetrics, true},
	{"srv_kv_usage_peak", KVUsageMetrics, true},
	{"srv_preemptions", PreemptionMetrics, false},
	{"srv_generated_tokens", GeneratedMetrics, false},
	{"srv_prefix_cached_tokens", PrefixCacheMetrics, false},
}

// serverValues are the server columns of a level, NaN where there is
// none; nil when the server was not read.
func serverValues(m *ServerMetrics) []float64 {
	if m == nil {
		return nil
	}
	out := nanRow()
	for i, c := range serverColumns {
		if c.gauge {
			if g, ok := m.Gauge(c.names...); ok {
				out[i] = g.Peak
			}
		} else if v, ok := m.Counter(c.names...); ok {
			out[i] = v
		}
	}
	return out
}

func nanRow() []float64 {
	out := make([]float64, len(serverColumns))
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}

func (m *ServerMetrics) document() object {
	var o object
	o.add("samples", m.Samples)
	o.add("interval_ms", m.IntervalMS)
	counters := object{}
	for _, c := range m.Counters {
		counters.add(c.Name, c.Delta)
	}
	o.add("counters", counters)
	gauges := object{}
	for _, g := range m.Gauges {
		var s object
		s.add("peak", g.Peak)
		s.add("mean", g.Mean)
		s.add("last", g.Last)
		gauges.add(g.Name, s)
	}
	o.add("gauges", gauges)
	if m.RefreshS > 0 {
		o.add("refresh_s", m.RefreshS)
	}
	if m.Stale != "" {
		o.add("stale", m.Stale)
	}
	return o
}

// parseServerMetrics reads the server_metrics object of a level result.
func parseServerMetrics(v jsontext.Value) (*ServerMetrics, error) {
	var raw struct {
		Samples    int                `json:"samples"`
		IntervalMS float64            `json:"interval_ms"`
		Counters   map[string]float64 `json:"counters"`
		Gauges     map[string]struct {
			Peak float64 `json:"peak"`
			Mean float64 `json:"mean"`
			Last float64 `json:"last"`
		} `json:"gauges"`
		RefreshS float64 `json:"refresh_s"`
		Stale    string  `json:"stale"`
	}
	if err := json.Unmarshal(v, &raw); err != nil {
		return nil, err
	}
	m := &ServerMetrics{Samples: raw.Samples, IntervalMS: raw.IntervalMS, RefreshS: raw.RefreshS, Stale: raw.Stale}
	for n, d := range raw.Counters {
		m.Counters = append(m.Counters, CounterDelta{n, d})
	}
	for n, g := range raw.Gauges {
		m.Gauges = append(m.Gauges, GaugeStats{n, g.Peak, g.Mean, g.Last})
	}
	m.Sort()
	return m, nil
}

// Sort puts the counters and gauges in name order, as they are written.
func (m *ServerMetrics) Sort() {
	slices.SortFunc(m.Counters, func(a, b CounterDelta) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(m.Gauges, func(a, b GaugeStats) int { return strings.Compare(a.Name, b.Name) })
}

// String is a one-line digest of the summary's server columns.
func (m *ServerMetrics) String() string {
	var b bytes.Buffer
	for i, v := range serverValues(m) {
		if !math.IsNaN(v) {
			fmt.Fprintf(&b, " %s=%s", strings.TrimPrefix(serverColumns[i].name, "srv_"), trimFloat(v))
		}
	}
	return strings.TrimSpace(b.String())
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
