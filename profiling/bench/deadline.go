package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync/atomic"
	"time"
)

// DefaultStallTimeout is how long a request may go without a byte from the
// server (waiting for the response head or for the next event) before it
// fails as stalled. An engine busy with a long prefill still answers the
// head at once and streams events at least every step; a minute of silence
// is a hung server or a dead connection.
const DefaultStallTimeout = 60 * time.Second

// defaultLevelTimeout is the deadline of a level of numPrompts requests
// (warmups included) of at most osl output tokens, conc at a time, sent at
// rate requests per second (0 or +Inf: all at once): five minutes, plus for
// each wave of conc requests 30 s of queueing and prefill and 250 ms a
// token (4 tokens/s per stream, slower than any GPU serves), plus the time
// the schedule takes to send them. It bounds a server that trickles bytes
// or never ends a stream, which the stall timeout cannot see, without
// cutting a slow engine short.
func defaultLevelTimeout(numPrompts, conc, osl int, rate float64) time.Duration {
	conc = max(conc, 1)
	waves := (max(numPrompts, 1) + conc - 1) / conc
	d := 5*time.Minute + time.Duration(waves)*(30*time.Second+time.Duration(osl)*250*time.Millisecond)
	if rate > 0 && !math.IsInf(rate, 1) {
		d += time.Duration(float64(numPrompts) / rate * float64(time.Second))
	}
	return d
}

// ErrStall, ErrLevelDeadline and ErrProbeDeadline are the causes of a
// request's context ending at one of the client's bounds; errors.Is finds
// them in a *BoundError.
var (
	errStall         = errors.New("stalled")
	errLevelDeadline = errors.New("level deadline passed")
	errProbeDeadline = errors.New("probe deadline passed")
	errRequestBound  = errors.New("request timeout passed")
)

// boundError says which of the client's bounds ended a request, and its
// flag.
type boundError struct {
	Cause error         // ErrStall, ErrLevelDeadline, ErrProbeDeadline or the request timeout
	Limit time.Duration // the bound
	Flag  string        // the flag that sets it
}

func (e *boundError) Error() string {
	switch e.Cause {
	case errStall:
		return fmt.Sprintf("stalled: no byte from the server for %v (%s)", e.Limit, e.Flag)
	case errLevelDeadline:
		return fmt.Sprintf("the level's deadline of %v passed (%s)", e.Limit, e.Flag)
	case errProbeDeadline:
		return fmt.Sprintf("the probes' deadline of %v passed (%s)", e.Limit, e.Flag)
	}
	return fmt.Sprintf("the request timeout of %v passed (%s)", e.Limit, e.Flag)
}

func (e *boundError) Unwrap() error { return e.Cause }

// kind is the failure kind of a request ended by the bound: a stall is its
// own kind; requests a level or probe deadline cut are cancelled (they did
// nothing wrong themselves); the per-request timeout is a timeout.
func (e *boundError) kind() failureKind {
	switch e.Cause {
	case errStall:
		return failStall
	case errLevelDeadline, errProbeDeadline:
		return failCancelled
	}
	return failTimeout
}

// withBound returns ctx ending after d with a BoundError as its cause; d
// <= 0 leaves ctx as it is.
func withBound(ctx context.Context, d time.Duration, cause error, flag string) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, d, &boundError{Cause: cause, Limit: d, Flag: flag})
}

// boundOf is the client bound that ended ctx, nil when none did (yet).
func boundOf(ctx context.Context) *boundError {
	var b *boundError
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &b) {
		return b
	}
	return nil
}

// watchdog cancels a request's context when no byte has come for limit.
// Each read stores a time (one atomic store, not a timer reset per token);
// the timer checks it when it fires and sleeps again for what is left.
type watchdog struct {
	limit   time.Duration
	base    time.Time
	last    atomic.Int64 // time.Since(base) at the last byte
	stopped atomic.Bool
	timer   *time.Timer
	cancel  context.CancelCauseFunc
}

// watch returns ctx with a watchdog of limit started now; limit <= 0
// returns ctx and a nil watchdog (whose methods do nothing).
func watch(ctx context.Context, limit time.Duration) (context.Context, *watchdog) {
	if limit <= 0 {
		return ctx, nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	w := &watchdog{limit: limit, base: time.Now(), cancel: cancel}
	w.timer = time.AfterFunc(limit, w.check)
	return ctx, w
}

func (w *watchdog) check() {
	if w.stopped.Load() {
		return
	}
	idle := time.Since(w.base) - time.Duration(w.last.Load())
	if idle >= w.limit {
		w.cancel(&boundError{Cause: errStall, Limit: w.limit, Flag: "--stall-timeout"})
		return
	}
	w.timer.Reset(w.limit - idle)
}

// touch records that a byte came.
func (w *watchdog) touch() {
	if w != nil {
		w.last.Store(int64(time.Since(w.base)))
	}
}

func (w *watchdog) stop() {
	if w != nil {
		w.stopped.Store(true)
		w.timer.Stop()
		w.cancel(nil)
	}
}

// wrap returns body with every read that brings bytes recorded.
func (w *watchdog) wrap(body io.ReadCloser) io.ReadCloser {
	if w == nil {
		return body
	}
	return &watchedBody{ReadCloser: body, w: w}
}

type watchedBody struct {
	io.ReadCloser
	w *watchdog
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.w.touch()
	}
	return n, err
}

// touchConn is a connection of the net/http transport that tells the
// watchdog of the request it serves of every byte read, the response
// head's included: net/http gives the body only once the head is whole.
type touchConn struct {
	net.Conn
	wd atomic.Pointer[watchdog]
}

func (c *touchConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.wd.Load().touch()
	}
	return n, err
}

// touchDialer wraps d's connections in touchConns.
func touchDialer(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &touchConn{Conn: nc}, nil
	}
}

// watchConn points the connection a request got (under TLS, the one
// beneath) at the request's watchdog.
func watchConn(nc net.Conn, wd *watchdog) {
	if t, ok := nc.(interface{ NetConn() net.Conn }); ok {
		nc = t.NetConn()
	}
	if tc, ok := nc.(*touchConn); ok {
		tc.wd.Store(wd)
	}
}
