package plan

import (
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/profile-model/profile-model/profiling/engine"
)

// The time model of a level before anything was measured: every request
// of a wave of `conc` streams OSL tokens at AssumedTPOT, after a prefill
// of AssumedPrefillPerToken per prompt token of the wave; then the trace
// export and its analysis. Engines start in AssumedStart. The simulated
// engine runs its modelled GPU time divided by its time scale. Once
// levels were measured (a resumed sweep, or during a run), the estimate
// is scaled by measured / modelled.
var (
	AssumedTPOT            = 30 * time.Millisecond
	AssumedPrefillPerToken = 50 * time.Microsecond
	AssumedExport          = 20 * time.Second
	AssumedStart           = 5 * time.Minute
	// The simulated engine's modelled GPU time (built-in MiniMax-M2.5 model,
	// a few layers per step), as its sweeps measure it.
	AssumedSimTPOT            = 2 * time.Millisecond
	AssumedSimPrefillPerToken = 2 * time.Microsecond
	AssumedSimExport          = time.Second
	AssumedSimStart           = 2 * time.Second
)

// estimator keeps the estimate of the time left as levels finish.
type estimator struct {
	mu      sync.Mutex
	levels  []estLevel // in run order
	servers map[string]time.Duration
	started map[string]bool
	pairs   []string
	// measured and modelled seconds of the levels done (this run's and
	// those found on disk), for the scale.
	measured, modelled float64
	running            int // index of the level under way; -1: none
	runningSince       time.Time
}

type estLevel struct {
	pair  string
	conc  int
	req   time.Duration // the requests, modelled (scaled by what was measured)
	fixed time.Duration // the trace export and analysis (not scaled)
	done  bool
}

func newEstimator(p *Plan, o Options, work []pairWork) *estimator {
	e := &estimator{servers: map[string]time.Duration{}, started: map[string]bool{}, running: -1}
	for _, w := range work {
		name := w.pair.Name()
		e.pairs = append(e.pairs, name)
		spec := p.spec(w.pair.Server, o)
		for _, c := range w.pair.Workload.Concurrencies {
			req := requestModel(spec, w.pair.Workload, c)
			dur, done := w.done[c]
			e.levels = append(e.levels, estLevel{pair: name, conc: c, req: req, fixed: exportModel(spec), done: done})
			if done {
				e.measured += dur
				e.modelled += req.Seconds()
			}
		}
		if len(w.todo) > 0 {
			e.servers[w.pair.Server.Name] = startModel(spec)
		}
	}
	return e
}

// Estimate is the modelled time of a fresh run of the plan: every level
// of every pair, and one engine start per server variant (what run --plan
// --dry-run prints, before anything is on disk).
func (p *Plan) Estimate() time.Duration {
	pairs, _ := p.Pairs()
	work := make([]pairWork, len(pairs))
	for i, pr := range pairs {
		work[i] = pairWork{pair: pr, todo: pr.Workload.Concurrencies}
	}
	return newEstimator(p, Options{}, work).remaining()
}

func startModel(spec engine.Spec) time.Duration {
	if spec.Kind == engine.Sim {
		return AssumedSimStart
	}
	return AssumedStart
}

// requestModel is the modelled time of a level's requests alone (what a
// level's measured duration covers).
func requestModel(spec engine.Spec, w Workload, conc int) time.Duration {
	prompts := w.Prompts(conc)
	waves := math.Ceil(float64(prompts)/float64(conc)) + math.Ceil(float64(w.Warmups)/float64(conc))
	tpot, prefill := AssumedTPOT, AssumedPrefillPerToken
	if spec.Kind == engine.Sim {
		tpot, prefill = AssumedSimTPOT, AssumedSimPrefillPerToken
	}
	// In float64: the bounds allow levels of centuries, beyond a Duration.
	wave := float64(w.OSL)*float64(tpot) + float64(w.ISL)*float64(min(conc, prompts))*float64(prefill)
	d := waves * wave
	if spec.Kind == engine.Sim && spec.TimeScale > 0 {
		d /= spec.TimeScale
	}
	return clampEstimate(d)
}

// MaxEstimate caps every estimate: a plan within the bounds can model
// more than a Duration holds, and adding such times must not wrap into a
// negative one.
const MaxEstimate = 1_000_000 * time.Hour

func clampEstimate(ns float64) time.Duration {
	if !(ns < float64(MaxEstimate)) {
		return MaxEstimate
	}
	return time.Duration(max(ns, 0))
}

// addEstimate is a + b, at most MaxEstimate.
func addEstimate(a, b time.Duration) time.Duration {
	return clampEstimate(float64(a) + float64(b))
}

func exportModel(spec engine.Spec) time.Duration {
	if spec.Kind == engine.Sim {
		return AssumedSimExport
	}
	return AssumedExport
}

// scale is measured over modelled time of the requests of the levels
// done, 1 before any.
func (e *estimator) scale() float64 {
	if e.modelled <= 0 || e.measured <= 0 {
		return 1
	}
	return e.measured / e.modelled
}

// remaining is the estimated time of the levels and engine starts left.
func (e *estimator) remaining() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	var d time.Duration
	for _, l := range e.levels {
		if !l.done {
			d = addEstimate(d, clampEstimate(float64(l.req)*e.scale()))
			d = addEstimate(d, l.fixed)
		}
	}
	for name, s := range e.servers {
		if !e.started[name] {
			d = addEstimate(d, s)
		}
	}
	return d
}

func (e *estimator) levelsAll() int { return len(e.levels) }

func (e *estimator) levelsLeft() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, l := range e.levels {
		if !l.done {
			n++
		}
	}
	return n
}

func (e *estimator) pairIndex(name string) int { return slices.Index(e.pairs, name) }

// startLevel records that a level began: the one before it ended then
// (its wall time measured), and its server variant's engine is up.
func (e *estimator) startLevel(pair string, conc int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	e.close(now)
	e.started[serverOf(pair)] = true
	for i := range e.levels {
		if e.levels[i].pair == pair && e.levels[i].conc == conc {
			// Counted as done: the estimate covers what follows it.
			e.levels[i].done = true
			e.running, e.runningSince = i, now
			return
		}
	}
}

// donePair records that a pair ended: its last level, if one ran, too.
func (e *estimator) donePair(pair string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.running >= 0 && e.levels[e.running].pair == pair {
		e.close(time.Now())
	}
	for i := range e.levels {
		if e.levels[i].pair == pair {
			e.levels[i].done = true
		}
	}
}

func (e *estimator) close(now time.Time) {
	if e.running < 0 {
		return
	}
	l := e.levels[e.running]
	e.measured += max(now.Sub(e.runningSince)-l.fixed, 0).Seconds()
	e.modelled += l.req.Seconds()
	e.running = -1
}

func serverOf(pair string) string {
	server, _, _ := strings.Cut(pair, "/")
	return server
}
