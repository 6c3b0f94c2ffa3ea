package results

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"
)

// The client's token and server fields survive a write and a read.
func TestLevelClientFieldsRoundTrip(t *testing.T) {
	t.Parallel()
	l := sampleLevel(true)
	l.ReasoningTokens, l.TokensPerFrame, l.TokensPerFrameMethod = 620, 3.75, "even"
	l.Details.ReasoningLens = []int{20}
	l.RequestsResent = 3
	var b bytes.Buffer
	require.NoError(t, l.Write(&b))
	require.Contains(t, b.String(), `"tokens_per_frame": 3.75`)
	back, err := parseLevel(b.Bytes())
	require.NoError(t, err)
	if d := cmp.Diff(l, back); d != "" {
		t.Fatalf("round trip differs (-wrote +read):\n%s", d)
	}
}

// Server metrics survive a level file and a summary, with the columns a
// server did not have left empty.
func TestServerMetricsRoundTrip(t *testing.T) {
	t.Parallel()
	l := sampleLevel(false)
	l.Server = &ServerMetrics{Samples: 12, IntervalMS: 500,
		Counters: []CounterDelta{{"vllm:generation_tokens_total", 1550}, {"vllm:num_preemptions_total", 2}},
		Gauges:   []GaugeStats{{"vllm:kv_cache_usage_perc", 0.42, 0.3, 0}, {"vllm:num_requests_running", 8, 6.5, 0}}}
	var b bytes.Buffer
	require.NoError(t, l.Write(&b))
	back, err := parseLevel(b.Bytes())
	require.NoError(t, err)
	if d := cmp.Diff(l, back); d != "" {
		t.Fatalf("round trip differs (-wrote +read):\n%s", d)
	}

	rows := []SummaryRow{SummaryRowOf(l), SummaryRowOf(sampleLevel(false))}
	data := FormatSummary(rows)
	require.Contains(t, string(data), ",8,8,,0.42,2,1550,\n", "running and KV peaks, preemptions, generated tokens; no waiting or prefix-cache metric")
	got, err := readSummary(bytes.NewReader(data))
	require.NoError(t, err)
	require.Nil(t, got[1].Server, "a level without server metrics")
	if d := cmp.Diff(rows[0].Server, got[0].Server, cmpopts.EquateNaNs()); d != "" {
		t.Fatalf("server columns differ (-wrote +read):\n%s", d)
	}
}

// The profile window survives a level file.
func TestProfileWindowRoundTrip(t *testing.T) {
	t.Parallel()
	l := sampleLevel(false)
	l.Window = &ProfileWindow{StartS: -0.01, StopS: 2.5, StoppedBy: "steps", SteadyS: 0.02, DecodeSteps: 101.25, StepsFrom: "streamed tokens / concurrency", StopWaitS: 0.3}
	var b bytes.Buffer
	require.NoError(t, l.Write(&b))
	require.Contains(t, b.String(), `"stopped_by": "steps"`)
	back, err := parseLevel(b.Bytes())
	require.NoError(t, err)
	if d := cmp.Diff(l, back); d != "" {
		t.Fatalf("round trip differs (-wrote +read):\n%s", d)
	}
}
