package fleet

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/profile-model/profile-model/internal/results"
)

// Summary is a fleet's results merged: per sweep and level, the median of
// each metric over the repeats that completed.
type Summary struct {
	Sweeps []SweepSummary `json:"sweeps"`
	// Runs are the kept runs, in sweep and repeat order.
	Runs []*RunResult `json:"-"`
}

// SweepSummary is one sweep's results.
type SweepSummary struct {
	// Sweep is the sweep's name, or <plan>/<server>/<bench> for a plan's
	// pair, which Plan, Server and Bench name apart.
	Sweep  string         `json:"sweep"`
	Plan   string         `json:"plan,omitempty"`
	Server string         `json:"server,omitempty"`
	Bench  string         `json:"bench,omitempty"`
	Engine string         `json:"engine"`
	Model  string         `json:"model"`
	ISL    int            `json:"isl"`
	OSL    int            `json:"osl"`
	Runs   []string       `json:"runs"` // run directories
	Failed []string       `json:"failed,omitempty"`
	Levels []LevelSummary `json:"levels"`
}

// LevelSummary is one level of a sweep over its repeats.
type LevelSummary struct {
	Conc     int    `json:"conc"`
	OK       int    `json:"ok"`     // repeats whose level completed
	Failed   int    `json:"failed"` // repeats whose level did not
	DecodeBS int    `json:"decode_bs,omitempty"`
	Device   string `json:"device,omitempty"`
	// Metrics are the medians over the completed repeats, in the order of
	// the first repeat (client metrics, then layer-us and categories).
	Metrics []MetricSummary `json:"metrics"`
	Notes   []string        `json:"notes,omitempty"`
}

// MetricSummary is a metric's median and its values over the repeats.
type MetricSummary struct {
	Unit   string    `json:"unit"`
	Median float64   `json:"median"`
	Values []float64 `json:"values"`
}

// Metric finds a metric of the level.
func (l *LevelSummary) Metric(unit string) (MetricSummary, bool) {
	i := slices.IndexFunc(l.Metrics, func(m MetricSummary) bool { return m.Unit == unit })
	if i < 0 {
		return MetricSummary{}, false
	}
	return l.Metrics[i], true
}

// Merge reads every kept run under the roots into one summary.
func Merge(roots ...string) (*Summary, error) {
	dirs, err := FindRuns(roots...)
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no run directories (run.json) under %s: give the folders the sweep jobs uploaded", strings.Join(roots, ", "))
	}
	s := &Summary{}
	for _, d := range dirs {
		r, err := LoadRun(d)
		if err != nil {
			return nil, err
		}
		s.Runs = append(s.Runs, r)
	}
	for _, r := range s.Runs {
		if len(s.Sweeps) == 0 || s.Sweeps[len(s.Sweeps)-1].Sweep != r.Sweep {
			s.Sweeps = append(s.Sweeps, SweepSummary{Sweep: r.Sweep, Plan: r.Plan, Server: r.Server, Bench: r.Bench, Engine: r.Info.Engine.Kind, Model: r.Info.Engine.Model,
				ISL: r.Info.Sweep.ISL, OSL: r.Info.Sweep.OSL, Runs: []string{}, Levels: []LevelSummary{}})
		}
		ss := &s.Sweeps[len(s.Sweeps)-1]
		ss.Runs = append(ss.Runs, r.Dir)
		if r.Info.Status != "ok" {
			ss.Failed = append(ss.Failed, fmt.Sprintf("%s: status %s %s", r.Dir, r.Info.Status, r.Info.Error))
		}
	}
	for i := range s.Sweeps {
		s.Sweeps[i].Levels = mergeLevels(s.runsOf(s.Sweeps[i].Sweep))
	}
	return s, nil
}

func (s *Summary) runsOf(sweep string) []*RunResult {
	var out []*RunResult
	for _, r := range s.Runs {
		if r.Sweep == sweep {
			out = append(out, r)
		}
	}
	return out
}

func mergeLevels(runs []*RunResult) []LevelSummary {
	byConc := map[int]*LevelSummary{}
	var concs []int
	for _, r := range runs {
		for _, l := range r.Levels {
			ls := byConc[l.Conc]
			if ls == nil {
				ls = &LevelSummary{Conc: l.Conc}
				byConc[l.Conc] = ls
				concs = append(concs, l.Conc)
			}
			if l.Note != "" {
				ls.Notes = append(ls.Notes, fmt.Sprintf("%s: %s", r.Dir, l.Note))
			}
			if l.Status != "ok" {
				ls.Failed++
				continue
			}
			ls.OK++
			if ls.DecodeBS == 0 {
				ls.DecodeBS, ls.Device = l.DecodeBS, l.Device
			} else if l.DecodeBS != ls.DecodeBS {
				ls.Notes = append(ls.Notes, fmt.Sprintf("%s: decode batch size %d, not %d as in the first repeat", r.Dir, l.DecodeBS, ls.DecodeBS))
			}
			for _, m := range l.Metrics {
				i := slices.IndexFunc(ls.Metrics, func(x MetricSummary) bool { return x.Unit == m.Unit })
				if i < 0 {
					ls.Metrics = append(ls.Metrics, MetricSummary{Unit: m.Unit})
					i = len(ls.Metrics) - 1
				}
				ls.Metrics[i].Values = append(ls.Metrics[i].Values, m.Value)
			}
		}
	}
	slices.Sort(concs)
	out := make([]LevelSummary, 0, len(concs))
	for _, c := range concs {
		ls := byConc[c]
		for i := range ls.Metrics {
			ls.Metrics[i].Median = median(ls.Metrics[i].Values)
		}
		if ls.Metrics == nil {
			ls.Metrics = []MetricSummary{}
		}
		out = append(out, *ls)
	}
	return out
}

// hasUnit reports whether a level of s has the unit.
func (s *Summary) hasUnit(unit string) bool {
	for _, ss := range s.Sweeps {
		for i := range ss.Levels {
			if _, ok := ss.Levels[i].Metric(unit); ok {
				return true
			}
		}
	}
	return false
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// summaryUnits are the columns of the merged summary's table;
// energyUnits are added when a level has them (GPU telemetry).
var (
	summaryUnits = []struct{ unit, head string }{
		{"out-tok/s", "out tok/s"}, {"ttft-p50-ms", "TTFT p50 (ms)"}, {"tpot-p50-ms", "TPOT p50 (ms)"}, {LayerUnit, "µs/layer"},
	}
	energyUnits = []struct{ unit, head string }{
		{results.UnitPowerMean, "GPU W"}, {results.UnitJPerToken, "J/token"}, {results.UnitThrottleS, "s at a clock limit"},
	}
)

// WriteMarkdown writes the summary as a table: one row per sweep and
// level, medians over the repeats.
func (s *Summary) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	runs := 0
	for _, ss := range s.Sweeps {
		runs += len(ss.Runs)
	}
	fmt.Fprintf(&b, "# Fleet results\n\n%d sweeps, %d runs. Medians over each level's completed repeats.\n\n", len(s.Sweeps), runs)
	summaryUnits := summaryUnits
	if s.hasUnit(results.UnitJPerToken) {
		summaryUnits = append(slices.Clip(summaryUnits), energyUnits...)
	}
	b.WriteString("| sweep | engine | level | repeats ok/failed | decode bs |")
	for _, u := range summaryUnits {
		b.WriteString(" " + u.head + " |")
	}
	b.WriteString("\n|---|---|---:|---:|---:|" + strings.Repeat("---:|", len(summaryUnits)) + "\n")
	var notes []string
	for _, ss := range s.Sweeps {
		notes = append(notes, ss.Failed...)
		for _, l := range ss.Levels {
			fmt.Fprintf(&b, "| %s | %s | %d | %d/%d | %s |", ss.Sweep, ss.Engine, l.Conc, l.OK, l.Failed, intCell(l.DecodeBS))
			for _, u := range summaryUnits {
				cell := "–"
				if m, ok := l.Metric(u.unit); ok {
					cell = num(m.Median)
				}
				b.WriteString(" " + cell + " |")
			}
			b.WriteString("\n")
			notes = append(notes, l.Notes...)
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nNotes:\n\n")
		for _, n := range notes {
			b.WriteString("* " + n + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func intCell(v int) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprint(v)
}

// num prints a figure with three significant digits at least.
func num(v float64) string {
	switch a := max(v, -v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// BenchResults are every completed level of every run as Go benchmark
// lines named as BenchmarkSweep names them
// (Sweep/sweep=S/model=M/isl=I/osl=O/conc=N; a plan's pair
// Sweep/plan=P/server=V/bench=B/model=...), one line per repeat, so that
// benchstat compares two fleets' merges with the repeats as samples.
func (s *Summary) BenchResults() []results.BenchResult {
	var out []results.BenchResult
	for _, r := range s.Runs {
		for _, l := range r.Levels {
			if l.Status != "ok" || len(l.Metrics) == 0 {
				continue
			}
			name := results.BenchName(r.Info.Engine.Model, r.Info.Sweep.ISL, r.Info.Sweep.OSL, l.Conc)
			which := "sweep=" + r.Sweep
			if r.Plan != "" {
				which = "plan=" + r.Plan + "/server=" + r.Server + "/bench=" + r.Bench
			}
			name = "Sweep/" + which + "/" + strings.TrimPrefix(name, "Sweep/")
			out = append(out, results.BenchResult{Name: name, Iters: 1, Metrics: l.Metrics})
		}
	}
	slices.SortStableFunc(out, func(a, b results.BenchResult) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
