package bench

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
)

func TestClientLoadOf(t *testing.T) {
	t.Parallel()
	out := func(span, wait time.Duration) output {
		return output{Start: time.Unix(1, 0), E2EL: time.Second, ReadSpan: span, ReadWait: wait}
	}
	// Two streams of 1 s reading, waiting 0.2 s and 0.1 s in their reads:
	// away from them 1 − 0.3/2 = 85% of the time.
	outs := []output{out(time.Second, 200*time.Millisecond), out(time.Second, 100*time.Millisecond)}
	m := &metrics{}
	m.TPOT.Mean = 50
	// The server generated 400 tokens in 2 s with 4 requests running on
	// average: 4 · 2 s / 400 = 20 ms a token of a sequence.
	srv := &results.ServerMetrics{
		Counters: []results.CounterDelta{{Name: "atom:generation_tokens_total", Delta: 400}},
		Gauges:   []results.GaugeStats{{Name: "atom:requests_running", Peak: 4, Mean: 4}},
	}
	c := clientLoadOf(outs, m, srv, 500*time.Millisecond, 2*time.Second)
	require.InDelta(t, 0.85, c.BusyShare, 1e-9)
	require.InDelta(t, 20, c.ServerTPOTMS, 1e-9)
	require.InDelta(t, 0.5, c.CPUS, 1e-9)
	require.InDelta(t, 0.5/(2*float64(c.Cores)), c.CPUShare, 1e-9)
	require.True(t, c.Bound, "50 ms against 20 ms, 85% away from its reads")
	w, ok := clientBoundWarning(c)
	require.True(t, ok)
	require.Contains(t, w.Message, "2.5× the server's own 20.00 ms")

	// The same pace with a client that waits in its reads is not bound,
	// nor is a busy client that keeps the server's pace.
	outs = []output{out(time.Second, 990*time.Millisecond)}
	require.False(t, clientLoadOf(outs, m, srv, 0, 2*time.Second).Bound)
	m.TPOT.Mean = 22
	require.False(t, clientLoadOf([]output{out(time.Second, 0)}, m, srv, 0, 2*time.Second).Bound)
	// Without /metrics nothing is called bound here (the report compares
	// with the trace); no reads timed: the share is unknown.
	c = clientLoadOf(nil, m, nil, -1, 2*time.Second)
	require.False(t, c.Bound)
	require.Equal(t, -1.0, c.BusyShare)
	require.Zero(t, c.ServerTPOTMS)
}

func TestTimedBody(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	clock := func() time.Time { now = now.Add(time.Millisecond); return now }
	b := &timedBody{ReadCloser: io.NopCloser(bytes.NewReader(make([]byte, 10))), clock: clock}
	p := make([]byte, 4)
	for {
		if _, err := b.Read(p); err != nil {
			break
		}
	}
	var o output
	b.record(&o)
	// Four reads (4, 4, 2 bytes, then EOF), each 1 ms on the clock.
	require.Equal(t, 4*time.Millisecond, o.ReadWait)
	require.Equal(t, 7*time.Millisecond, o.ReadSpan)
}
