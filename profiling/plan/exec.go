package plan

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/dirlock"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling"
	"github.com/profile-model/profile-model/profiling/engine"
	"github.com/profile-model/profile-model/profiling/report"
)

// RunOptions say how a sweep runs beyond where things are.
type RunOptions struct {
	Options
	// Out receives the new sweep directory, <plan name>-<UTC time>.
	Out string
	// Resume is an earlier sweep directory to complete: its plan.json is
	// the plan, and levels whose files are complete and valid are kept.
	Resume string
	// FailFast stops the sweep at the first pair that fails; otherwise
	// the failure is recorded and the sweep goes on.
	FailFast bool
	ForceGPU bool // start even when another process holds GPU memory
	// Force replaces the reports (readme.md, charts) of the sweep and its
	// pairs even when edited since a report wrote them.
	Force        bool
	GPUPrice     float64       // US dollars per GPU-hour, for each pair's cost per million tokens; 0: none
	ReadyTimeout time.Duration // 0: the engine package's default
	Tool         string        // version line recorded in sweep.json and run.json
	// Log receives one line per phase and the progress; nil discards.
	Log io.Writer
	// BenchLog receives each level's result block; Warn the client's
	// warnings as they happen; Progress is the per-request progress.
	BenchLog, Warn io.Writer
	Progress       func(conc, total int) (update func(done int), finish func())
	// NoReport skips each pair's readme and the sweep's (tests that only
	// look at the files).
	NoReport bool
	Now      func() time.Time
}

// Result is what a sweep left on disk.
type Result struct {
	Dir   string
	Index *Index
}

// sweep is one execution of a plan.
type sweep struct {
	p     *Plan
	o     RunOptions
	dir   string
	index *Index
	start time.Time
	est   *estimator
}

func (s *sweep) say(format string, a ...any) {
	if s.o.Log != nil {
		fmt.Fprintf(s.o.Log, "== "+format+"\n", a...)
	}
}

func (s *sweep) now() time.Time {
	if s.o.Now != nil {
		return s.o.Now()
	}
	return time.Now()
}

// Run runs the plan's pairs (p is nil with Resume: the sweep's plan.json
// is read). Each server variant's engine starts once, when one of its
// pairs has work; each pair's levels run into its run directory. A pair
// that fails is recorded and the sweep goes on (FailFast stops it); the
// error says which pairs failed. sweep.json is written after every pair.
func Run(ctx context.Context, p *Plan, o RunOptions) (*Result, error) {
	s := &sweep{p: p, o: o, start: time.Now()}
	var err error
	if p == nil && o.Resume == "" {
		return nil, errors.New("no plan: give one, or a sweep directory to resume")
	}
	if o.Resume != "" {
		if s.p, s.index, err = openSweep(o.Resume); err != nil {
			return nil, err
		}
		s.dir = o.Resume
		s.say("resuming %s (plan %s)", s.dir, s.p.Name)
	} else {
		if s.dir, err = results.NewRunDir(cmp.Or(o.Out, "sweeps"), s.p.Name, s.now()); err != nil {
			return nil, err
		}
		if err := atomicfile.WriteFunc(PlanFile(s.dir), s.p.write); err != nil {
			return nil, err
		}
		s.say("sweep directory %s", s.dir)
	}
	what := "run --plan " + s.p.Path()
	if o.Resume != "" {
		what = "run --resume " + o.Resume
	}
	unlock, err := dirlock.Lock(s.dir, what)
	if err != nil {
		return nil, err
	}
	defer unlock()
	res := &Result{Dir: s.dir}
	pairs, dropped := s.p.Pairs()
	s.index = s.freshIndex(pairs, dropped)
	res.Index = s.index
	for _, d := range dropped {
		s.say("pair %s/%s left out by the links: %s", d.Server, d.Bench, d.Why)
	}
	work := make([]pairWork, len(pairs))
	for i, pr := range pairs {
		work[i] = s.survey(pr, &s.index.Pairs[i])
	}
	if o.Resume != "" && !o.NoReport {
		// Refused before any engine starts: a readme edited since its
		// report would otherwise be found only after hours of levels.
		if err := s.checkEdits(work); err != nil {
			return res, err
		}
	}
	s.est = newEstimator(s.p, o.Options, work)
	s.say("%d pairs, %d of %d levels to run; about %s", len(pairs), s.est.levelsLeft(), s.est.levelsAll(), roundDur(s.est.remaining()))
	if err := s.save(); err != nil {
		return res, err
	}

	var failed []string
	stopped := false
	for _, sv := range s.p.Servers {
		var mine []int
		for i, pr := range pairs {
			if pr.Server.Name == sv.Name {
				mine = append(mine, i)
			}
		}
		if len(mine) == 0 {
			continue
		}
		if stopped {
			for _, i := range mine {
				s.index.Pairs[i].Status = StatusSkipped
			}
			continue
		}
		eng := &engineRun{s: s, sv: sv}
		for _, i := range mine {
			e := &s.index.Pairs[i]
			if stopped {
				e.Status = StatusSkipped
				continue
			}
			if len(work[i].todo) == 0 {
				s.say("%s: every level complete and valid on disk: skipped", e.Name())
				if err := s.finish(ctx, work[i], e, nil, nil); err != nil {
					return res, err
				}
				continue
			}
			perr := s.runPair(ctx, eng, work[i], e)
			if err := s.save(); err != nil {
				eng.stop()
				return res, err
			}
			if ctx.Err() != nil {
				eng.stop()
				return res, s.end(StatusInterrupted, fmt.Errorf("interrupted during %s; resume with --resume %s", e.Name(), s.dir))
			}
			if perr != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", e.Name(), perr))
				s.say("%s failed: %v", e.Name(), perr)
				if o.FailFast {
					stopped = true
				}
			}
		}
		eng.stop()
	}
	status, runErr := StatusOK, error(nil)
	if len(failed) > 0 {
		status, runErr = StatusFailed, fmt.Errorf("%d of %d pairs failed (sweep.json records them; --resume %s runs them again):\n  %s",
			len(failed), len(pairs), s.dir, strings.Join(failed, "\n  "))
	}
	if err := s.end(status, runErr); err != nil && runErr == nil {
		return res, err
	}
	if !o.NoReport {
		s.say("sweep report")
		if err := WriteReport(ctx, s.dir, o.Force); err != nil {
			return res, s.end(StatusFailed, fmt.Errorf("writing the sweep report: %w", err))
		}
	}
	if runErr != nil {
		return res, runErr
	}
	s.say("done: %s (%s)", s.dir, roundDur(time.Since(s.start)))
	return res, nil
}

// checkEdits says which reports of the sweep and of its pairs were edited
// since a report wrote them (or never were a report's): the resume would
// replace them; Force allows it.
func (s *sweep) checkEdits(work []pairWork) error {
	var errs []error
	owned, err := report.OpenOwned(s.dir, s.o.Force)
	if err == nil {
		err = owned.Check(ReadmeFile, ParetoChart)
	}
	if err != nil {
		errs = append(errs, err)
	}
	for _, w := range work {
		if _, err := os.Stat(w.dir); err != nil {
			continue // never run: nothing to keep
		}
		owned, err := report.OpenOwned(w.dir, s.o.Force)
		if err == nil {
			err = owned.CheckAll()
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("--resume would replace files edited since their report: %w\n(save your edits under another name, or pass --force to replace them)", errors.Join(errs...))
	}
	return nil
}

// end records how the sweep ended and returns err.
func (s *sweep) end(status string, err error) error {
	s.index.Status, s.index.End = status, s.now().UTC().Format(time.RFC3339)
	s.index.Error = ""
	if err != nil {
		s.index.Error = err.Error()
	}
	if werr := s.save(); werr != nil && err == nil {
		return werr
	}
	return err
}

func (s *sweep) save() error {
	return atomicfile.WriteFunc(IndexFile(s.dir), s.index.Write)
}

// freshIndex lists every pair as pending; an earlier index keeps its
// start time and the servers' start counts.
func (s *sweep) freshIndex(pairs []Pair, dropped []Dropped) *Index {
	x := &Index{SchemaVersion: IndexSchemaVersion, Tool: s.o.Tool, Plan: filepath.Base(PlanFile(s.dir)), Status: StatusRunning,
		Start: s.now().UTC().Format(time.RFC3339), Dropped: dropped, Servers: []ServerEntry{}, Pairs: []PairEntry{}}
	old := s.index
	if old != nil && old.Start != "" {
		x.Start = old.Start
	}
	for _, sv := range s.p.Servers {
		if !slices.ContainsFunc(pairs, func(pr Pair) bool { return pr.Server.Name == sv.Name }) {
			continue
		}
		se := ServerEntry{Name: sv.Name, Dir: sv.Name, GPUs: s.p.GPUs(sv)}
		if old != nil {
			if i := slices.IndexFunc(old.Servers, func(o ServerEntry) bool { return o.Name == sv.Name }); i >= 0 {
				se.Starts, se.Command, se.Env = old.Servers[i].Starts, old.Servers[i].Command, old.Servers[i].Env
			}
		}
		x.Servers = append(x.Servers, se)
	}
	for _, pr := range pairs {
		e := PairEntry{Server: pr.Server.Name, Bench: pr.Bench.Name, Dir: filepath.Join(pr.Server.Name, pr.Bench.Name), Status: StatusPending}
		for _, c := range pr.Workload.Concurrencies {
			e.Levels = append(e.Levels, LevelEntry{Conc: c, Status: StatusPending})
		}
		x.Pairs = append(x.Pairs, e)
	}
	return x
}

func (x *Index) server(name string) *ServerEntry {
	for i := range x.Servers {
		if x.Servers[i].Name == name {
			return &x.Servers[i]
		}
	}
	return nil
}

// openSweep reads a sweep directory's plan and index.
func openSweep(dir string) (*Plan, *Index, error) {
	if !IsSweep(dir) {
		return nil, nil, fmt.Errorf("%s is not a sweep directory (no sweep.json): --resume takes the directory a plan's run made", dir)
	}
	p, err := Load(PlanFile(dir))
	if err != nil {
		return nil, nil, err
	}
	x, err := LoadIndex(IndexFile(dir))
	if err != nil {
		return nil, nil, err
	}
	return p, x, nil
}

// write writes the plan as plan.json of a sweep directory: its relative
// paths made absolute, so that the copy reads the same files.
func (p *Plan) write(w io.Writer) error {
	c := *p
	c.ModelConfig = absPath(p.rel(p.ModelConfig))
	c.SimKernels = nil
	for _, k := range p.SimKernels {
		if !strings.HasPrefix(k, profiling.CorpusPrefix) {
			k = absPath(p.rel(k))
		}
		c.SimKernels = append(c.SimKernels, k)
	}
	return json.MarshalWrite(w, &c, jsontext.Multiline(true), jsontext.WithIndent("  "), jsontext.EscapeForHTML(false))
}

func absPath(p string) string {
	if p == "" {
		return p
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// engineRun is a server variant's engine, started when first needed.
type engineRun struct {
	s        *sweep
	sv       Server
	srv      *engine.Server
	spec     engine.Spec
	startErr error
}

func (e *engineRun) dir() string    { return filepath.Join(e.s.dir, e.sv.Name) }
func (e *engineRun) traces() string { return filepath.Join(e.dir(), "traces") }

// ensure has the engine serving: started on first use, started again
// after it died. A start that failed is not tried again for this variant.
func (e *engineRun) ensure(ctx context.Context) error {
	if e.startErr != nil {
		return e.startErr
	}
	if e.srv != nil {
		select {
		case <-e.srv.Exited():
			e.s.say("%s: the engine had exited (%v): starting it again", e.sv.Name, e.srv.Err())
			e.srv = nil
		default:
			return nil
		}
	}
	spec := e.s.p.spec(e.sv, e.s.o.Options)
	spec.ProfilerDir = absPath(e.traces())
	se := e.s.index.server(e.sv.Name)
	fail := func(err error) error {
		e.startErr = fmt.Errorf("engine %s: %w", e.sv.Name, err)
		se.Error = err.Error()
		return e.startErr
	}
	if _, err := spec.Check(); err != nil {
		return fail(err)
	}
	if spec.Kind != engine.Sim {
		rep, err := engine.Preflight{Force: e.s.o.ForceGPU}.Check(ctx, spec)
		if err != nil {
			return fail(err)
		}
		if g := rep.String(); g != "" {
			e.s.say("GPU memory: %s", strings.ReplaceAll(g, "\n", "; "))
		}
	}
	if err := os.MkdirAll(e.traces(), 0o755); err != nil {
		return fail(err)
	}
	if err := keepOldLog(e.dir()); err != nil {
		return fail(err)
	}
	e.s.say("%s: starting %s", e.sv.Name, spec.Kind)
	started := time.Now()
	srv, err := engine.Start(ctx, spec, engine.Options{RunDir: e.dir(), ReadyTimeout: e.s.o.ReadyTimeout})
	se.Starts++
	if err != nil {
		return fail(err)
	}
	e.srv, e.spec = srv, spec
	c := srv.Command()
	se.Command, se.Env, se.Error = c.String(), c.Env, ""
	if in := srv.Installed(); in != nil {
		se.Version, se.Commit = in.Version, in.Commit
	}
	e.s.say("%s: serving at %s (ready in %.1f s)", e.sv.Name, srv.URL(), time.Since(started).Seconds())
	return nil
}

func (e *engineRun) stop() {
	if e.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := e.srv.Stop(ctx); err != nil {
		e.s.say("%s: stopping the engine: %v", e.sv.Name, err)
	}
	e.srv = nil
}

// keepOldLog moves an earlier start's server.log to server.log.N, since
// the engine never overwrites a log.
func keepOldLog(dir string) error {
	log := filepath.Join(dir, engine.LogFile)
	if _, err := os.Stat(log); err != nil {
		return nil
	}
	for i := 1; i < 1000; i++ {
		old := fmt.Sprintf("%s.%d", log, i)
		if _, err := os.Stat(old); errors.Is(err, os.ErrNotExist) {
			return os.Rename(log, old)
		}
	}
	return fmt.Errorf("%s: too many earlier logs", log)
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
