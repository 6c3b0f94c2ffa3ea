package plan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/profiling"
	"github.com/profile-model/profile-model/profiling/engine"
	"github.com/profile-model/profile-model/profiling/report"
)

// pairWork is a pair and the levels it still has to run.
type pairWork struct {
	pair Pair
	dir  string // the run directory
	todo []int
	// done are the levels complete and valid on disk, with their
	// measured durations (for the time estimate).
	done map[int]float64
}

// survey checks which of a pair's levels are complete and valid on disk.
func (s *sweep) survey(pr Pair, e *PairEntry) pairWork {
	w := pairWork{pair: pr, dir: filepath.Join(s.dir, e.Dir), done: map[int]float64{}}
	for i, c := range pr.Workload.Concurrencies {
		dur, why := CheckLevel(w.dir, c, pr.Workload)
		switch {
		case why == nil:
			w.done[c] = dur
			e.Levels[i].Status = levelStatus(w.dir, c)
			s.say("%s conc %d: complete and valid on disk: skipped", pr.Name(), c)
		case errors.Is(why, ErrNotRun):
			w.todo = append(w.todo, c)
		default:
			w.todo = append(w.todo, c)
			s.say("%s conc %d: %v: runs again", pr.Name(), c, why)
		}
	}
	if len(w.done) > 0 && len(w.todo) == 0 {
		e.Status = StatusOK
	}
	return w
}

// ErrNotRun is CheckLevel's error for a level that has no result file.
var ErrNotRun = errors.New("not run")

// CheckLevel says why level conc of run directory dir is not complete and
// valid for the workload (ErrNotRun when it was never run), or nil with the level's measured duration in seconds. It
// reads the files, not just their names: the level result, with every
// request done under the workload's lengths and seed, and the analysis
// of its trace with its layer table.
func CheckLevel(dir string, conc int, w Workload) (float64, error) {
	run := results.Run(dir)
	name := filepath.Base(run.LevelResult(conc))
	l, err := results.LoadLevel(run.LevelResult(conc))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("%s: %w", name, ErrNotRun)
	}
	if err != nil {
		return 0, err
	}
	switch {
	case l.Status != results.StatusOK && l.Status != results.StatusTraceIncomplete:
		return 0, fmt.Errorf("%s: status %s", name, l.Status)
	case l.MaxConcurrency != conc:
		return 0, fmt.Errorf("%s: concurrency %d", name, l.MaxConcurrency)
	case l.Completed != w.Prompts(conc) || l.Failed != 0:
		return 0, fmt.Errorf("%s: %d of %d requests completed", name, l.Completed, w.Prompts(conc))
	case l.RandomInputLen != w.ISL || l.RandomOutputLen != w.OSL || l.Seed != w.Seed:
		return 0, fmt.Errorf("%s: isl %d, osl %d, seed %d where the plan asks isl %d, osl %d, seed %d",
			name, l.RandomInputLen, l.RandomOutputLen, l.Seed, w.ISL, w.OSL, w.Seed)
	case l.Endpoint != w.Endpoint:
		return 0, fmt.Errorf("%s: endpoint %s where the plan asks %s", name, l.Endpoint, w.Endpoint)
	case !l.Profile:
		return 0, fmt.Errorf("%s: not profiled", name)
	}
	lf, err := analysis.LoadLevelFile(run.LevelAnalysis(conc))
	if err != nil {
		return 0, fmt.Errorf("analysis: %v", err)
	}
	if lf.Summary.DecodeBS != l.DecodeBS {
		return 0, fmt.Errorf("%s: decode batch size %d, its analysis %d", name, l.DecodeBS, lf.Summary.DecodeBS)
	}
	if l.DecodeBS > 0 {
		for _, f := range []string{results.InDir(run.Level(conc), l.DecodeBS).Layer, results.InDir(run.Level(conc), l.DecodeBS).Kernels} {
			if st, err := os.Stat(f); err != nil || st.Size() == 0 {
				return 0, fmt.Errorf("analysis: %s missing or empty", filepath.Base(f))
			}
		}
	}
	return l.DurationS, nil
}

func levelStatus(dir string, conc int) string {
	l, err := results.LoadLevel(results.Run(dir).LevelResult(conc))
	if err != nil {
		return StatusPending
	}
	return l.Status
}

// runPair runs a pair's missing levels against its server variant's
// engine, then rebuilds the run directory's summaries, run.json and
// report from every level on disk.
func (s *sweep) runPair(ctx context.Context, eng *engineRun, w pairWork, e *PairEntry) error {
	e.Status, e.Error = StatusRunning, ""
	s.say("%s: levels %v (%d of %d pairs; elapsed %s, about %s left)", e.Name(), w.todo,
		s.est.pairIndex(e.Name())+1, len(s.index.Pairs), roundDur(time.Since(s.start)), roundDur(s.est.remaining()))
	if err := s.save(); err != nil {
		return err
	}
	if err := eng.ensure(ctx); err != nil {
		return s.finish(ctx, w, e, nil, err)
	}
	// The levels run again start clean; the summaries are rebuilt.
	run := results.Run(w.dir)
	for _, c := range w.todo {
		for _, p := range []string{run.LevelResult(c), run.Level(c)} {
			if err := os.RemoveAll(p); err != nil {
				return s.finish(ctx, w, e, nil, err)
			}
		}
	}
	for _, p := range []string{run.Summary(), run.Bench()} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return s.finish(ctx, w, e, nil, err)
		}
	}
	prior, _ := results.LoadRunInfo(run.RunInfo())

	cfg := s.p.sweepConfig(w.pair.Workload)
	cfg.Concurrencies = w.todo
	cfg.Ranks = max(eng.spec.TP, 1) // the variant's ranks each write a trace
	cfg.Log, cfg.Warn = s.o.BenchLog, s.o.Warn
	cfg.Progress = func(conc, total int) (func(int), func()) {
		s.est.startLevel(w.pair.Name(), conc)
		s.say("%s conc %d (level %d of %d of the sweep; elapsed %s, about %s left)", w.pair.Name(), conc,
			s.est.levelsAll()-s.est.levelsLeft(), s.est.levelsAll(), roundDur(time.Since(s.start)), roundDur(s.est.remaining()))
		if s.o.Progress != nil {
			return s.o.Progress(conc, total)
		}
		return func(int) {}, func() {}
	}
	watchCtx, stopWatch := eng.srv.Watch(ctx)
	_, runErr := profiling.Run(watchCtx, profiling.Plan{
		Engine:      engine.Spec{Kind: engine.None, Model: s.p.Model, URL: eng.srv.URL()},
		Sweep:       cfg,
		RunDir:      w.dir,
		TraceDir:    absPath(eng.traces()),
		ModelConfig: s.p.rel(s.p.ModelConfig),
		Tool:        s.o.Tool,
		GPUPrice:    s.o.GPUPrice,
		Log:         attachFilter{s.o.Log},
		Now:         s.o.Now,
	})
	cause := context.Cause(watchCtx)
	stopWatch()
	if runErr != nil && ctx.Err() == nil && cause != nil && !errors.Is(cause, engine.ErrStopped) {
		runErr = fmt.Errorf("the engine exited during the pair: %v (%v)", cause, runErr)
	}
	return s.finish(ctx, w, e, prior, runErr)
}

// finish rebuilds a pair's run directory from the levels on disk and
// records the pair's status in the index; it returns runErr, or why the
// pair is not complete.
func (s *sweep) finish(ctx context.Context, w pairWork, e *PairEntry, prior *results.RunInfo, runErr error) error {
	allValid := true
	for i := range e.Levels {
		c := e.Levels[i].Conc
		_, why := CheckLevel(w.dir, c, w.pair.Workload)
		allValid = allValid && why == nil
		e.Levels[i].Status = levelStatus(w.dir, c) // pending when never run
	}
	if _, err := os.Stat(w.dir); err == nil {
		if err := s.rebuild(w, prior, runErr, allValid); err != nil && runErr == nil {
			runErr = err
		}
	}
	s.est.donePair(w.pair.Name())
	switch {
	case runErr == nil && allValid:
		e.Status, e.Error = StatusOK, ""
		return nil
	case runErr == nil:
		runErr = errors.New("levels are missing or invalid after the run")
	}
	e.Status, e.Error = StatusFailed, runErr.Error()
	if ctx.Err() != nil {
		e.Status = StatusInterrupted
	}
	return runErr
}

// rebuild writes a pair's summary.csv, bench.txt and run.json from the
// levels on disk (so a resumed pair reads as one run), then its report.
func (s *sweep) rebuild(w pairWork, prior *results.RunInfo, runErr error, allValid bool) error {
	run := results.Run(w.dir)
	info, err := results.LoadRunInfo(run.RunInfo())
	if err != nil {
		return nil // the engine never served: no run directory to rebuild
	}
	wl := w.pair.Workload
	var rows []results.SummaryRow
	var benchRows []results.BenchResult
	var notes []string
	var levels []results.LevelInfo
	for _, c := range wl.Concurrencies {
		l, err := results.LoadLevel(run.LevelResult(c))
		if err != nil {
			continue
		}
		rows = append(rows, results.SummaryRowOf(l))
		switch l.Status {
		case results.StatusOK:
			benchRows = append(benchRows, results.BenchResultOf(l, wl.ISL, wl.OSL))
		case results.StatusTraceIncomplete:
			benchRows = append(benchRows, results.BenchResultOf(l, wl.ISL, wl.OSL))
			notes = append(notes, fmt.Sprintf("conc=%d: trace_incomplete: its trace lost events; the client's figures are complete", c))
		default:
			why := fmt.Sprintf("%d of %d requests failed", l.Failed, l.NumPrompts)
			if n := len(l.Warnings); n > 0 {
				why = l.Warnings[n-1].Message
			}
			notes = append(notes, fmt.Sprintf("conc=%d left out: %s (%s)", c, l.Status, why))
		}
		levels = append(levels, levelInfo(w.dir, c, l, info))
	}
	if len(rows) > 0 {
		if err := atomicfile.Write(run.Summary(), results.FormatSummary(rows)); err != nil {
			return err
		}
		if err := atomicfile.WriteFunc(run.Bench(), func(wr io.Writer) error {
			if err := results.WriteBenchNotes(wr, notes); err != nil {
				return err
			}
			return results.WriteBench(wr, benchRows)
		}); err != nil {
			return err
		}
	}
	// run.json: the real engine, not the attachment Run saw; every level.
	eng := s.p.spec(w.pair.Server, s.o.Options)
	se := s.index.server(w.pair.Server.Name)
	info.Engine = results.EngineInfo{Kind: string(eng.Kind), Model: eng.Model, TP: max(eng.TP, 1), URL: info.Engine.URL,
		KVCacheDType: eng.KVCacheDType, MaxNumSeqs: eng.MaxNumSeqs, MaxModelLen: eng.MaxModelLen, Level: eng.Level,
		EnforceEager: eng.EnforceEager, CaptureSizes: eng.CaptureSizes, ExtraArgs: eng.ExtraArgs, TimeScale: eng.TimeScale}
	if se != nil {
		info.Engine.Command, info.Engine.Env = se.Command, se.Env
	}
	info.Traces = fmt.Sprintf("written by the engine into %s/traces of the sweep directory (shared by the server variant's pairs)", w.pair.Server.Name)
	info.Sweep.Concurrencies = slices.Clone(wl.Concurrencies)
	info.Notes = slices.DeleteFunc(info.Notes, func(n string) bool { return strings.HasPrefix(n, "engine none") })
	info.Levels = levels
	if prior != nil && prior.Start != "" && prior.Start < info.Start {
		info.Start = prior.Start
	}
	switch {
	case allValid:
		info.Status, info.Error = "ok", ""
	case runErr != nil:
		info.Error = runErr.Error()
		if info.Status == "ok" || info.Status == "running" || info.Status == "interrupted" && !errors.Is(runErr, context.Canceled) {
			info.Status = "failed"
		}
	}
	if err := atomicfile.WriteFunc(run.RunInfo(), info.Write); err != nil {
		return err
	}
	if s.o.NoReport || len(rows) == 0 {
		return nil
	}
	rep, err := report.Build(w.dir, report.Options{Force: s.o.Force})
	if err != nil {
		return fmt.Errorf("the report of %s: %w", w.pair.Name(), err)
	}
	for _, n := range rep.Notes {
		s.say("%s report note: %s", w.pair.Name(), n)
	}
	return nil
}

// levelInfo is run.json's entry of a level, from the files on disk.
func levelInfo(dir string, conc int, l *results.Level, info *results.RunInfo) results.LevelInfo {
	run := results.Run(dir)
	li := results.LevelInfo{Conc: conc, Status: l.Status, DecodeBS: l.DecodeBS,
		Result: relTo(dir, run.LevelResult(conc)), Dir: relTo(dir, run.Level(conc))}
	for _, t := range l.TraceFiles {
		li.Traces = append(li.Traces, relTo(dir, t))
	}
	if ents, err := os.ReadDir(run.Level(conc)); err == nil {
		for _, e := range ents {
			if !e.IsDir() {
				li.Files = append(li.Files, relTo(dir, filepath.Join(run.Level(conc), e.Name())))
			}
		}
	}
	if lf, err := analysis.LoadLevelFile(run.LevelAnalysis(conc)); err == nil {
		li.Device = lf.Summary.Device
	}
	for _, old := range info.Levels {
		if old.Conc == conc && old.Error != "" {
			li.Error = old.Error
		}
	}
	return li
}

// relTo is path relative to base (traces live beside the run directory,
// under the server variant's directory).
func relTo(base, path string) string {
	if !filepath.IsAbs(path) {
		if _, err := os.Stat(filepath.Join(base, path)); err == nil {
			return path
		}
	}
	ab, err1 := filepath.Abs(base)
	ap, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return path
	}
	if r, err := filepath.Rel(ab, ap); err == nil {
		return r
	}
	return path
}

// attachFilter drops Run's lines about attaching to the engine (engine
// none): the sweep started the engine and says so itself.
type attachFilter struct{ w io.Writer }

func (f attachFilter) Write(b []byte) (int, error) {
	if f.w == nil || bytes.HasPrefix(b, []byte("== starting none:")) || bytes.HasPrefix(b, []byte("== none serves ")) {
		return len(b), nil
	}
	return f.w.Write(b)
}
