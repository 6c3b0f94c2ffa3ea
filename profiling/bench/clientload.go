package bench

import (
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/results"
)

// A level is client-bound when the client's TPOT is more than
// clientBoundRatio times the server's own and the client spent more than
// clientBusyBound of its streams' time away from its reads: it read bytes
// the server had written long before, so what it measured is its own pace.
const (
	clientBoundRatio = 1.2
	clientBusyBound  = 0.5
)

// timedBody times the reads of a response body: the time spent waiting in
// Read (for the server's bytes, or for bytes already buffered), and the
// span from the first read to the end of the last.
type timedBody struct {
	io.ReadCloser
	clock       func() time.Time
	first, last time.Time
	wait        time.Duration
}

func (b *timedBody) Read(p []byte) (int, error) {
	t0 := b.clock()
	if b.first.IsZero() {
		b.first = t0
	}
	n, err := b.ReadCloser.Read(p)
	b.last = b.clock()
	b.wait += b.last.Sub(t0)
	return n, err
}

// record puts the reads' figures in out.
func (b *timedBody) record(out *output) {
	if !b.first.IsZero() {
		out.ReadSpan, out.ReadWait = b.last.Sub(b.first), b.wait
	}
}

// clientLoadOf is the client's load over a level: its CPU time (cpu,
// -1 when unknown) over wall, the streams' busy share, and its TPOT
// against the server's own from /metrics (srv, nil when not read).
func clientLoadOf(outs []output, m *metrics, srv *results.ServerMetrics, cpu, wall time.Duration) *results.ClientLoad {
	c := &results.ClientLoad{WallS: wall.Seconds(), Cores: runtime.GOMAXPROCS(0), ClientTPOTMS: m.TPOT.Mean, BusyShare: -1}
	if cpu >= 0 && wall > 0 {
		c.CPUS = cpu.Seconds()
		c.CPUShare = c.CPUS / (c.WallS * float64(c.Cores))
	}
	var span, wait time.Duration
	for i := range outs {
		if o := &outs[i]; o.OK() && o.ReadSpan > 0 {
			span += o.ReadSpan
			wait += min(o.ReadWait, o.ReadSpan)
		}
	}
	if span > 0 {
		c.BusyShare = 1 - float64(wait)/float64(span)
	}
	if srv != nil && wall > 0 {
		gen, okG := srv.Counter(results.GeneratedMetrics...)
		run, okR := srv.Gauge(results.RunningMetrics...)
		if okG && okR && gen > 0 && run.Mean > 0 {
			c.ServerTPOTMS = 1000 * run.Mean * wall.Seconds() / gen
		}
	}
	c.Bound = c.ServerTPOTMS > 0 && c.ClientTPOTMS > clientBoundRatio*c.ServerTPOTMS && c.BusyShare > clientBusyBound
	return c
}

// clientBoundWarning is the client_bound warning of a level whose client
// could not keep up with the server's streams.
func clientBoundWarning(c *results.ClientLoad) (diag.Warning, bool) {
	if c == nil || !c.Bound {
		return diag.Warning{}, false
	}
	return diag.New(diag.ClientBound, fmt.Sprintf(
		"the client could not read its streams as fast as the server wrote them: its TPOT %.2f ms is %.1f× the server's own %.2f ms (from /metrics), and it spent %.0f%% of its streams' time away from its reads (CPU %.0f%% of %d cores): the level's latencies and throughput measure the client; run bench on a less loaded machine, or lower the concurrency",
		c.ClientTPOTMS, c.ClientTPOTMS/c.ServerTPOTMS, c.ServerTPOTMS, 100*c.BusyShare, 100*c.CPUShare, c.Cores)), true
}
