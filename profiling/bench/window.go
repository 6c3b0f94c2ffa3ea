package bench

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/profile-model/profile-model/internal/results"
)

// How a profiled level's window ended (results.ProfileWindow.StoppedBy).
const (
	stopAtSteps    = "steps"     // after about ProfileSteps decode steps of steady load
	stopAtSeconds  = "seconds"   // after ProfileFor of steady load
	stopAtLevelEnd = "level_end" // at the level's end (no window asked, or it was not reached)
)

// stepsSource says how decode steps are counted while a level runs.
const stepsSource = "streamed tokens / concurrency"

// windowPoll is how often the window watch looks at the load: a few
// decode steps at most.
const windowPoll = 5 * time.Millisecond

// streamedTokens estimates the tokens a frame carries while it streams
// (the usage total, which settles it, comes only at the end): its words
// (a word is about a token, and a frame of one token is counted exactly),
// at least 1.
func streamedTokens(delta []byte) int64 {
	words, in := 0, false
	for _, b := range delta {
		space := b == ' ' || b == '\t' || b == '\n' || b == '\r'
		if !space && !in {
			words++
		}
		in = !space
	}
	return int64(max(words, 1))
}

// windowWatch stops the profiler during a level once its window is full:
// steady load (every slot of the level busy) for ProfileFor, or for
// about ProfileSteps decode steps, estimated as the tokens streamed since
// the load became steady divided by the concurrency (each decode step of a
// full batch gives every request one token).
type windowWatch struct {
	win      results.ProfileWindow
	stopped  atomic.Bool // the profiler was stopped within the level
	stopErr  error
	cancel   context.CancelFunc
	done     chan struct{}
	levelRef time.Time // offsets are from here (the level's start)
}

// startWindow watches the load of a level that starts at levelStart with
// the profiler started at profStart; stop stops the profiler.
func startWindow(ctx context.Context, cfg *SweepConfig, c *client, conc int, inFlight *atomic.Int64,
	levelStart, profStart time.Time, stop func(context.Context) error) *windowWatch {
	w := &windowWatch{done: make(chan struct{}), levelRef: levelStart}
	w.win = results.ProfileWindow{StartS: profStart.Sub(levelStart).Seconds(), SteadyS: -1, StoppedBy: stopAtLevelEnd, StepsFrom: stepsSource}
	wctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	go func() {
		defer close(w.done)
		t := time.NewTicker(windowPoll)
		defer t.Stop()
		var steadyAt time.Time
		var base int64
		for {
			select {
			case <-wctx.Done():
				if !steadyAt.IsZero() {
					w.win.DecodeSteps = float64(c.streamed.Load()-base) / float64(conc)
				}
				return
			case <-t.C:
			}
			now := time.Now()
			if steadyAt.IsZero() {
				if inFlight.Load() < int64(conc) {
					continue
				}
				steadyAt, base = now, c.streamed.Load()
				w.win.SteadyS = steadyAt.Sub(levelStart).Seconds()
			}
			steps := float64(c.streamed.Load()-base) / float64(conc)
			by := ""
			switch {
			case cfg.ProfileSteps > 0 && steps >= float64(cfg.ProfileSteps):
				by = stopAtSteps
			case cfg.ProfileFor > 0 && now.Sub(steadyAt) >= cfg.ProfileFor:
				by = stopAtSeconds
			}
			if by == "" {
				continue
			}
			w.win.StoppedBy, w.win.DecodeSteps = by, steps
			w.win.StopS = now.Sub(levelStart).Seconds()
			w.stopped.Store(true)
			t0 := time.Now()
			w.stopErr = stop(context.WithoutCancel(ctx))
			w.win.StopWaitS = time.Since(t0).Seconds()
			return
		}
	}()
	return w
}

// finish ends the watch of the level that ran from start to end: it
// returns the window (offsets from start), whether the profiler is still
// to be stopped, and the error of a stop made within the level.
func (w *windowWatch) finish(start, end time.Time) (win results.ProfileWindow, stopLater bool, err error) {
	w.cancel()
	<-w.done
	win = w.win
	shift := w.levelRef.Sub(start).Seconds() // the watch began just before the level's clock
	win.StartS += shift
	if win.SteadyS >= 0 {
		win.SteadyS += shift
	}
	if !w.stopped.Load() {
		win.StopS = end.Sub(start).Seconds()
		return win, true, nil
	}
	win.StopS += shift
	return win, false, w.stopErr
}
