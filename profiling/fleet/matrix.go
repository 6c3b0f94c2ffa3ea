package fleet

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/profile-model/profile-model/profiling/engine"
)

// MaxJobsPerMatrix is GitHub Actions' limit on the jobs one matrix expands
// to; larger sets of sweeps are split into several matrices, each run by
// one job of an outer matrix (two levels, as ATOM's nightly does).
const MaxJobsPerMatrix = 256

// Entry is one job of the matrix: one sweep, or one server-setting plan,
// on one kind of runner. The JSON names are what the workflow reads as
// matrix.<name>.
type Entry struct {
	// Sweep names the job and its artifacts (result-<sweep>): the sweep's
	// name, or the plan's.
	Sweep  string `json:"sweep"`
	Engine string `json:"engine"`
	// GPU is the device the sweep's goldens were recorded on, or the plan
	// runs on; "" for the simulated engine.
	GPU string `json:"gpu,omitempty"`
	// NeedsGPU is false for the simulated engine's sweeps, which run on
	// any runner (GitHub-hosted ones included).
	NeedsGPU bool `json:"needs_gpu"`
	// NeedsCorpus: the sweep reads the reference corpus, and skips where
	// the runner has none.
	NeedsCorpus bool     `json:"needs_corpus,omitempty"`
	RunsOn      []string `json:"runs_on"`
	// Runner is the labels as one word, for job and artifact names.
	Runner         string `json:"runner"`
	TimeoutMinutes int    `json:"timeout_minutes"`
	// Tags are the go test build tags a sweep needs ("gpu" or "").
	Tags string `json:"tags"`
	// Run is the go test -run pattern that selects exactly this sweep; ""
	// for a plan.
	Run string `json:"run"`
	// Plan is a plan's file, as the sweeps folder was given (the job runs
	// profile-model run --plan on it); Pairs and Levels count its server ×
	// bench pairs and their concurrency levels.
	Plan   string `json:"plan,omitempty"`
	Pairs  int    `json:"pairs,omitempty"`
	Levels int    `json:"levels,omitempty"`
	// Command is what the job runs, in bash, from the repository root:
	// $COUNT repeats, each kept under $PROFILE_MODEL_KEEP_RUNS/<sweep>/
	// (profile-model on the PATH for a plan).
	Command string `json:"command"`
}

// Matrix is one GitHub Actions matrix: strategy.matrix of a job.
type Matrix struct {
	Include []Entry `json:"include"`
}

// Matrices is the output of the matrix command: the matrices of every
// sweep and plan.
type Matrices struct {
	Sweeps   int      `json:"sweeps"`
	Plans    int      `json:"plans"`
	GPUJobs  int      `json:"gpu_jobs"`
	SimJobs  int      `json:"sim_jobs"`
	Matrices []Matrix `json:"matrices"`
}

// EntryOf is the job of one sweep.
func EntryOf(s *SweepFile, rm *RunnerMap) (Entry, error) {
	e := Entry{Sweep: s.Name, Engine: s.Engine, GPU: s.GPU, NeedsCorpus: s.NeedsCorpus()}
	r, err := rm.runner(s.Kind(), s.GPU, s.path)
	if err != nil {
		return e, err
	}
	e.NeedsGPU = s.Kind() != engine.Sim
	if e.NeedsGPU {
		e.Tags, e.Run = "gpu", TestRun("TestGPUSweeps", s.Name)
	} else {
		e.Run = TestRun("TestSimSweeps", s.Name)
	}
	e.RunsOn, e.TimeoutMinutes = r.Labels, r.TimeoutMinutes
	e.Runner = strings.Join(r.Labels, "-")
	e.Command = sweepCommand(e)
	return e, nil
}

// sweepCommand runs a sweep's test $COUNT times; go test stops a few
// minutes before the job would, naming the test.
func sweepCommand(e Entry) string {
	tags := ""
	if e.Tags != "" {
		tags = " -tags=" + e.Tags
	}
	timeout := e.TimeoutMinutes
	if timeout > 10 {
		timeout -= 5
	}
	return fmt.Sprintf(`go test%s -run %s -count="$COUNT" -timeout=%dm -v ./profiling/`, tags, shellQuote(e.Run), timeout)
}

// shellQuote quotes s for bash.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// TestRun is the go test -run pattern of one subtest, anchored and quoted
// so that it selects that sweep only (sweep names hold dots).
func TestRun(test, sweep string) string {
	return "^" + test + "$/^" + regexp.QuoteMeta(sweep) + "$"
}

// MatrixOptions shape the matrices.
type MatrixOptions struct {
	// PerMatrix bounds the entries of one matrix (0: MaxJobsPerMatrix).
	PerMatrix int
	// Count is the repeats each job runs ($COUNT), for sizing the plans'
	// timeouts (0: one).
	Count int
}

// MakeMatrices puts the jobs of the sweeps and then the plans into
// matrices of at most o.PerMatrix entries each, in order.
func MakeMatrices(sweeps []*SweepFile, plans []*PlanFile, rm *RunnerMap, o MatrixOptions) (*Matrices, error) {
	perMatrix := o.PerMatrix
	if perMatrix <= 0 || perMatrix > MaxJobsPerMatrix {
		perMatrix = MaxJobsPerMatrix
	}
	m := &Matrices{Sweeps: len(sweeps), Plans: len(plans), Matrices: []Matrix{}}
	var all []Entry
	where := map[string]string{}
	add := func(e Entry, path string, err error) error {
		if err != nil {
			return err
		}
		if prev, ok := where[e.Sweep]; ok {
			return fmt.Errorf("%s and %s are both named %q: a job and its artifacts are named after it; rename one", prev, path, e.Sweep)
		}
		where[e.Sweep] = path
		if e.NeedsGPU {
			m.GPUJobs++
		} else {
			m.SimJobs++
		}
		all = append(all, e)
		return nil
	}
	for _, s := range sweeps {
		e, err := EntryOf(s, rm)
		if err := add(e, s.path, err); err != nil {
			return nil, err
		}
	}
	for _, p := range plans {
		e, err := PlanEntryOf(p, rm, o.Count)
		if err := add(e, p.Path(), err); err != nil {
			return nil, err
		}
	}
	for len(all) > 0 {
		n := min(perMatrix, len(all))
		m.Matrices = append(m.Matrices, Matrix{Include: all[:n:n]})
		all = all[n:]
	}
	return m, nil
}
