// Package fleet runs the declared sweeps on a fleet of CI runners: it
// expands fixtures/sweeps into GitHub Actions job matrices (one job per
// sweep, on the runner labels of the sweep's GPU), collects the run
// directories the jobs upload into one summary per sweep and level, and
// compares two such collections, flagging throughput drops, latency rises
// and kernel-time rises beyond thresholds.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/profile-model/profile-model/internal/sidefile"
	"github.com/profile-model/profile-model/profiling/engine"
)

// RunnerMap says where each kind of sweep runs: the runner labels of the
// simulated engine's sweeps (no GPU) and of each GPU, as the sweeps name
// it (profiling.Sweep.GPU, e.g. "AMD Instinct MI355X").
type RunnerMap struct {
	Description string            `json:"description,omitempty"`
	Sim         Runner            `json:"sim"`
	GPUs        map[string]Runner `json:"gpus"`

	path string
}

// Runner is one kind of CI runner.
type Runner struct {
	// Labels are the runs-on labels, e.g. ["self-hosted", "mi355x"].
	Labels []string `json:"labels"`
	// TimeoutMinutes bounds a job on it (GitHub's timeout-minutes; the
	// workflow gives the sweep's go test a few minutes less, so that a
	// hung sweep is reported by the test).
	TimeoutMinutes int `json:"timeout_minutes"`
}

// DefaultRunnerMap is the repository's runner map, relative to the
// repository root.
const DefaultRunnerMap = "fixtures/runners.json"

// LoadRunnerMap reads and checks a runner map.
func LoadRunnerMap(path string) (*RunnerMap, error) {
	data, err := sidefile.Read(context.Background(), path, "the runner map", sidefile.Small)
	if err != nil {
		return nil, err
	}
	return ParseRunnerMap(data, path)
}

// ParseRunnerMap reads a runner map; path names it in errors.
func ParseRunnerMap(data []byte, path string) (*RunnerMap, error) {
	rm := &RunnerMap{path: path}
	if err := json.Unmarshal(data, rm, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("%s: %w (the fields are description, sim and gpus; a runner has labels and timeout_minutes)", path, err)
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(path+": "+format, a...)) }
	check := func(field string, r Runner) {
		if len(r.Labels) == 0 {
			bad("%s: no labels: give the runs-on labels of its runners, e.g. [\"self-hosted\", \"mi355x\"]", field)
		}
		for _, l := range r.Labels {
			if strings.TrimSpace(l) == "" || strings.ContainsAny(l, ",\n") {
				bad("%s: label %q: labels are single words without commas", field, l)
			}
		}
		if r.TimeoutMinutes < 1 || r.TimeoutMinutes > 35*24*60 {
			bad("%s: timeout_minutes %d: give 1 to 50400 (GitHub's limit for self-hosted runners)", field, r.TimeoutMinutes)
		}
	}
	check("sim", rm.Sim)
	if len(rm.GPUs) == 0 {
		bad("gpus: none: map each GPU the sweeps name to its runner labels")
	}
	for _, gpu := range slices.Sorted(maps.Keys(rm.GPUs)) {
		check(fmt.Sprintf("gpus[%q]", gpu), rm.GPUs[gpu])
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return rm, nil
}

// Path is the file the map was read from.
func (rm *RunnerMap) Path() string { return rm.path }

// runner is where a job of the engine on the GPU runs; path names the
// sweep or plan in errors.
func (rm *RunnerMap) runner(kind engine.Kind, gpu, path string) (Runner, error) {
	if kind == engine.Sim {
		return rm.Sim, nil
	}
	if gpu == "" {
		return Runner{}, fmt.Errorf("%s: engine %s but no gpu: the matrix picks the runner by its gpu; declare it (e.g. \"AMD Instinct MI355X\")", path, kind)
	}
	r, ok := rm.GPUs[gpu]
	if !ok {
		return Runner{}, fmt.Errorf("%s: gpu %q has no runner in %s: add it under gpus with its runs-on labels", path, gpu, rm.Path())
	}
	return r, nil
}
