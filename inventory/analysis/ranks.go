package analysis

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/tracing"
)

// A tensor-parallel level writes one trace per rank: rank_<r>/ (ATOM),
// dp<d>_tp<r> with data parallelism, a pp<p>_ prefix with pipeline
// parallelism. RankFiles finds them, LoadRanks analyses them in parallel,
// CompareRanks sets them side by side.

var (
	rankRE = regexp.MustCompile(`(?:^|[^a-z0-9])rank[_-]?(\d+)`)
	tpRE   = regexp.MustCompile(`(?:^|[^a-z0-9])tp(\d+)`)
	dpRE   = regexp.MustCompile(`(?:^|[^a-z0-9])dp(\d+)`)
	ppRE   = regexp.MustCompile(`(?:^|[^a-z0-9])pp(\d+)`)
)

// RankID is where a trace sits in the parallel layout; -1 when its path
// does not say.
type RankID struct {
	PP, DP, TP int
}

func (id RankID) String() string {
	var parts []string
	if id.PP >= 0 {
		parts = append(parts, fmt.Sprintf("pp%d", id.PP))
	}
	if id.DP >= 0 {
		parts = append(parts, fmt.Sprintf("dp%d", id.DP))
	}
	parts = append(parts, fmt.Sprintf("rank %d", max(id.TP, 0)))
	return strings.Join(parts, " ")
}

// RankOf reads a trace path's rank: rank_<r>, dp<d>_tp<r>, pp<p>_ in any
// of its directory or file names (the innermost that says wins).
func RankOf(path string) RankID {
	id := RankID{-1, -1, -1}
	p := strings.ToLower(filepath.ToSlash(path))
	find := func(re *regexp.Regexp) int {
		m := re.FindAllStringSubmatch(p, -1)
		if m == nil {
			return -1
		}
		v, err := strconv.Atoi(m[len(m)-1][1])
		if err != nil {
			return -1
		}
		return v
	}
	id.PP, id.DP = find(ppRE), find(dpRE)
	if id.TP = find(tpRE); id.TP < 0 {
		id.TP = find(rankRE)
	}
	return id
}

// RankFiles expands the arguments of a command into trace files: a file
// is itself, a directory gives every *.json / *.json.gz trace below it
// (one level of rank directories deep). Files come sorted by rank (pp, dp,
// tp), then by path.
func RankFiles(args []string) ([]string, error) {
	var files []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			files = append(files, a)
			continue
		}
		var found []string
		captures := 0
		for _, pat := range []string{"*.json", "*.json.gz", "*/*.json", "*/*.json.gz"} {
			m, err := filepath.Glob(filepath.Join(a, pat))
			if err != nil {
				return nil, err
			}
			for _, f := range m {
				// Capture traces (capture_traces/ of a rank directory) are
				// not ranks: layers reads them beside their trace.
				if filepath.Base(filepath.Dir(f)) != tracing.CaptureDir {
					found = append(found, f)
				} else {
					captures++
				}
			}
		}
		if len(found) == 0 && captures > 0 {
			return nil, fmt.Errorf("%s: only capture traces (%s/), no execution trace: pass the trace recorded while serving, and one capture file with layers --capture", a, tracing.CaptureDir)
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: no trace (*.json or *.json.gz) in it or in its rank directories", a)
		}
		files = append(files, found...)
	}
	slices.SortStableFunc(files, func(a, b string) int {
		x, y := RankOf(a), RankOf(b)
		if c := slices.Compare([]int{x.PP, x.DP, x.TP}, []int{y.PP, y.DP, y.TP}); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(files), nil
}

// LoadRanks analyses the traces in parallel, at most as many at once as
// there are cores (each analysis holds its trace in memory), and returns
// the results in the order of files.
func LoadRanks(ctx context.Context, files []string, opt Options) ([]*Result, error) {
	out := make([]*Result, len(files))
	errs := make([]error, len(files))
	sem := make(chan struct{}, max(1, min(runtime.GOMAXPROCS(0), len(files))))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			o := opt
			o.Progress = nil // one bar cannot show several files
			out[i], errs[i] = Load(ctx, f, o)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RankStat is one rank's share of a tensor-parallel level. Times are per
// decode step (mean over the steps compared) unless said otherwise.
type RankStat struct {
	Rank        string  `json:"rank"`
	Path        string  `json:"path"`
	DecodeSteps int     `json:"decode_steps"`
	StepUS      float64 `json:"step_us"`   // GPU span of a step, first kernel start to last kernel end
	KernelUS    float64 `json:"kernel_us"` // kernel time in a step
	// BusyUS is KernelUS less the time the rank's collectives waited for
	// the slowest rank: the work the rank itself did.
	BusyUS       float64 `json:"busy_us"`
	LayerUS      float64 `json:"layer_us"`      // robust decode table: the sum of a layer's positions
	CollectiveUS float64 `json:"collective_us"` // collective kernels in a step
	// OwnUS and WaitUS split CollectiveUS: a collective ends on every rank
	// together, so its shortest run over the ranks is its own time, and
	// what a rank spends beyond that is waiting for the slowest rank.
	OwnUS  float64 `json:"collective_own_us"`
	WaitUS float64 `json:"collective_wait_us"`
	// Slowest is the number of compared steps in which this rank was the
	// slowest (most busy time).
	Slowest int `json:"slowest_steps"`
}

// RankReport sets the ranks of one level side by side.
type RankReport struct {
	Ranks []RankStat `json:"ranks"`
	Steps int        `json:"steps_compared"` // decode steps every rank has
	// SkewUS is the slowest minus the fastest rank's busy time in a step,
	// mean and largest over the steps compared.
	SkewUS    float64        `json:"skew_us"`
	MaxSkewUS float64        `json:"max_skew_us"`
	Warnings  []diag.Warning `json:"warnings,omitempty"`
}

// rankSteps is what CompareRanks needs of one rank's decode steps.
type rankSteps struct {
	span, kernel []int64   // ns per step
	coll         [][]int64 // per step: collective kernel durations in start order
}

func collectSteps(r *Result) rankSteps {
	var rs rankSteps
	tr := r.Trace
	isColl := make([]bool, len(tr.Names)) // by name index: each name classified once
	for id, name := range tr.Names {
		isColl[id] = r.classes.Classify(name).Category == collectiveCategory
	}
	for i := range tr.Steps {
		st := &tr.Steps[i]
		if st.Kind != tracing.StepDecode || len(st.Kernels) == 0 {
			continue
		}
		var first, last, kern int64
		var coll []int64
		seen := false
		for _, k := range st.Kernels {
			kk := &tr.Kernels[k]
			if kk.Kind != tracing.KindKernel {
				continue
			}
			if !seen || kk.Start < first {
				first, seen = kk.Start, true
			}
			last = max(last, kk.End())
			kern += kk.Dur
			if isColl[kk.NameID] {
				coll = append(coll, kk.Dur)
			}
		}
		rs.span = append(rs.span, last-first)
		rs.kernel = append(rs.kernel, kern)
		rs.coll = append(rs.coll, coll)
	}
	return rs
}

const collectiveCategory = "All-reduce / collectives"

// CompareRanks compares the decode steps of a level's ranks, step by step
// (ranks run the same steps in lockstep: the i-th decode step of each).
func CompareRanks(results []*Result) *RankReport {
	rep := &RankReport{}
	steps := make([]rankSteps, len(results))
	n := math.MaxInt
	for i, r := range results {
		steps[i] = collectSteps(r)
		n = min(n, len(steps[i].span))
	}
	if len(results) == 0 || n == math.MaxInt {
		n = 0
	}
	rep.Steps = n
	mismatch := false
	for i, r := range results {
		st := RankStat{Rank: RankOf(r.Path).String(), Path: r.Path, DecodeSteps: len(steps[i].span)}
		if st.DecodeSteps != n {
			mismatch = true
		}
		if r.Decode != nil {
			for _, p := range r.Decode.Positions {
				if p.LayerKind == 0 {
					st.LayerUS += p.AvgUS
				}
			}
		}
		rep.Ranks = append(rep.Ranks, st)
	}
	if mismatch {
		rep.Warnings = append(rep.Warnings, diag.New(diag.IrregularLayers, fmt.Sprintf("the ranks have different numbers of decode steps; the first %d of each are compared", n)))
	}
	busy := make([]float64, len(results))
	for s := 0; s < n; s++ {
		// Collectives match by their order in the step.
		nc := math.MaxInt
		for i := range results {
			nc = min(nc, len(steps[i].coll[s]))
		}
		wait := make([]int64, len(results))
		for c := 0; c < nc; c++ {
			own := int64(math.MaxInt64)
			for i := range results {
				own = min(own, steps[i].coll[s][c])
			}
			for i := range results {
				wait[i] += steps[i].coll[s][c] - own
				rep.Ranks[i].OwnUS += float64(own) / 1000
			}
		}
		slow, fast := 0, 0
		for i := range results {
			st := &rep.Ranks[i]
			var coll int64
			for _, d := range steps[i].coll[s] {
				coll += d
			}
			st.StepUS += float64(steps[i].span[s]) / 1000
			st.KernelUS += float64(steps[i].kernel[s]) / 1000
			st.CollectiveUS += float64(coll) / 1000
			st.WaitUS += float64(wait[i]) / 1000
			busy[i] = float64(steps[i].kernel[s]-wait[i]) / 1000
			st.BusyUS += busy[i]
			if busy[i] > busy[slow] {
				slow = i
			}
			if busy[i] < busy[fast] {
				fast = i
			}
		}
		rep.Ranks[slow].Slowest++
		skew := busy[slow] - busy[fast]
		rep.SkewUS += skew
		rep.MaxSkewUS = max(rep.MaxSkewUS, skew)
	}
	if n > 0 {
		for i := range rep.Ranks {
			st := &rep.Ranks[i]
			for _, v := range []*float64{&st.StepUS, &st.KernelUS, &st.BusyUS, &st.CollectiveUS, &st.OwnUS, &st.WaitUS} {
				*v /= float64(n)
			}
		}
		rep.SkewUS /= float64(n)
	}
	return rep
}
