// Package diff compares two traces, two levels' analysis files or two run
// directories: which kernels only one side runs, which got faster or
// slower per layer and per step, how each category moved and what that adds
// up to per step, and which kernels of the layer were fused, split or
// replaced. Kernels are matched by name, then by demangled name, then by
// the same ATen operation, then by category at the same place in the
// layer, so that two vendors' or two libraries' kernels for the same role
// are compared (rocBLAS Cijk_* against cuBLAS nvjet or sm90_xmma, Triton
// attention against FlashAttention).
// Reports print as Markdown, marshal to JSON, and turn into a pair of Go
// benchmark files for benchstat.
package diff

import (
	"cmp"
	"math"
	"slices"
)

// Pair is one figure on both sides.
type Pair struct {
	A     float64  `json:"a"`
	B     float64  `json:"b"`
	Delta float64  `json:"delta"`
	Pct   *float64 `json:"pct,omitempty"` // nil when A is 0
}

func pair(a, b float64) Pair {
	p := Pair{A: round3(a), B: round3(b), Delta: round3(b - a)}
	if a != 0 {
		pct := math.Round((b-a)/a*100*100) / 100
		p.Pct = &pct
	}
	return p
}

func pairPtr(a, b float64, ok bool) *Pair {
	if !ok {
		return nil
	}
	p := pair(a, b)
	return &p
}

// Measures kernel changes are ranked by: per step when both sides have
// per-step times, else per layer, else over the whole trace.
const (
	perStep  = "step"
	perLayer = "layer"
	perTrace = "total"
)

// Report is the comparison of two profiles.
type Report struct {
	A *Profile `json:"a"`
	B *Profile `json:"b"`
	// Measure is what kernel changes are ranked by: "step", "layer" or
	// "total" (the whole trace).
	Measure string `json:"measure"`
	// CategoryMeasure is what category changes are ranked and their ratios
	// taken by (per step when both sides know it per category, as level
	// files do, though not per kernel).
	CategoryMeasure string           `json:"category_measure"`
	StepUS          *Pair            `json:"step_us,omitempty"`  // GPU time per step, nil when unknown
	LayerUS         *Pair            `json:"layer_us,omitempty"` // per layer, nil without layer tables
	TotalUS         *Pair            `json:"total_us,omitempty"` // whole trace
	Categories      []CategoryChange `json:"categories"`
	Kernels         []KernelChange   `json:"kernels"` // sorted by absolute change
	Layer           []PositionChange `json:"layer"`   // the aligned per-layer tables
	Changes         []Change         `json:"changes"` // fused, split, replaced, added, removed
	// NoChange: the same kernels on both sides, and no time that differs
	// by 0.05 µs or more.
	NoChange bool     `json:"no_change"`
	Notes    []string `json:"notes"`
}

// CategoryChange is one category's time on both sides.
type CategoryChange struct {
	Category string `json:"category"`
	LayerUS  *Pair  `json:"layer_us,omitempty"`
	StepUS   *Pair  `json:"step_us,omitempty"`
	TotalUS  *Pair  `json:"total_us,omitempty"`
	// Ratio is B's time over A's in the report's measure (nil when A has
	// none of it).
	Ratio *float64 `json:"ratio,omitempty"`
}

// KernelChange is a kernel, or a set of kernels of A matched to a set of
// B (by name, demangled name, category and place in the layer, or
// category), or kernels only one side runs.
type KernelChange struct {
	// In is "both", "a" (only A runs it) or "b" (only B).
	In       string   `json:"in"`
	Match    string   `json:"match,omitempty"` // how A's and B's kernels were matched
	Category string   `json:"category"`        // "" when the kernels are of several categories
	A        []string `json:"a"`               // full kernel names
	B        []string `json:"b"`
	AShort   []string `json:"a_short"` // short names, each once
	BShort   []string `json:"b_short"`
	LayerUS  *Pair    `json:"layer_us,omitempty"`
	StepUS   *Pair    `json:"step_us,omitempty"`
	TotalUS  *Pair    `json:"total_us,omitempty"`
}

// PositionChange is one row of the aligned per-layer tables.
type PositionChange struct {
	PosA     int    `json:"pos_a"` // -1 when A has no kernel here
	PosB     int    `json:"pos_b"`
	ShortA   string `json:"short_a,omitempty"`
	ShortB   string `json:"short_b,omitempty"`
	LabelA   string `json:"label_a,omitempty"` // the position's role label
	LabelB   string `json:"label_b,omitempty"`
	KernelA  string `json:"kernel_a,omitempty"`
	KernelB  string `json:"kernel_b,omitempty"`
	Category string `json:"category"`
	Match    string `json:"match,omitempty"`
	// AvgUS is the kernel's mean time in the layers of its kind (with
	// alternating layers, each kind's positions keep their own times).
	AvgUS Pair `json:"avg_us"`
	// WithinSpread: the change is smaller than the kernel's own standard
	// deviation across layers on either side.
	WithinSpread bool `json:"within_spread,omitempty"`
	// PctRoof is the position's % of the roofline on both sides (Delta in
	// percentage points), nil unless both sides' tables carry it.
	PctRoof *Pair `json:"pct_roofline,omitempty"`
}

// Delta is the change of a kernel row in the report's measure.
func (k *KernelChange) Delta(measure string) float64 {
	if p := k.measure(measure); p != nil {
		return p.Delta
	}
	return 0
}

func (k *KernelChange) measure(m string) *Pair {
	switch m {
	case perStep:
		return k.StepUS
	case perLayer:
		return k.LayerUS
	}
	return k.TotalUS
}

// Compare compares profile a (the old, the baseline) with b (the new).
func Compare(a, b *Profile) *Report {
	r := &Report{A: a, B: b, Categories: []CategoryChange{}, Kernels: []KernelChange{}, Layer: []PositionChange{}, Changes: []Change{}}
	steps := a.HasSteps() && b.HasSteps()
	kernelSteps := a.HasKernelSteps() && b.HasKernelSteps()
	layers := a.HasLayers() && b.HasLayers()
	totals := a.HasTotals() && b.HasTotals()
	measure := func(steps bool) string {
		switch {
		case steps:
			return perStep
		case layers:
			return perLayer
		}
		return perTrace
	}
	r.Measure, r.CategoryMeasure = measure(kernelSteps), measure(steps)
	m := newMatcher()
	var aligned []pairing
	if layers {
		aligned = m.align(a.Positions, b.Positions)
	}
	for _, p := range aligned {
		pc := PositionChange{PosA: -1, PosB: -1, Match: p.how}
		var la, lb, sa, sb float64
		if p.a >= 0 {
			x := &a.Positions[p.a]
			pc.PosA, pc.ShortA, pc.LabelA, pc.KernelA, pc.Category, la, sa = x.Pos, x.ShortName, x.Label, x.Kernel, x.Category, x.AvgUS, x.StdUS
		}
		if p.b >= 0 {
			x := &b.Positions[p.b]
			pc.PosB, pc.ShortB, pc.LabelB, pc.KernelB, lb, sb = x.Pos, x.ShortName, x.Label, x.Kernel, x.AvgUS, x.StdUS
			if pc.Category == "" {
				pc.Category = x.Category
			}
		}
		pc.AvgUS = pair(la, lb)
		pc.WithinSpread = p.a >= 0 && p.b >= 0 && math.Abs(lb-la) < max(sa, sb)
		if p.a >= 0 && p.b >= 0 && a.Positions[p.a].PctRoof != nil && b.Positions[p.b].PctRoof != nil {
			pc.PctRoof = pairPtr(*a.Positions[p.a].PctRoof, *b.Positions[p.b].PctRoof, true)
		}
		r.Layer = append(r.Layer, pc)
	}

	var links []pairing
	if layers {
		r.Changes, links = changes(a, b, aligned)
	}

	for _, g := range m.groupKernels(a, b, links) {
		kc := KernelChange{In: "both", Match: g.how, A: []string{}, B: []string{}, AShort: []string{}, BShort: []string{}}
		switch {
		case len(g.b) == 0:
			kc.In, kc.Match = "a", ""
		case len(g.a) == 0:
			kc.In, kc.Match = "b", ""
		}
		var sum [2]Kernel
		cats := map[string]bool{}
		for s, side := range [][]int32{g.a, g.b} {
			p := a
			names, shorts := &kc.A, &kc.AShort
			if s == 1 {
				p, names, shorts = b, &kc.B, &kc.BShort
			}
			for _, i := range side {
				k := &p.Kernels[i]
				*names = append(*names, k.Kernel)
				if !slices.Contains(*shorts, k.ShortName) {
					*shorts = append(*shorts, k.ShortName)
				}
				cats[k.Category] = true
				sum[s].LayerUS += k.LayerUS
				sum[s].StepUS += k.StepUS
				sum[s].TotalUS += k.TotalUS
			}
		}
		if len(cats) == 1 {
			for c := range cats {
				kc.Category = c
			}
		}
		kc.LayerUS = pairPtr(sum[0].LayerUS, sum[1].LayerUS, layers && (sum[0].LayerUS != 0 || sum[1].LayerUS != 0))
		kc.StepUS = pairPtr(sum[0].StepUS, sum[1].StepUS, kernelSteps)
		kc.TotalUS = pairPtr(sum[0].TotalUS, sum[1].TotalUS, totals)
		r.Kernels = append(r.Kernels, kc)
	}
	slices.SortStableFunc(r.Kernels, func(x, y KernelChange) int {
		return cmp.Or(
			cmp.Compare(math.Abs(y.Delta(r.Measure)), math.Abs(x.Delta(r.Measure))),
			cmp.Compare(math.Abs(y.Delta(perTrace)), math.Abs(x.Delta(perTrace))))
	})

	r.addCategories(steps, layers, totals)
	r.NoChange = r.noChange()
	r.Notes = r.notes()
	if n := roofNote(a, b); layers && n != "" {
		r.Notes = append(r.Notes, n)
	}
	return r
}

func (r *Report) addCategories(steps, layers, totals bool) {
	type times struct{ layer, step, total [2]float64 }
	byCat := map[string]*times{}
	var order []string
	get := func(c string) *times {
		t := byCat[c]
		if t == nil {
			t = &times{}
			byCat[c] = t
			order = append(order, c)
		}
		return t
	}
	var sum times
	for s, p := range []*Profile{r.A, r.B} {
		for _, k := range p.Kernels {
			t := get(k.Category)
			t.total[s] += k.TotalUS
			sum.total[s] += k.TotalUS
		}
		for c, us := range p.CategoryStepUS {
			get(c).step[s] += us
			sum.step[s] += us
		}
		for _, x := range p.Positions {
			get(x.Category).layer[s] += x.LayerUS
			sum.layer[s] += x.LayerUS
		}
	}
	r.StepUS = pairPtr(sum.step[0], sum.step[1], steps)
	r.LayerUS = pairPtr(sum.layer[0], sum.layer[1], layers)
	r.TotalUS = pairPtr(sum.total[0], sum.total[1], totals)
	for _, c := range order {
		t := byCat[c]
		cc := CategoryChange{Category: c,
			LayerUS: pairPtr(t.layer[0], t.layer[1], layers && (t.layer[0] != 0 || t.layer[1] != 0)),
			StepUS:  pairPtr(t.step[0], t.step[1], steps),
			TotalUS: pairPtr(t.total[0], t.total[1], totals)}
		if m := cc.measure(r.CategoryMeasure); m != nil && m.A != 0 {
			ratio := math.Round(m.B/m.A*1000) / 1000
			cc.Ratio = &ratio
		}
		r.Categories = append(r.Categories, cc)
	}
	key := func(c CategoryChange) float64 {
		if p := c.measure(r.CategoryMeasure); p != nil {
			return math.Abs(p.Delta)
		}
		return 0
	}
	slices.SortStableFunc(r.Categories, func(x, y CategoryChange) int {
		return cmp.Or(cmp.Compare(key(y), key(x)), cmp.Compare(x.Category, y.Category))
	})
}

// unchanged is below what the tables print (one decimal of a µs).
func unchanged(p *Pair) bool { return p == nil || math.Abs(p.Delta) < 0.05 }

func (r *Report) noChange() bool {
	if len(r.Changes) > 0 {
		return false
	}
	for _, k := range r.Kernels {
		if k.In != "both" || !unchanged(k.LayerUS) || !unchanged(k.StepUS) || !unchanged(k.TotalUS) {
			return false
		}
	}
	for _, p := range r.Layer {
		if p.PosA < 0 || p.PosB < 0 || !unchanged(&p.AvgUS) {
			return false
		}
	}
	return unchanged(r.StepUS) && unchanged(r.LayerUS) && unchanged(r.TotalUS)
}

// notes say what the figures rest on, and how far they can be trusted.
func (r *Report) notes() []string {
	n := []string{"One sample per side: the changes are differences of two measurements, not tested for significance; " +
		"profile each side several times and compare the --benchstat files with benchstat for confidence intervals."}
	if len(r.Layer) > 0 {
		n = append(n, "In the per-layer table, ~ marks a change smaller than the kernel's own spread (standard deviation) across layers.")
	}
	// What each side lacks, said once when both lack it.
	var lacks [2][]string
	for i, p := range []*Profile{r.A, r.B} {
		switch {
		case p.StepTimes == stepFromCategories && r.Measure != perStep:
			lacks[i] = append(lacks[i], "files give per-step times by category only: kernels are compared "+measureName(r.Measure))
		case p.StepTimes == "" && r.Measure != perStep:
			lacks[i] = append(lacks[i], "no per-step times: kernels are compared "+measureName(r.Measure))
		}
		if !p.HasLayers() {
			lacks[i] = append(lacks[i], "no per-layer table (no repeating layer found): the layers are not compared")
		}
	}
	for _, l := range lacks[0] {
		if slices.Contains(lacks[1], l) {
			n = append(n, "Both sides: "+l+".")
		} else {
			n = append(n, "A: "+l+".")
		}
	}
	for _, l := range lacks[1] {
		if !slices.Contains(lacks[0], l) {
			n = append(n, "B: "+l+".")
		}
	}
	if r.A.StepKind != "" && r.B.StepKind != "" && r.A.StepKind != r.B.StepKind {
		n = append(n, "A's steps are "+r.A.StepKind+" steps and B's are "+r.B.StepKind+" steps: per-step times compare different things.")
	}
	return n
}

func measureName(m string) string {
	switch m {
	case perStep:
		return "per step"
	case perLayer:
		return "per layer"
	}
	return "over the whole trace"
}

// roofNote says why the % of roofline is not compared when only one
// side's layer table carries it.
func roofNote(a, b *Profile) string {
	has := func(p *Profile) bool {
		return slices.ContainsFunc(p.Positions, func(x Position) bool { return x.PctRoof != nil })
	}
	switch ha, hb := has(a), has(b); {
	case ha && !hb:
		return "only A's layer table has roofline columns (B's was made without the model config): % of roofline is not compared"
	case hb && !ha:
		return "only B's layer table has roofline columns (A's was made without the model config): % of roofline is not compared"
	}
	return ""
}
