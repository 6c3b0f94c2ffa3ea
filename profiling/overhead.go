package profiling

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/bench"
	"github.com/profile-model/profile-model/profiling/engine"
)

// overheadDir is where the level run again without the profiler leaves
// its results, inside the run directory.
const overheadDir = "overhead"

// overheadCheck runs the sweep's first level again with the profiler off
// (no /start_profile) and writes overhead.json: the TPOT it costs to be
// profiled. The first level because its steps are the shortest, so the
// profiler's per-step cost is the largest share of them.
func (r *runner) overheadCheck(ctx context.Context, srv *engine.Server) error {
	sw := r.res.Sweep
	if sw == nil || len(sw.Levels) == 0 {
		return nil
	}
	prof := sw.Levels[0]
	cfg := r.cfg
	cfg.URL, cfg.Model = srv.URL(), r.spec.Model
	cfg.Concurrencies = []int{prof.Conc}
	cfg.Profile, cfg.TraceDir, cfg.ReadTraces = false, "", nil
	cfg.RunDir = filepath.Join(r.res.Dir, overheadDir)
	cfg.Shaper = &sw.Shaper // the same prompts, no new calibration
	r.say("overhead check: conc %d again without the profiler", prof.Conc)
	sweepCtx, stop := srv.Watch(ctx)
	defer stop()
	un, err := bench.Sweep(sweepCtx, cfg)
	if err != nil {
		return fmt.Errorf("overhead check (conc %d without the profiler): %w", prof.Conc, err)
	}
	if len(un.Levels) == 0 || un.Levels[0].Metrics.Completed == 0 || prof.Metrics.Completed == 0 {
		return fmt.Errorf("overhead check (conc %d): no request completed on one side", prof.Conc)
	}
	o := overheadOf(prof.Metrics.TPOT.Mean, un.Levels[0].Metrics.TPOT.Mean, r.p.OverheadPct, r.spec.TimeScale)
	o.Conc, o.Dir = prof.Conc, overheadDir
	o.ProfiledN, o.UnprofiledN = prof.Metrics.Completed, un.Levels[0].Metrics.Completed
	if o.Flagged {
		r.say("overhead check: TPOT %+.1f%% under the profiler at conc %d (%.2f ms against %.2f ms), above %.0f%%: the profiled latencies are not the engine's",
			o.DiffPct, o.Conc, o.ProfiledTPOTMS, o.UnprofiledTPOTMS, o.ThresholdPct)
	} else {
		r.say("overhead check: TPOT %+.1f%% under the profiler at conc %d", o.DiffPct, o.Conc)
	}
	return results.WriteOverhead(r.run.Overhead(), o)
}

// overheadOf compares the mean TPOT of a level profiled and not (ms, wall
// clock) against a threshold in percent (0: the default), on the engine's
// clock (timeScale: the simulated engine's speed-up, 0 when none).
func overheadOf(profiledMS, unprofiledMS, thresholdPct, timeScale float64) *results.Overhead {
	if thresholdPct <= 0 {
		thresholdPct = results.DefaultOverheadPct
	}
	if timeScale <= 0 {
		timeScale = 1
	}
	o := &results.Overhead{ProfiledTPOTMS: profiledMS * timeScale, UnprofiledTPOTMS: unprofiledMS * timeScale, ThresholdPct: thresholdPct}
	if unprofiledMS > 0 {
		o.DiffPct = 100 * (profiledMS - unprofiledMS) / unprofiledMS
	}
	o.Flagged = o.DiffPct > thresholdPct
	return o
}
