package bench

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// load says how a level's requests are sent.
type load struct {
	MaxConcurrency int     // in-flight limit; 0 = unlimited
	RequestRate    float64 // requests per second; 0 or +Inf = all at once
	Burstiness     float64 // gamma shape of the gaps: 1 = Poisson; 0 means 1
	Seed           uint64
	// StopOnConnection stops sending new requests after a connection
	// failure: the server is most likely gone.
	StopOnConnection bool
	// Progress, when set, is called after each finished request.
	Progress func(done int)
	// InFlight, when set, counts the requests in flight as they go.
	InFlight *atomic.Int64
}

// runLoad sends the requests of src under load l and returns one Output per
// sent request, in request order, with the wall-clock start and end of the
// run. A cancelled ctx stops sending and cancels the requests in flight.
//
// Requests are built (and encoded) as they are needed: the first wave (one
// per stream) before the clock starts, then a goroutine keeps a few ready
// ahead of the senders, so memory follows the concurrency, not the number
// of prompts.
func runLoad(ctx context.Context, c *client, src requestSource, l load) (outs []output, start, end time.Time) {
	sendCtx, stopSending := context.WithCancel(ctx)
	defer stopSending()
	n := src.Len()
	conc := l.MaxConcurrency
	if conc <= 0 {
		conc = n
	}
	first := make([]request, min(n, conc))
	for i := range first {
		first[i] = c.encode(src.Next())
	}
	const ahead = 64
	pool := make(chan request, ahead)
	var making sync.WaitGroup
	if n > len(first) {
		making.Add(1)
		go func() {
			defer making.Done()
			for range n - len(first) {
				r := c.encode(src.Next())
				select {
				case pool <- r:
				case <-sendCtx.Done():
					return
				}
			}
		}()
	}
	// A stream is a token holding the moment it came free.
	streams := make(chan time.Time, max(conc, 1))
	results := make([]output, n)
	sent := make([]bool, n)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done int
	)
	gaps := newGapper(l)
	start = time.Now()
	next := start
	for range cap(streams) {
		streams <- start
	}
loop:
	for i := range n {
		if gaps != nil && i > 0 {
			next = next.Add(gaps.next())
			if !sleepUntil(sendCtx, next) {
				break
			}
		}
		// due is when the request should go: its time in the schedule,
		// or the moment a stream came free when it had to wait for one.
		// What passes from then until it is handed to the transport is the
		// client's own lag (Output.SendLag).
		var due time.Time
		select {
		case freed := <-streams:
			due = next
			if freed.After(due) {
				due = freed
			}
		case <-sendCtx.Done():
			break loop
		}
		release := func() { streams <- time.Now() }
		if sendCtx.Err() != nil {
			release()
			break
		}
		var req request
		if i < len(first) {
			req, first[i] = first[i], request{} // the prompt is the sender's now
		} else {
			select {
			case req = <-pool:
			case <-sendCtx.Done():
				release()
				break loop
			}
		}
		sent[i] = true
		if l.InFlight != nil {
			l.InFlight.Add(1)
		}
		wg.Add(1)
		go func(i int, req request, due time.Time) {
			defer wg.Done()
			o := c.Do(ctx, req)
			if l.InFlight != nil {
				l.InFlight.Add(-1)
			}
			if !o.Start.IsZero() {
				o.SendLag = max(o.Start.Sub(due), 0)
			}
			release()
			results[i] = o
			if o.Failure == failConnection && l.StopOnConnection {
				stopSending()
			}
			if l.Progress != nil {
				mu.Lock() // in order, one at a time
				done++
				l.Progress(done)
				mu.Unlock()
			}
		}(i, req, due)
	}
	wg.Wait()
	end = time.Now()
	stopSending()
	making.Wait()
	// The sent requests' outputs, in place.
	k := 0
	for i := range results {
		if sent[i] {
			results[k] = results[i]
			k++
		}
	}
	clear(results[k:])
	return results[:k], start, end
}

// sleepUntil waits until t or until ctx is done; it reports whether t came.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// gapper draws inter-arrival gaps from a gamma distribution with shape
// burstiness and mean 1/rate (vLLM's convention: burstiness 1 is Poisson).
type gapper struct {
	rng          *rand.Rand
	shape, scale float64
}

func newGapper(l load) *gapper {
	if l.RequestRate <= 0 || math.IsInf(l.RequestRate, 1) {
		return nil
	}
	shape := l.Burstiness
	if shape <= 0 {
		shape = 1
	}
	return &gapper{
		rng:   rand.New(rand.NewPCG(l.Seed, 0x5eed)),
		shape: shape,
		scale: 1 / (l.RequestRate * shape),
	}
}

func (g *gapper) next() time.Duration {
	return time.Duration(gamma(g.rng, g.shape) * g.scale * float64(time.Second))
}

// gamma draws from Gamma(shape, 1) with Marsaglia and Tsang's method.
func gamma(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		// Boost: Gamma(a) = Gamma(a+1) · U^(1/a).
		return gamma(rng, shape+1) * math.Pow(rng.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
