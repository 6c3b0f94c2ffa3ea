package fleet

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/profile-model/profile-model/profiling/engine"
	"github.com/profile-model/profile-model/profiling/plan"
)

// PlansDir is the folder of a sweeps folder that holds the server-setting
// plans (profile-model run --plan), each one job of the matrix.
const PlansDir = "plans"

// PlanFile is a plan the matrix runs.
type PlanFile = plan.Plan

// LoadPlanFiles reads and checks every plan of dir/plans (none when the
// folder is absent), sorted by name. A plan's name must be its file's
// base name: the results name the plan, and a re-run finds its file so.
func LoadPlanFiles(dir string) ([]*PlanFile, error) {
	paths, err := filepath.Glob(filepath.Join(dir, PlansDir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []*PlanFile
	for _, p := range paths {
		pl, err := plan.Load(p)
		if err != nil {
			return nil, err
		}
		if want := strings.TrimSuffix(filepath.Base(p), ".json"); pl.Name != want {
			return nil, fmt.Errorf("%s: name %q: must be the file's base name %q", p, pl.Name, want)
		}
		out = append(out, pl)
	}
	slices.SortFunc(out, func(a, b *PlanFile) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// Sizing of a plan's job: its modelled time (plan.Plan.Estimate: every
// level of every server × bench pair, one engine start per server) times
// planTimeMargin, plus planSetup for the checkout and build, rounded up
// to 5 minutes.
const (
	planTimeMargin = 2
	planSetup      = 15 * time.Minute
)

// PlanTimeout is the timeout, in minutes, of a plan's job that runs it
// count times.
func PlanTimeout(p *PlanFile, count int) int {
	// In float64 minutes, capped: a long plan must not wrap into a short
	// (or negative) timeout.
	m := float64(max(count, 1)*planTimeMargin)*p.Estimate().Minutes() + planSetup.Minutes()
	return int(math.Ceil(min(m, maxPlanMinutes)/5)) * 5
}

// maxPlanMinutes caps PlanTimeout far beyond any runner's timeout, so that
// the comparison with it still fails.
const maxPlanMinutes = 1 << 30

// PlanEntryOf is the job of one plan: it runs profile-model run --plan on
// the plan's file $COUNT times, each repeat into
// $PROFILE_MODEL_KEEP_RUNS/<plan>/run<k>/, the plan's own sweep directory
// under it. Its timeout is sized from the plan for count repeats
// (PlanTimeout), and must fit the runner's.
func PlanEntryOf(p *PlanFile, rm *RunnerMap, count int) (Entry, error) {
	e := Entry{Sweep: p.Name, Engine: p.Engine, GPU: p.GPU, NeedsGPU: p.Kind() != engine.Sim, Plan: p.Path()}
	e.NeedsCorpus = slices.ContainsFunc(p.SimKernels, func(k string) bool { return strings.HasPrefix(k, corpusPrefix) })
	r, err := rm.runner(p.Kind(), p.GPU, p.Path())
	if err != nil {
		return e, err
	}
	pairs, _ := p.Pairs()
	e.Pairs = len(pairs)
	for _, pr := range pairs {
		e.Levels += len(pr.Workload.Concurrencies)
	}
	e.RunsOn, e.Runner = r.Labels, strings.Join(r.Labels, "-")
	e.TimeoutMinutes = PlanTimeout(p, count)
	if e.TimeoutMinutes > r.TimeoutMinutes {
		return e, fmt.Errorf("%s: %d pairs, %d levels: about %s a run, so a job of %d minutes for %d repeats, beyond the %d minutes %s allows its runners: raise their timeout_minutes, run fewer repeats or split the plan",
			p.Path(), e.Pairs, e.Levels, p.Estimate().Round(time.Second), e.TimeoutMinutes, max(count, 1), r.TimeoutMinutes, rm.Path())
	}
	e.Command = fmt.Sprintf(`rc=0; for k in $(seq "$COUNT"); do profile-model run --plan %s --out "$PROFILE_MODEL_KEEP_RUNS"/%s/run$k || rc=1; done; exit $rc`,
		shellQuote(p.Path()), shellQuote(p.Name))
	return e, nil
}
