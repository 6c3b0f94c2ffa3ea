package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
)

// maxLag bounds how far the engine may run behind its wall-clock schedule
// before it gives up catching up (so an idle or slow spell does not turn
// into a burst of sleepless steps).
const maxLag = 20 * time.Millisecond

// request state bits, packed with the produced-token count into one atomic
// word so that a reader sees tokens and finish together.
const (
	stateDone   = 1
	stateFailed = 2
	stateShift  = 2
)

// request is one completion request as the engine sees it.
type request struct {
	seq          uint64
	promptTokens int
	prefilled    int    // prompt tokens prefilled so far (engine goroutine only)
	sampled      int    // tokens sampled so far, delivered or not (engine goroutine only)
	target       int    // output tokens to produce
	finish       string // finish_reason when target is reached: "length" or "stop"
	failAt       int    // >0: fail once this many tokens were produced
	state        atomic.Uint64
	aborted      atomic.Bool  // the client went away
	firstAt      atomic.Int64 // wall ns of the first token
	lastAt       atomic.Int64 // wall ns of the latest token
	notify       chan struct{}
	submitted    time.Time
}

func newRequest(seq uint64, promptTokens, target int, finish string, failAt int, now time.Time) *request {
	return &request{seq: seq, promptTokens: promptTokens, target: target, finish: finish,
		failAt: failAt, notify: make(chan struct{}, 1), submitted: now}
}

// snapshot returns the produced tokens and whether the request is done or failed.
func (r *request) snapshot() (produced int, done, failed bool) {
	s := r.state.Load()
	return int(s >> stateShift), s&stateDone != 0, s&stateFailed != 0
}

func (r *request) produced() int { return int(r.state.Load() >> stateShift) }

// sample counts one more sampled token on the engine's side and says
// whether it ends the request (its target or its fault point reached).
func (r *request) sample() (finished bool) {
	r.sampled++
	return r.sampled >= r.target || (r.failAt > 0 && r.sampled >= r.failAt)
}

// advance records one more token (and the finish) and wakes the reader.
func (r *request) advance(now int64) (finished bool) {
	n := r.produced() + 1
	var flags uint64
	switch {
	case r.failAt > 0 && n >= r.failAt:
		flags = stateDone | stateFailed
	case n >= r.target:
		flags = stateDone
	}
	if n == 1 {
		r.firstAt.Store(now)
	}
	r.lastAt.Store(now)
	r.state.Store(uint64(n)<<stateShift | flags)
	select {
	case r.notify <- struct{}{}:
	default:
	}
	return flags != 0
}

// profileCmd asks the engine goroutine to start or stop the profiler, as
// ATOM sends a utility command to its engine core.
type profileCmd struct {
	start bool
	write bool
	ctx   context.Context
	reply chan profileReply
}

type profileReply struct {
	dirs []string
	err  error
}

// stepCounts is what the engine executed, for tests and logs.
type stepCounts struct {
	Prefill, Decode, Mixed int64 // steps run
	// ProfiledPrefill, ProfiledDecode and ProfiledMixed count the steps of
	// the last profiling window (start to stop).
	ProfiledPrefill, ProfiledDecode, ProfiledMixed int64
	// ProfiledDecodeBS is a histogram of decode batch sizes in that window.
	ProfiledDecodeBS map[int]int
}

// engine is the scheduler: one goroutine owns waiting, running and the backend.
type engine struct {
	cfg     *Config
	backend backend
	clock   clock
	submit  chan *request
	cmds    chan profileCmd
	// exported is closed when the last export ends; nil before any.
	exported chan struct{}

	waiting []*request
	running []*request
	pending []*request // sampled in the last step, not yet delivered

	virt      int64     // trace clock, ns
	wallNext  time.Time // when the current schedule says the next step may start
	profiling bool

	mu     sync.Mutex // guards counts
	counts stepCounts

	gauges engineMetrics // what /metrics reports; written by the engine goroutine
	meter  gpuMeter      // what /debug/telemetry reports
}

// kvBlockSize is the tokens per KV-cache block /metrics counts in.
const kvBlockSize = 16

// engineMetrics are the scheduler's gauges and counters for /metrics.
type engineMetrics struct {
	running, waiting, kvBlocks               atomic.Int64
	finished, promptTokens, generationTokens atomic.Int64
	prefills                                 atomic.Int64
}

// metricsSnapshot is one reading of engineMetrics.
type metricsSnapshot struct {
	running, waiting, kvBlocks               int64
	finished, promptTokens, generationTokens int64
	prefills                                 int64
}

func (e *engine) metrics() metricsSnapshot {
	g := &e.gauges
	return metricsSnapshot{g.running.Load(), g.waiting.Load() + int64(len(e.submit)), g.kvBlocks.Load(),
		g.finished.Load(), g.promptTokens.Load(), g.generationTokens.Load(), g.prefills.Load()}
}

// publish updates the gauges after a step.
func (e *engine) publish() {
	var blocks int64
	for _, r := range e.running {
		blocks += int64((r.promptTokens + r.produced() + kvBlockSize - 1) / kvBlockSize)
	}
	e.gauges.running.Store(int64(len(e.running)))
	e.gauges.waiting.Store(int64(len(e.waiting)))
	e.gauges.kvBlocks.Store(blocks)
}

// done counts a finished request.
func (e *engine) done(r *request) {
	e.gauges.finished.Add(1)
	e.gauges.promptTokens.Add(int64(r.promptTokens))
	e.gauges.generationTokens.Add(int64(r.produced()))
}

func newEngine(cfg *Config, b backend) *engine {
	e := &engine{cfg: cfg, backend: b, clock: cfg.clock,
		submit: make(chan *request, 1024), cmds: make(chan profileCmd)}
	return e
}

// add hands a request to the engine once the front end's intake time has
// passed (each request on its own, as concurrent handlers do).
func (e *engine) add(ctx context.Context, r *request) error {
	if d := e.backend.Intake(r.promptTokens).Time(); d > 0 {
		if err := e.clock.Sleep(ctx, time.Duration(float64(d)/e.cfg.TimeScale)); err != nil {
			return err
		}
	}
	select {
	case e.submit <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// profile runs a profiler command on the engine goroutine.
func (e *engine) profile(ctx context.Context, start, write bool) ([]string, error) {
	c := profileCmd{start: start, write: write, ctx: ctx, reply: make(chan profileReply, 1)}
	select {
	case e.cmds <- c:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-c.reply:
		return r.dirs, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

var errProfiling = errors.New("the profiler is already running")
var errNotProfiling = errors.New("the profiler is not running")

func (e *engine) handle(c profileCmd) {
	var rep profileReply
	if c.start && e.exporting() {
		// The profiler starts again once its last trace is written, as
		// torch's does; the loop steps on meanwhile.
		go func(done chan struct{}) {
			<-done
			select {
			case e.cmds <- c:
			case <-c.ctx.Done():
				c.reply <- profileReply{err: c.ctx.Err()}
			}
		}(e.exported)
		return
	}
	lenient := e.cfg.Personality == PersonalityATOM || e.cfg.Personality == PersonalityVLLM
	switch {
	case c.start && e.profiling && lenient:
		// ATOM's and vLLM's profilers ignore a start while they run.
	case !c.start && !e.profiling && lenient:
		// ...and a stop while they do not.
	case c.start && e.profiling:
		rep.err = errProfiling
	case c.start:
		if e.cfg.ProfilerDir == "" {
			rep.err = errors.New("no profiler directory: start the server with --torch-profiler-dir or ATOM_TORCH_PROFILER_DIR")
			break
		}
		rep.err = e.backend.StartProfile(e.cfg.ProfilerDir, e.virt)
		if rep.err == nil {
			e.profiling = true
			e.mu.Lock()
			e.counts.ProfiledPrefill, e.counts.ProfiledDecode, e.counts.ProfiledMixed = 0, 0, 0
			e.counts.ProfiledDecodeBS = map[int]int{}
			e.mu.Unlock()
		}
	case !e.profiling:
		rep.err = errNotProfiling
	default:
		// The export runs beside the loop: the streams go on while the
		// trace is written.
		e.profiling = false
		export := e.backend.StopProfile(e.virt, c.write)
		done := make(chan struct{})
		e.exported = done
		go func() {
			dirs, err := export(c.ctx)
			close(done)
			c.reply <- profileReply{dirs, err}
		}()
		return
	}
	c.reply <- rep
}

// exporting tells whether the last export is still being written.
func (e *engine) exporting() bool {
	if e.exported == nil {
		return false
	}
	select {
	case <-e.exported:
		return false
	default:
		return true
	}
}

// stepCounts returns a copy of the counters.
func (e *engine) stepCounts() stepCounts {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.counts
	c.ProfiledDecodeBS = maps.Clone(c.ProfiledDecodeBS)
	return c
}

// run is the engine loop; it returns when ctx is done.
func (e *engine) run(ctx context.Context) {
	now := e.clock.Now()
	e.virt = now.UnixNano()
	e.wallNext = now
	for {
		e.drain()
		if len(e.waiting) == 0 && len(e.running) == 0 {
			e.deliver(e.clock.Now().UnixNano())
			idleFrom := e.clock.Now()
			select {
			case <-ctx.Done():
				return
			case r := <-e.submit:
				e.waiting = append(e.waiting, r)
			case c := <-e.cmds:
				e.handle(c)
			}
			now := e.clock.Now()
			e.virt += int64(float64(now.Sub(idleFrom)) * e.cfg.TimeScale)
			e.wallNext = now // idle time is on the trace clock already, not lag
			continue
		}
		select {
		case <-ctx.Done():
			return
		case c := <-e.cmds:
			e.handle(c)
			continue
		default:
		}
		if err := e.step(ctx); err != nil {
			return
		}
	}
}

// drain moves submitted requests to the waiting queue without blocking.
func (e *engine) drain() {
	for {
		select {
		case r := <-e.submit:
			e.waiting = append(e.waiting, r)
		default:
			return
		}
	}
}

// step schedules, prices, paces and completes one engine step.
func (e *engine) step(ctx context.Context) error {
	e.dropAborted()
	defer e.publish()
	var prefill, decode []*request
	s := synth.Step{}
	// admit takes waiting requests for a prefill in arrival order, as many
	// as fit in the token budget and in MaxNumSeqs; the last one may get
	// only a chunk of its prompt and stays first in line for the next step.
	var chunked *request
	admit := func(budget int) {
		n := 0
		for n < len(e.waiting) && len(e.running)+n < e.cfg.MaxNumSeqs && s.Tokens < budget {
			r := e.waiting[n]
			chunk := min(r.promptTokens-r.prefilled, budget-s.Tokens)
			r.prefilled += chunk
			s.Tokens += chunk
			s.ContextTokens += r.prefilled
			if n < 5 {
				s.Contexts = append(s.Contexts, r.prefilled)
			}
			n++
			if r.prefilled < r.promptTokens {
				chunked = r
				break
			}
		}
		prefill = e.waiting[:n:n]
		if chunked != nil {
			n--
			prefill = prefill[:n]
		}
		e.waiting = e.waiting[n:]
		e.gauges.prefills.Add(int64(n))
	}
	decodeAll := func() {
		decode = e.running
		s.Tokens += len(decode)
		for _, r := range decode {
			ctx := r.promptTokens + r.produced() + 1
			s.ContextTokens += ctx
			if len(s.Contexts) < 5 {
				s.Contexts = append(s.Contexts, ctx)
			}
		}
	}
	canAdmit := len(e.waiting) > 0 && len(e.running) < e.cfg.MaxNumSeqs
	switch {
	case canAdmit && e.cfg.MixedSteps && len(e.running) > 0:
		// Waiting prompts join the running decodes (chunked-prefill style).
		s.Kind = tracing.StepMixed
		decodeAll()
		admit(s.Tokens + max(e.cfg.MaxNumBatchedTokens-len(e.running), 1))
		s.PrefillSeqs = len(prefill)
		if chunked != nil {
			s.PrefillSeqs++
		}
	case canAdmit:
		s.Kind = tracing.StepPrefill
		admit(e.cfg.MaxNumBatchedTokens)
	case len(e.running) == 0:
		return nil
	default:
		s.Kind = tracing.StepDecode
		decodeAll()
	}
	s.BS = len(prefill) + len(decode)
	if chunked != nil {
		s.BS++
	}
	hostGap := e.backend.HostGap().Time()
	s.Start = e.virt + int64(hostGap)
	dur := e.backend.Run(s)
	e.virt = s.Start + int64(dur)
	e.count(s)
	e.meter.step(s.Kind, s.BS, float64(dur), e.cfg.PowerCapW, e.gauges.kvBlocks.Load())

	// The tokens of the previous step reach their clients OutputLag of the
	// way into this step: the engine streams them while this step runs.
	total := hostGap + dur.Time()
	if e.profiling && e.cfg.ProfilerOverhead > 0 {
		extra := time.Duration(float64(total) * e.cfg.ProfilerOverhead)
		e.virt += int64(extra)
		total += extra
	}
	early := time.Duration(float64(total) * e.backend.OutputLag())
	if err := e.pace(ctx, early); err != nil {
		return err
	}
	e.deliver(e.clock.Now().UnixNano())
	if err := e.pace(ctx, total-early); err != nil {
		return err
	}
	now := e.clock.Now().UnixNano()
	var sampled []*request
	if len(decode) > 0 { // decode is e.running
		kept := e.running[:0]
		for _, r := range decode {
			sampled = append(sampled, r)
			if !r.sample() {
				kept = append(kept, r)
			}
		}
		clear(e.running[len(kept):])
		e.running = kept
	}
	for _, r := range prefill {
		sampled = append(sampled, r)
		if !r.sample() {
			e.running = append(e.running, r)
		}
	}
	e.pending = sampled
	if e.backend.OutputLag() == 0 {
		e.deliver(now)
	}
	return nil
}

// deliver hands the sampled tokens of the last step to their clients.
func (e *engine) deliver(now int64) {
	for _, r := range e.pending {
		if r.advance(now) {
			e.done(r)
		}
	}
	clear(e.pending)
	e.pending = e.pending[:0]
}

func (e *engine) count(s synth.Step) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := &e.counts
	switch s.Kind {
	case tracing.StepPrefill:
		c.Prefill++
	case tracing.StepMixed:
		c.Mixed++
	default:
		c.Decode++
	}
	if e.profiling {
		switch s.Kind {
		case tracing.StepPrefill:
			c.ProfiledPrefill++
		case tracing.StepMixed:
			c.ProfiledMixed++
		default:
			c.ProfiledDecode++
			c.ProfiledDecodeBS[s.BS]++
		}
	}
}

// pace waits until the step's scaled duration has passed on the wall clock.
// When the engine has fallen more than maxLag behind (a loaded machine), it
// gives up catching up, and the trace clock takes the lost time as host time
// between steps: the trace then spans what the client saw.
func (e *engine) pace(ctx context.Context, d time.Duration) error {
	now := e.clock.Now()
	if lag := now.Sub(e.wallNext); lag > maxLag {
		e.virt += int64(float64(lag) * e.cfg.TimeScale)
		e.wallNext = now
	}
	e.wallNext = e.wallNext.Add(time.Duration(float64(d) / e.cfg.TimeScale))
	if wait := e.wallNext.Sub(now); wait > 0 {
		return e.clock.Sleep(ctx, wait)
	}
	return nil
}

// dropAborted forgets requests whose clients went away.
func (e *engine) dropAborted() {
	keep := func(q []*request) []*request {
		out := q[:0]
		for _, r := range q {
			if !r.aborted.Load() {
				out = append(out, r)
			}
		}
		clear(q[len(out):])
		return out
	}
	e.waiting = keep(e.waiting)
	e.running = keep(e.running)
}

// clock is the engine's view of wall time; tests may drive it.
type clock interface {
	Now() time.Time
	// Sleep waits for d or until ctx is done (then it returns ctx.Err()).
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("engine stopped: %w", ctx.Err())
	}
}
