package fleet

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"golang.org/x/perf/benchmath"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/diff"
)

// Thresholds decide what a regression is, in percent of the baseline's
// median. A negative threshold turns its check off.
type Thresholds struct {
	// ThroughputDrop: a throughput unit (ThroughputUnits) that falls by
	// more than this. ATOM's nightly flags 5%.
	ThroughputDrop float64
	// LatencyRise: a latency unit (LatencyUnits) that rises by more than
	// this. ATOM's nightly flags 10%.
	LatencyRise float64
	// KernelRise: the time per decode layer, in total or of a kernel
	// category, that rises by more than this and by at least KernelMinUS.
	KernelRise  float64
	KernelMinUS float64

	ThroughputUnits []string
	LatencyUnits    []string

	// Alpha is the significance level: a change beyond its threshold is a
	// regression only when the Mann-Whitney U test of the two sides'
	// repeats (benchstat's test) gives p < Alpha. With fewer than four
	// repeats a side no change can reach p < 0.05, so a single run per
	// side never regresses: the change is reported as unconfirmed. 0
	// turns the test off: every change beyond a threshold regresses.
	Alpha float64
	// EnergyRise: an energy unit (EnergyUnits: joules per output token,
	// from the GPUs' telemetry) that rises by more than this; levels
	// without telemetry have none to compare. Off by default: sampled
	// power moves with the machine more than a GPU's kernels do.
	EnergyRise  float64
	EnergyUnits []string
}

// DefaultThresholds are ATOM's nightly practice (5% throughput, 10%
// latency) and the same 10% for kernel time per layer.
var DefaultThresholds = Thresholds{
	ThroughputDrop: 5, LatencyRise: 10, KernelRise: 10, KernelMinUS: 1,
	ThroughputUnits: []string{"out-tok/s"},
	LatencyUnits:    []string{"ttft-p50-ms", "tpot-p50-ms"},
	Alpha:           0.05,
	EnergyRise:      -1,
	EnergyUnits:     []string{results.UnitJPerToken},
}

// Finding is one metric of one level beyond its threshold.
type Finding struct {
	Sweep string  `json:"sweep"`
	Conc  int     `json:"conc"`
	Unit  string  `json:"unit"`
	Old   float64 `json:"old"`
	New   float64 `json:"new"`
	Pct   float64 `json:"pct"` // change in percent of Old; 0 when Old is 0
	// Kind is "throughput", "latency", "energy", "kernel" or "failed" (the level
	// completed in the baseline and not in the new results).
	Kind string `json:"kind"`
	// Kernel is, for a kernel finding, the kernel of the category whose
	// time per layer rose most (first repeats compared), "" when unknown;
	// KernelUS its time per layer in the baseline and the new results.
	Kernel   string      `json:"kernel,omitempty"`
	KernelUS *[2]float64 `json:"kernel_us,omitempty"`
	// P is the U test's p-value over the repeats, N the repeats of the
	// baseline and of the new results (absent for a failed level).
	P *float64 `json:"p,omitempty"`
	N *[2]int  `json:"n,omitempty"`
}

// Regression is the comparison of a fleet's results with a baseline.
type Regression struct {
	Thresholds Thresholds `json:"-"`
	Findings   []Finding  `json:"findings"`
	// Unconfirmed are changes beyond a threshold that the repeats cannot
	// tell from noise (p ≥ Alpha): reported, not regressions.
	Unconfirmed []Finding `json:"unconfirmed"`
	// Compared counts the levels found on both sides.
	Compared int `json:"compared"`
	// Missing are the sweeps and levels of the baseline the new results
	// lack, and NewOnly those only the new results have: not compared.
	Missing []string `json:"missing"`
	NewOnly []string `json:"new_only"`
	// Notes say what was not compared and why.
	Notes []string `json:"notes"`

	units   map[string]bool   // the units of the levels compared
	energy  bool              // some level had energy units on both sides
	engines map[string]string // sweep → engine, for the re-run commands
	plans   map[string]string // sweep → plan, for a plan's pairs
}

// Regressed reports whether any level regressed.
func (r *Regression) Regressed() bool { return len(r.Findings) > 0 }

// Rerun are the regressed sweeps (and plans' pairs), each once, with
// their regressed levels.
func (r *Regression) Rerun() []SweepLevels {
	var out []SweepLevels
	for _, f := range r.Findings {
		i := slices.IndexFunc(out, func(s SweepLevels) bool { return s.Sweep == f.Sweep })
		if i < 0 {
			out = append(out, SweepLevels{Sweep: f.Sweep, Job: cmp.Or(r.plans[f.Sweep], f.Sweep)})
			i = len(out) - 1
		}
		if !slices.Contains(out[i].Concs, f.Conc) {
			out[i].Concs = append(out[i].Concs, f.Conc)
		}
	}
	for i := range out {
		slices.Sort(out[i].Concs)
	}
	return out
}

// SweepLevels names levels of a sweep, or of a plan's pair.
type SweepLevels struct {
	Sweep string
	// Job is the matrix job that runs it (profile-model matrix --only):
	// the sweep, or the plan.
	Job   string
	Concs []int
}

// Jobs are the matrix jobs to re-run, each once, in order.
func (r *Regression) Jobs() []string {
	var out []string
	for _, s := range r.Rerun() {
		if !slices.Contains(out, s.Job) {
			out = append(out, s.Job)
		}
	}
	return out
}

// Compare compares the new results with the baseline's, level by level
// (sweeps matched by name, levels by concurrency).
func Compare(base, cur *Summary, t Thresholds) *Regression {
	r := &Regression{Thresholds: t, Findings: []Finding{}, Unconfirmed: []Finding{}, Missing: []string{}, NewOnly: []string{}, Notes: []string{},
		units: map[string]bool{}, engines: map[string]string{}, plans: map[string]string{}}
	for _, s := range append(slices.Clone(base.Sweeps), cur.Sweeps...) {
		r.engines[s.Sweep] = s.Engine
		if s.Plan != "" {
			r.plans[s.Sweep] = s.Plan
		}
	}
	for _, bs := range base.Sweeps {
		i := slices.IndexFunc(cur.Sweeps, func(s SweepSummary) bool { return s.Sweep == bs.Sweep })
		if i < 0 {
			r.Missing = append(r.Missing, bs.Sweep)
			continue
		}
		cs := &cur.Sweeps[i]
		for _, bl := range bs.Levels {
			j := slices.IndexFunc(cs.Levels, func(l LevelSummary) bool { return l.Conc == bl.Conc })
			if j < 0 {
				r.Missing = append(r.Missing, fmt.Sprintf("%s level %d", bs.Sweep, bl.Conc))
				continue
			}
			r.Compared++
			r.compareLevel(bs.Sweep, &bl, &cs.Levels[j], base, cur)
		}
		for _, cl := range cs.Levels {
			if !slices.ContainsFunc(bs.Levels, func(l LevelSummary) bool { return l.Conc == cl.Conc }) {
				r.NewOnly = append(r.NewOnly, fmt.Sprintf("%s level %d", cs.Sweep, cl.Conc))
			}
		}
	}
	for _, cs := range cur.Sweeps {
		if !slices.ContainsFunc(base.Sweeps, func(s SweepSummary) bool { return s.Sweep == cs.Sweep }) {
			r.NewOnly = append(r.NewOnly, cs.Sweep)
		}
	}
	return r
}

func (r *Regression) compareLevel(sweep string, bl, cl *LevelSummary, base, cur *Summary) {
	t := r.Thresholds
	if bl.OK > 0 && cl.OK == 0 {
		r.Findings = append(r.Findings, Finding{Sweep: sweep, Conc: bl.Conc, Kind: "failed",
			Unit: fmt.Sprintf("%d of %d repeats completed", cl.OK, cl.OK+cl.Failed)})
		return
	}
	if bl.DecodeBS != cl.DecodeBS && bl.DecodeBS > 0 && cl.DecodeBS > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%s level %d: decode batch size %d in the baseline, %d now: kernel times per layer not compared (they depend on the batch)",
			sweep, bl.Conc, bl.DecodeBS, cl.DecodeBS))
	}
	for _, bm := range bl.Metrics {
		cm, ok := cl.Metric(bm.Unit)
		if !ok {
			continue
		}
		r.units[bm.Unit] = true
		f := Finding{Sweep: sweep, Conc: bl.Conc, Unit: bm.Unit, Old: bm.Median, New: cm.Median}
		if bm.Median != 0 {
			f.Pct = (cm.Median - bm.Median) / math.Abs(bm.Median) * 100
		}
		switch {
		case slices.Contains(t.ThroughputUnits, bm.Unit):
			if t.ThroughputDrop >= 0 && bm.Median > 0 && -f.Pct > t.ThroughputDrop {
				f.Kind = "throughput"
			}
		case slices.Contains(t.LatencyUnits, bm.Unit):
			if t.LatencyRise >= 0 && bm.Median > 0 && f.Pct > t.LatencyRise {
				f.Kind = "latency"
			}
		case slices.Contains(t.EnergyUnits, bm.Unit):
			r.energy = true
			if t.EnergyRise >= 0 && bm.Median > 0 && f.Pct > t.EnergyRise {
				f.Kind = "energy"
			}
		case isKernelUnit(bm.Unit):
			if bl.DecodeBS != cl.DecodeBS {
				continue // noted once below
			}
			if t.KernelRise >= 0 && bm.Median > 0 && f.Pct > t.KernelRise && cm.Median-bm.Median >= t.KernelMinUS {
				f.Kind = "kernel"
				f.Kernel, f.KernelUS = topKernel(bm.Unit, firstProfile(base, sweep, bl.Conc), firstProfile(cur, sweep, bl.Conc))
			}
		}
		if f.Kind == "" {
			continue
		}
		c := benchmath.AssumeNothing.Compare(benchmath.NewSample(bm.Values, &benchmath.Thresholds{CompareAlpha: t.Alpha}),
			benchmath.NewSample(cm.Values, &benchmath.Thresholds{CompareAlpha: t.Alpha}))
		f.P, f.N = &c.P, &[2]int{c.N1, c.N2}
		if t.Alpha == 0 || c.P < t.Alpha {
			r.Findings = append(r.Findings, f)
		} else {
			r.Unconfirmed = append(r.Unconfirmed, f)
		}
	}
}

// Incomplete says why the comparison cannot stand for "no regression":
// no level was compared, a threshold is not a number, or a unit the
// thresholds name is in no level compared (a typo would compare nothing
// and pass). nil when it can.
func (r *Regression) Incomplete() error {
	t := r.Thresholds
	var errs []error
	for _, v := range []struct {
		name string
		v    float64
	}{{"throughput drop", t.ThroughputDrop}, {"latency rise", t.LatencyRise}, {"kernel rise", t.KernelRise}, {"kernel min µs", t.KernelMinUS}} {
		if math.IsNaN(v.v) {
			errs = append(errs, fmt.Errorf("the %s threshold is not a number", v.name))
		}
	}
	if r.Compared == 0 {
		list := func(v []string) string { return cmp.Or(strings.Join(v, ", "), "none") }
		errs = append(errs, fmt.Errorf("no level was compared: no sweep and concurrency of the baseline is in the new results (baseline only: %s; new only: %s)",
			list(r.Missing), list(r.NewOnly)))
	} else {
		known := slices.Sorted(maps.Keys(r.units))
		for _, u := range append(slices.Clone(t.ThroughputUnits), t.LatencyUnits...) {
			if !r.units[u] {
				errs = append(errs, fmt.Errorf("unit %q is in no level compared (their units: %s)", u, strings.Join(known, ", ")))
			}
		}
	}
	return errors.Join(errs...)
}

func isKernelUnit(u string) bool { return u == LayerUnit || strings.HasSuffix(u, "-us/layer") }

// firstProfile is the level's analysis in the first repeat that has one.
func firstProfile(s *Summary, sweep string, conc int) *diff.Profile {
	for _, r := range s.Runs {
		if r.Sweep != sweep {
			continue
		}
		for _, l := range r.Levels {
			if l.Conc == conc && l.Profile != nil {
				return l.Profile
			}
		}
	}
	return nil
}

// topKernel names the kernel (of the unit's category, or of any for
// layer-us) whose time per layer rose most from a to b, with its times.
func topKernel(unit string, a, b *diff.Profile) (string, *[2]float64) {
	if a == nil || b == nil {
		return "", nil
	}
	rep := diff.Compare(a, b)
	var best *diff.KernelChange
	bestDelta := 0.0
	for i := range rep.Kernels {
		k := &rep.Kernels[i]
		if unit != LayerUnit && CategoryUnit(k.Category) != unit || k.LayerUS == nil {
			continue
		}
		if d := k.LayerUS.Delta; d > bestDelta {
			best, bestDelta = k, d
		}
	}
	if best == nil {
		return "", nil
	}
	names := best.BShort
	if len(names) == 0 {
		names = best.AShort
	}
	return strings.Join(names, " + "), &[2]float64{best.LayerUS.A, best.LayerUS.B}
}

// kernelCell is a finding's kernel with its times.
func (f *Finding) kernelCell() string {
	if f.Kernel == "" {
		return ""
	}
	s := strings.ReplaceAll(f.Kernel, "|", `\|`)
	if us := f.KernelUS; us != nil {
		s += fmt.Sprintf(" (%s → %s µs/layer", num(us[0]), num(us[1]))
		if us[0] > 0 {
			s += fmt.Sprintf(", %+.0f%%", (us[1]-us[0])/us[0]*100)
		}
		s += ")"
	}
	return s
}

// WriteMarkdown writes the comparison: the regressions, what to re-run
// with the profiler, and what could not be compared.
func (r *Regression) WriteMarkdown(w io.Writer, baseName, curName string) error {
	var b strings.Builder
	t := r.Thresholds
	fmt.Fprintf(&b, "# Fleet regressions: %s against %s\n\n", curName, baseName)
	fmt.Fprintf(&b, "Thresholds: throughput (%s) drop > %s, latency (%s) rise > %s, time per decode layer (total and per kernel category) rise > %s and ≥ %s µs. "+
		"Medians over each level's repeats; a change beyond its threshold is a regression when the U test of the repeats gives p < %g; %d levels compared.\n\n",
		strings.Join(t.ThroughputUnits, ", "), pctOff(t.ThroughputDrop), strings.Join(t.LatencyUnits, ", "), pctOff(t.LatencyRise),
		pctOff(t.KernelRise), num(t.KernelMinUS), t.Alpha, r.Compared)
	if r.energy && t.EnergyRise >= 0 {
		// Only results with GPU telemetry say it: others read as before.
		fmt.Fprintf(&b, "Energy (%s, from the GPUs' telemetry) rise > %s.\n\n", strings.Join(t.EnergyUnits, ", "), pctOff(t.EnergyRise))
	}
	incomplete := r.Incomplete()
	switch {
	case incomplete != nil && !r.Regressed():
		fmt.Fprintf(&b, "**Not judged**: %s.\n", strings.ReplaceAll(incomplete.Error(), "\n", "; "))
	case !r.Regressed() && len(r.Unconfirmed) == 1:
		b.WriteString("**No regression** (1 change beyond a threshold is not significant: below).\n")
	case !r.Regressed() && len(r.Unconfirmed) > 1:
		fmt.Fprintf(&b, "**No regression** (%d changes beyond a threshold are not significant: below).\n", len(r.Unconfirmed))
	case !r.Regressed():
		b.WriteString("**No regression.**\n")
	default:
		fmt.Fprintf(&b, "**%d regressions** in %d sweeps (a plan's server × bench pair counts as one: <plan>/<server>/<bench>).\n\n", len(r.Findings), len(r.Rerun()))
		b.WriteString("| sweep | level | kind | metric | baseline | new | change | test | kernel |\n|---|---:|---|---|---:|---:|---:|---|---|\n")
		fs := slices.Clone(r.Findings)
		slices.SortStableFunc(fs, func(x, y Finding) int {
			return cmp.Or(cmp.Compare(x.Sweep, y.Sweep), cmp.Compare(x.Conc, y.Conc))
		})
		for _, f := range fs {
			if f.Kind == "failed" {
				fmt.Fprintf(&b, "| %s | %d | failed | %s | ok | failed | | | |\n", f.Sweep, f.Conc, f.Unit)
				continue
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %+.1f%% | %s | %s |\n", f.Sweep, f.Conc, f.Kind, f.Unit, num(f.Old), num(f.New), f.Pct, f.testCell(), f.kernelCell())
		}
		b.WriteString("\n## Re-run with the profiler\n\n")
		b.WriteString("Each sweep (and plan) profiles every level; keep its traces (they are uploaded as traces-<sweep>) and read them with profile-model diff:\n\n")
		for _, s := range r.Rerun() {
			if p := r.plans[s.Sweep]; p != "" {
				fmt.Fprintf(&b, "* %s, levels %s: `profile-model run --plan fixtures/sweeps/plans/%s.json --out runs`\n", s.Sweep, joinInts(s.Concs), p)
				continue
			}
			fmt.Fprintf(&b, "* %s, levels %s: `PROFILE_MODEL_KEEP_RUNS=runs go test -count=1 -timeout 6h%s -run '%s' ./profiling/`\n",
				s.Sweep, joinInts(s.Concs), r.tagsOf(s.Sweep), TestRun(r.testOf(s.Sweep), s.Sweep))
		}
	}
	r.writeUnconfirmed(&b)
	if len(r.Notes) > 0 {
		b.WriteString("\nNotes:\n\n")
		for _, n := range r.Notes {
			b.WriteString("* " + n + "\n")
		}
	}
	if len(r.Missing) > 0 {
		fmt.Fprintf(&b, "\nIn the baseline, not in the new results (not compared): %s.\n", strings.Join(r.Missing, ", "))
	}
	if len(r.NewOnly) > 0 {
		fmt.Fprintf(&b, "\nNew, not in the baseline (not compared): %s.\n", strings.Join(r.NewOnly, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeUnconfirmed lists the changes beyond a threshold that the repeats
// cannot tell from noise, and how many repeats would.
func (r *Regression) writeUnconfirmed(b *strings.Builder) {
	if len(r.Unconfirmed) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Beyond a threshold, not a regression (p ≥ %g)\n\n", r.Thresholds.Alpha)
	fmt.Fprintf(b, "These changes pass a threshold on the medians, but the repeats cannot tell them from run-to-run noise; "+
		"%s a side can reach p < %g. Repeat the sweeps (matrix --count, or go test -count) to decide.\n\n", needRepeats(r.Thresholds.Alpha), r.Thresholds.Alpha)
	b.WriteString("| sweep | level | kind | metric | baseline | new | change | test |\n|---|---:|---|---|---:|---:|---:|---|\n")
	for _, f := range r.Unconfirmed {
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %+.1f%% | %s |\n", f.Sweep, f.Conc, f.Kind, f.Unit, num(f.Old), num(f.New), f.Pct, f.testCell())
	}
}

// needRepeats says how many repeats a side the U test needs before any
// difference can reach p < alpha: its least p with n repeats a side is
// 2/C(2n, n).
func needRepeats(alpha float64) string {
	for n := 1; n <= 12; n++ {
		if 2/binomial(2*n, n) < alpha {
			return fmt.Sprintf("only %d or more repeats", n)
		}
	}
	return "only more than 12 repeats"
}

func binomial(n, k int) float64 {
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
	}
	return c
}

// testCell is the finding's p-value and repeats, as benchstat prints them.
func (f *Finding) testCell() string {
	if f.P == nil || f.N == nil {
		return ""
	}
	return fmt.Sprintf("p=%.3f n=%d+%d", *f.P, f.N[0], f.N[1])
}

// testOf is the test that runs the sweep.
func (r *Regression) testOf(sweep string) string {
	if r.engines[sweep] == "sim" {
		return "TestSimSweeps"
	}
	return "TestGPUSweeps"
}

func (r *Regression) tagsOf(sweep string) string {
	if r.engines[sweep] == "sim" {
		return ""
	}
	return " -tags gpu"
}

func pctOff(v float64) string {
	if v < 0 {
		return "off"
	}
	return fmt.Sprintf("%g%%", v)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
