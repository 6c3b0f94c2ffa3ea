package fleet

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/go-json-experiment/json"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/internal/sidefile"
	"github.com/profile-model/profile-model/profiling/diff"
	"github.com/profile-model/profile-model/profiling/plan"
)

// A fleet's results are run directories laid out ROOT/.../<sweep>/<repeat>/
// (the harness keeps them so under $PROFILE_MODEL_KEEP_RUNS, one <repeat>
// per go test -count): the sweep is named by the run directory's parent.
// A downloaded artifact adds levels above <sweep> (result-<sweep>/), which
// do not matter. A plan's job keeps each repeat's sweep directory (the one
// run --plan makes, with sweep.json) instead: each of its server × bench
// pairs is a run directory, named <plan>/<server>/<bench> as a sweep.

// RunDir is one kept run of a sweep, or of one pair of a plan.
type RunDir struct {
	// Sweep is the sweep's name, or <plan>/<server>/<bench> for a pair.
	Sweep string
	// Repeat tells the repeats apart: the run directory's own name (run1,
	// run2, ...), or for a plan the sweep directory's.
	Repeat string
	Dir    string
	// Plan, Server and Bench name a plan's pair; "" for a sweep.
	Plan, Server, Bench string
}

// FindRuns lists the run directories (those holding run.json) under the
// roots, sorted by sweep and repeat. A root may itself be a run directory.
func FindRuns(roots ...string) ([]RunDir, error) {
	var out []RunDir
	seen := map[string]bool{}
	for _, root := range roots {
		st, err := os.Stat(root)
		if err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("results: %s is not a directory: give the folders the sweep jobs uploaded (ROOT/<sweep>/<repeat>/run.json)", root)
		}
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			if plan.IsSweep(p) {
				pairs, err := planRuns(p)
				if err != nil {
					return err
				}
				for _, r := range pairs {
					if abs, _ := filepath.Abs(r.Dir); !seen[abs] {
						seen[abs] = true
						out = append(out, r)
					}
				}
				return filepath.SkipDir
			}
			if !fileExists(results.Run(p).RunInfo()) {
				return nil
			}
			abs, _ := filepath.Abs(p)
			if !seen[abs] {
				seen[abs] = true
				out = append(out, RunDir{Sweep: filepath.Base(filepath.Dir(abs)), Repeat: d.Name(), Dir: p})
			}
			// A run directory's own folders (levels/, traces/) hold no runs.
			return filepath.SkipDir
		})
		if err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
	}
	slices.SortFunc(out, func(a, b RunDir) int {
		return cmp.Or(cmp.Compare(a.Sweep, b.Sweep), cmp.Compare(len(a.Repeat), len(b.Repeat)), cmp.Compare(a.Repeat, b.Repeat), cmp.Compare(a.Dir, b.Dir))
	})
	return out, nil
}

// planRuns are the pairs of a plan's sweep directory that have a run
// directory (a pair whose engine never served has none).
func planRuns(dir string) ([]RunDir, error) {
	x, err := plan.LoadIndex(plan.IndexFile(dir))
	if err != nil {
		return nil, err
	}
	// plan.json holds absolute paths of the machine that ran it, which
	// plan.Load would check: only the name is needed here.
	data, err := sidefile.Read(context.Background(), plan.PlanFile(dir), "the sweep plan", sidefile.Small)
	if err != nil {
		return nil, fmt.Errorf("%s: a sweep directory without its plan: %w", dir, err)
	}
	var named struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(data, &named); err != nil || named.Name == "" {
		return nil, fmt.Errorf("%s: no plan name (%v): is it the plan.json that run --plan wrote?", plan.PlanFile(dir), err)
	}
	var out []RunDir
	for _, e := range x.Pairs {
		rd := RunDir{Sweep: named.Name + "/" + e.Server + "/" + e.Bench, Repeat: filepath.Base(dir), Dir: filepath.Join(dir, e.Dir),
			Plan: named.Name, Server: e.Server, Bench: e.Bench}
		if fileExists(results.Run(rd.Dir).RunInfo()) {
			out = append(out, rd)
		}
	}
	return out, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// LevelRun is one level of one kept run: its status and metrics, client
// ones as bench.txt names them and kernel ones from the level's analysis
// (layer-us, <category>-us/layer).
type LevelRun struct {
	Conc     int
	Status   string
	DecodeBS int
	Device   string
	Metrics  []results.Metric
	// Profile is the level's analysis, nil when it has none.
	Profile *diff.Profile
	Note    string // why metrics are missing
}

// RunResult is what one kept run holds.
type RunResult struct {
	RunDir
	Info   *results.RunInfo
	Levels []LevelRun
}

// LoadRun reads a kept run: run.json, each level's result and analysis.
func LoadRun(rd RunDir) (*RunResult, error) {
	run := results.Run(rd.Dir)
	info, err := results.LoadRunInfo(run.RunInfo())
	if err != nil {
		return nil, err
	}
	rr := &RunResult{RunDir: rd, Info: info}
	for _, li := range info.Levels {
		lr := LevelRun{Conc: li.Conc, Status: li.Status, DecodeBS: li.DecodeBS, Device: li.Device}
		lv, err := results.LoadLevel(run.LevelResult(li.Conc))
		switch {
		case err == nil:
			lr.Metrics = results.BenchResultOf(lv, info.Sweep.ISL, info.Sweep.OSL).Metrics
		case os.IsNotExist(err):
			lr.Note = fmt.Sprintf("no %s", filepath.Base(run.LevelResult(li.Conc)))
		default:
			return nil, err
		}
		if lr.Status == "ok" {
			p, err := diff.LoadLevel(run.Level(li.Conc), nil)
			if err != nil {
				lr.Note = fmt.Sprintf("no kernel analysis: %v", err)
			} else {
				lr.Profile = p
				lr.Metrics = append(lr.Metrics, kernelMetrics(p)...)
			}
		}
		rr.Levels = append(rr.Levels, lr)
	}
	slices.SortFunc(rr.Levels, func(a, b LevelRun) int { return cmp.Compare(a.Conc, b.Conc) })
	return rr, nil
}

// LayerUnit is the GPU time of an average decode layer; a category's
// share of it is CategoryUnit(category).
const LayerUnit = "layer-us"

// CategoryUnit names a category's time per decode layer as a benchmark
// unit ("MoE expert GEMM" → "moe-expert-gemm-us/layer"), as BenchmarkSweep
// does.
func CategoryUnit(category string) string { return results.CategoryUnit(category) + "-us/layer" }

// kernelMetrics are a level's time per decode layer, in total and per
// category (largest first).
func kernelMetrics(p *diff.Profile) []results.Metric {
	byCat := map[string]float64{}
	total := 0.0
	for _, pos := range p.Positions {
		byCat[pos.Category] += pos.LayerUS
		total += pos.LayerUS
	}
	cats := make([]string, 0, len(byCat))
	for c := range byCat {
		cats = append(cats, c)
	}
	sort.Slice(cats, func(i, j int) bool {
		return cmp.Or(cmp.Compare(byCat[cats[j]], byCat[cats[i]]), cmp.Compare(cats[i], cats[j])) < 0
	})
	out := []results.Metric{{Value: total, Unit: LayerUnit}}
	for _, c := range cats {
		if byCat[c] > 0 {
			out = append(out, results.Metric{Value: byCat[c], Unit: CategoryUnit(c)})
		}
	}
	return out
}
