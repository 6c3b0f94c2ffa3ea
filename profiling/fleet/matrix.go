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

// Entry is one job of the matrix: one sweep on one kind of runner. The
// JSON names are what the workflow reads as matrix.<name>.
type Entry struct {
	Sweep  string `json:"sweep"`
	Engine string `json:"engine"`
	// GPU is the device the sweep's goldens were recorded on; "" for the
	// simulated engine.
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
	// Tags are the go test build tags the sweep needs ("gpu" or "").
	Tags string `json:"tags"`
	// Run is the go test -run pattern that selects exactly this sweep.
	Run string `json:"run"`
}

// Matrix is one GitHub Actions matrix: strategy.matrix of a job.
type Matrix struct {
	Include []Entry `json:"include"`
}

// Plan is the output of the matrix command: the matrices of every sweep.
type Plan struct {
	Sweeps   int      `json:"sweeps"`
	GPUJobs  int      `json:"gpu_jobs"`
	SimJobs  int      `json:"sim_jobs"`
	Matrices []Matrix `json:"matrices"`
}

// EntryOf is the job of one sweep.
func EntryOf(s *SweepFile, rm *RunnerMap) (Entry, error) {
	e := Entry{Sweep: s.Name, Engine: s.Engine, GPU: s.GPU, NeedsCorpus: s.NeedsCorpus()}
	r := rm.Sim
	if s.Kind() == engine.Sim {
		e.Run = TestRun("TestSimSweeps", s.Name)
	} else {
		e.NeedsGPU, e.Tags, e.Run = true, "gpu", TestRun("TestGPUSweeps", s.Name)
		if s.GPU == "" {
			return e, fmt.Errorf("%s: engine %s but no gpu: the matrix picks the runner by the sweep's gpu; declare it (e.g. \"AMD Instinct MI355X\")", s.path, s.Engine)
		}
		var ok bool
		if r, ok = rm.GPUs[s.GPU]; !ok {
			return e, fmt.Errorf("%s: gpu %q has no runner in %s: add it under gpus with its runs-on labels", s.path, s.GPU, rm.Path())
		}
	}
	e.RunsOn, e.TimeoutMinutes = r.Labels, r.TimeoutMinutes
	e.Runner = strings.Join(r.Labels, "-")
	return e, nil
}

// TestRun is the go test -run pattern of one subtest, anchored and quoted
// so that it selects that sweep only (sweep names hold dots).
func TestRun(test, sweep string) string {
	return "^" + test + "$/^" + regexp.QuoteMeta(sweep) + "$"
}

// MakePlan puts the sweeps' jobs into matrices of at most perMatrix
// entries each (MaxJobsPerMatrix when perMatrix is 0), in sweep order.
func MakePlan(sweeps []*SweepFile, rm *RunnerMap, perMatrix int) (*Plan, error) {
	if perMatrix <= 0 || perMatrix > MaxJobsPerMatrix {
		perMatrix = MaxJobsPerMatrix
	}
	p := &Plan{Sweeps: len(sweeps), Matrices: []Matrix{}}
	var all []Entry
	for _, s := range sweeps {
		e, err := EntryOf(s, rm)
		if err != nil {
			return nil, err
		}
		if e.NeedsGPU {
			p.GPUJobs++
		} else {
			p.SimJobs++
		}
		all = append(all, e)
	}
	for len(all) > 0 {
		n := min(perMatrix, len(all))
		p.Matrices = append(p.Matrices, Matrix{Include: all[:n:n]})
		all = all[n:]
	}
	return p, nil
}
