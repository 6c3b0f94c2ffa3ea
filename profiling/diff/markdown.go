package diff

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/inventory/analysis"
)

// MarkdownOptions shape the Markdown output.
type MarkdownOptions struct {
	Top     int // kernel rows per table (0: all); the JSON has them all
	Heading int // level of the report's section headings (0: 2, "##")
}

// WriteMarkdown prints the report as Markdown: the step and layer times,
// the largest changes, the categories, the kernels in both, only in A and
// only in B, the fused, split and replaced kernels, the aligned per-layer
// tables and the notes.
func (r *Report) WriteMarkdown(w io.Writer, opt MarkdownOptions) error {
	mw := &mdWriter{w: w}
	h := strings.Repeat("#", max(opt.Heading, 2)) + " "
	r.writeTimes(mw)
	r.writeCategories(mw, h)
	var both, onlyA, onlyB []KernelChange
	for _, k := range r.Kernels {
		switch k.In {
		case "a":
			onlyA = append(onlyA, k)
		case "b":
			onlyB = append(onlyB, k)
		default:
			both = append(both, k)
		}
	}
	r.writeKernelsInBoth(mw, h, both, opt.Top)
	r.writeKernelsInOne(mw, h, "A", onlyA, opt.Top)
	r.writeKernelsInOne(mw, h, "B", onlyB, opt.Top)
	if len(r.Layer) > 0 {
		r.writeLayerChanges(mw, h)
		r.writeAlignedLayer(mw, h)
	}
	r.writeNotes(mw)
	return mw.err
}

// writeTimes is the head of the report: what A and B are, their step,
// layer and whole-trace times, and the three largest kernel changes.
func (r *Report) writeTimes(mw *mdWriter) {
	mw.line("A: %s", describe(r.A))
	mw.line("B: %s", describe(r.B))
	mw.line("")
	mw.line("| | A | B | Δ | Δ %% |")
	mw.line("|---|---:|---:|---:|---:|")
	for _, t := range []struct {
		name string
		p    *Pair
	}{{"GPU time per " + stepName(r) + " (µs)", r.StepUS}, {"GPU time per layer (µs)", r.LayerUS}, {"GPU time in the whole trace (µs)", r.TotalUS}} {
		if t.p != nil {
			mw.line("| %s | %s | %s | %s | %s |", t.name, f1(t.p.A), f1(t.p.B), signed(t.p.Delta), pct(t.p))
		}
	}
	mw.line("")
	if r.NoChange {
		mw.line("**No change**: the same kernels with the same times (to 0.1 µs).")
	} else {
		var top []string
		for _, k := range r.Kernels {
			if len(top) == 3 {
				break
			}
			p := k.measure(r.Measure)
			if p == nil || unchanged(p) {
				continue
			}
			top = append(top, fmt.Sprintf("%s %s %s (%s)", kernelLabel(&k), signed(p.Delta), unitName(r.Measure), pct(p)))
		}
		if len(top) > 0 {
			mw.line("Largest changes: %s.", strings.Join(top, "; "))
		}
	}
	mw.line("")
}

// writeCategories is the table of categories with their total row, per
// layer as well when the layer is known and the categories are not
// already per layer.
func (r *Report) writeCategories(mw *mdWriter, h string) {
	mw.line("%sCategories (%s)", h, unitName(r.CategoryMeasure))
	mw.line("")
	layerCols := r.LayerUS != nil && r.CategoryMeasure != perLayer
	if layerCols {
		mw.line("| category | A | B | Δ | Δ %% | B/A | A per layer | B per layer | Δ per layer |")
		mw.line("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	} else {
		mw.line("| category | A | B | Δ | Δ %% | B/A |")
		mw.line("|---|---:|---:|---:|---:|---:|")
	}
	for _, c := range r.Categories {
		m := c.measure(r.CategoryMeasure)
		if m == nil || m.A == 0 && m.B == 0 {
			continue // a category of other steps (prefill, sampling): in the JSON
		}
		ratio := ""
		if c.Ratio != nil {
			ratio = strconv.FormatFloat(*c.Ratio, 'f', 2, 64)
		}
		row := fmt.Sprintf("| %s | %s | %s | %s | %s | %s |", esc(c.Category), pf(m, 'a'), pf(m, 'b'), pf(m, 'd'), pctOf(m), ratio)
		if layerCols {
			row += fmt.Sprintf(" %s | %s | %s |", pf(c.LayerUS, 'a'), pf(c.LayerUS, 'b'), pf(c.LayerUS, 'd'))
		}
		mw.line("%s", row)
	}
	if m := r.measureOf(r.CategoryMeasure); m != nil {
		row := fmt.Sprintf("| **total** | %s | %s | %s | %s | %s |", f1(m.A), f1(m.B), signed(m.Delta), pct(m), ratioOf(m))
		if layerCols {
			row += fmt.Sprintf(" %s | %s | %s |", f1(r.LayerUS.A), f1(r.LayerUS.B), signed(r.LayerUS.Delta))
		}
		mw.line("%s", row)
	}
	mw.line("")
}

// topRows is the first top rows of ks (all when top is 0) and how many
// were left out.
func topRows(ks []KernelChange, top int) ([]KernelChange, int) {
	if top > 0 && len(ks) > top {
		return ks[:top], len(ks) - top
	}
	return ks, 0
}

// writeMore says how many rows a table left out.
func writeMore(mw *mdWriter, more int) {
	if more > 0 {
		mw.line("")
		mw.line("… and %d more (--top 0 shows all).", more)
	}
}

// writeKernelsInBoth is the table of the kernels both sides run, side by
// side, by absolute change.
func (r *Report) writeKernelsInBoth(mw *mdWriter, h string, both []KernelChange, top int) {
	cols := r.kernelColumns()
	mw.line("%sKernels in both (%d, by absolute change %s)", h, len(both), unitName(r.Measure))
	mw.line("")
	if len(both) == 0 {
		mw.line("None.")
	} else {
		head, align := "| A | B | category | match |", "|---|---|---|---|"
		for _, c := range cols {
			head += " A " + c.name + " | B " + c.name + " |"
			align += "---:|---:|"
		}
		mw.line("%s Δ | Δ %% |", head)
		mw.line("%s---:|---:|", align)
		rows, more := topRows(both, top)
		for _, k := range rows {
			row := fmt.Sprintf("| %s | %s | %s | %s |", names(k.AShort, len(k.A)), names(k.BShort, len(k.B)), esc(k.Category), k.Match)
			for _, c := range cols {
				p := c.get(&k)
				row += fmt.Sprintf(" %s | %s |", pf(p, 'a'), pf(p, 'b'))
			}
			m := k.measure(r.Measure)
			mw.line("%s %s | %s |", row, pf(m, 'd'), pctOf(m))
		}
		writeMore(mw, more)
	}
	mw.line("")
}

// writeKernelsInOne is the table of the kernels only side ("A" or "B")
// runs.
func (r *Report) writeKernelsInOne(mw *mdWriter, h, side string, ks []KernelChange, top int) {
	mw.line("%sOnly in %s (%d)", h, side, len(ks))
	mw.line("")
	if len(ks) == 0 {
		mw.line("None.")
		mw.line("")
		return
	}
	cols := r.kernelColumns()
	head, align := "| kernel | category |", "|---|---|"
	for _, c := range cols {
		head += " " + c.name + " |"
		align += "---:|"
	}
	mw.line("%s", head)
	mw.line("%s", align)
	rows, more := topRows(ks, top)
	for _, k := range rows {
		sn, n, v := k.AShort, len(k.A), 'a'
		if side == "B" {
			sn, n, v = k.BShort, len(k.B), 'b'
		}
		row := fmt.Sprintf("| %s | %s |", names(sn, n), esc(k.Category))
		for _, c := range cols {
			row += " " + pf(c.get(&k), v) + " |"
		}
		mw.line("%s", row)
	}
	writeMore(mw, more)
	mw.line("")
}

// writeLayerChanges lists the kernels of the layer that were added,
// removed, fused, split or replaced.
func (r *Report) writeLayerChanges(mw *mdWriter, h string) {
	mw.line("%sFused, split and replaced kernels in the layer", h)
	mw.line("")
	if len(r.Changes) == 0 {
		mw.line("None: both layers run the same kernels.")
	}
	for _, c := range r.Changes {
		cat := ""
		if c.Category != "" {
			cat = " (" + c.Category + ")"
		}
		switch c.Kind {
		case changeAdded:
			mw.line("- **added**%s: %s at pos %s: %s µs per layer", cat, nameList(c.B), ints(c.PosB), f1(c.BUS))
		case changeRemoved:
			mw.line("- **removed**%s: %s at pos %s: %s µs per layer", cat, nameList(c.A), ints(c.PosA), f1(c.AUS))
		default:
			same := ""
			if slices.Equal(c.A, c.B) {
				same = " (another instance of the same kernel: the full names differ)"
			}
			mw.line("- **%s**%s: %s → %s%s, pos %s → %s: %s → %s µs per layer (%s)", c.Kind, cat, nameList(c.A), nameList(c.B), same,
				ints(c.PosA), ints(c.PosB), f1(c.AUS), f1(c.BUS), signed(c.BUS-c.AUS))
		}
	}
	mw.line("")
}

// writeAlignedLayer is the per-layer table of both sides, position by
// position as aligned; "~" marks a change within the spread of the
// layer's instances.
func (r *Report) writeAlignedLayer(mw *mdWriter, h string) {
	mw.line("%sPer-layer table, aligned (mean µs per layer of its kind)", h)
	mw.line("")
	mw.line("| pos A | pos B | A | B | category | match | A | B | Δ | Δ %% | |")
	mw.line("|---:|---:|---|---|---|---|---:|---:|---:|---:|---|")
	for _, p := range r.Layer {
		mark := ""
		if p.WithinSpread && !unchanged(&p.AvgUS) {
			mark = "~"
		}
		a, b := "", ""
		if p.PosA >= 0 {
			a = code(cmp.Or(p.LabelA, p.ShortA))
		}
		if p.PosB >= 0 {
			b = code(cmp.Or(p.LabelB, p.ShortB))
		}
		mw.line("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", posStr(p.PosA), posStr(p.PosB), a, b, esc(p.Category),
			p.Match, sideF1(p.AvgUS.A, p.PosA), sideF1(p.AvgUS.B, p.PosB), signed(p.AvgUS.Delta), pct(&p.AvgUS), mark)
	}
	mw.line("")
	r.writeRoofChange(mw, h)
}

// writeRoofChange is the change of each position's % of the roofline,
// when both sides' layer tables carry it (docs/roofline.md).
func (r *Report) writeRoofChange(mw *mdWriter, h string) {
	if !slices.ContainsFunc(r.Layer, func(p PositionChange) bool { return p.PctRoof != nil }) {
		return
	}
	mw.line("%sRoofline per position (%% of the roofline reached; Δ in points)", h)
	mw.line("")
	mw.line("| pos A | pos B | A | B | A %% | B %% | Δ |")
	mw.line("|---:|---:|---|---|---:|---:|---:|")
	for _, p := range r.Layer {
		if p.PctRoof == nil {
			continue
		}
		mw.line("| %d | %d | %s | %s | %s | %s | %s |", p.PosA, p.PosB, code(cmp.Or(p.LabelA, p.ShortA)), code(cmp.Or(p.LabelB, p.ShortB)),
			f1(p.PctRoof.A), f1(p.PctRoof.B), signed(p.PctRoof.Delta))
	}
	mw.line("")
}

// writeNotes lists the report's notes, then each side's notes and
// warnings.
func (r *Report) writeNotes(mw *mdWriter) {
	for _, n := range r.Notes {
		mw.line("- %s", n)
	}
	for _, s := range []struct {
		name string
		p    *Profile
	}{{"A", r.A}, {"B", r.B}} {
		for _, n := range s.p.Notes {
			mw.line("- %s: %s", s.name, n)
		}
		for _, w := range s.p.Warnings {
			mw.line("- warning (%s): %s", s.name, w.Message)
		}
	}
}

func unitName(measure string) string {
	switch measure {
	case perStep:
		return "µs per step"
	case perLayer:
		return "µs per layer"
	}
	return "µs in the whole trace"
}

func (r *Report) measureOf(m string) *Pair {
	switch m {
	case perStep:
		return r.StepUS
	case perLayer:
		return r.LayerUS
	}
	return r.TotalUS
}

func (c *CategoryChange) measure(m string) *Pair {
	switch m {
	case perStep:
		return c.StepUS
	case perLayer:
		return c.LayerUS
	}
	return c.TotalUS
}

type kernelColumn struct {
	name string
	get  func(*KernelChange) *Pair
}

// kernelColumns are the times the kernel tables show: per layer and per
// step when known, else over the whole trace.
func (r *Report) kernelColumns() []kernelColumn {
	var cols []kernelColumn
	if r.LayerUS != nil {
		cols = append(cols, kernelColumn{"per layer", func(k *KernelChange) *Pair { return k.LayerUS }})
	}
	if r.Measure == perStep {
		cols = append(cols, kernelColumn{"per step", func(k *KernelChange) *Pair { return k.StepUS }})
	}
	if r.Measure != perStep && r.TotalUS != nil || len(cols) == 0 {
		cols = append(cols, kernelColumn{"total", func(k *KernelChange) *Pair { return k.TotalUS }})
	}
	return cols
}

// stepName says what a step is: "decode step", "profiler step".
func stepName(r *Report) string {
	k := r.A.StepKind
	if k == "" {
		k = r.B.StepKind
	}
	return stepKindName(k)
}

func stepKindName(k string) string {
	switch k {
	case "":
		return "step"
	case "profiler_step":
		return "profiler step"
	}
	return k + " step"
}

// describe says what a side is: source, device, batch size, steps, layers.
func describe(p *Profile) string {
	var parts []string
	if p.Device != "" {
		parts = append(parts, p.Device)
	}
	if p.DecodeBS > 0 {
		parts = append(parts, fmt.Sprintf("decode batch size %d", p.DecodeBS))
	}
	if p.Steps > 0 {
		parts = append(parts, fmt.Sprintf("%d %ss", p.Steps, stepKindName(p.StepKind)))
	}
	if p.LayersPerStep > 0 {
		parts = append(parts, fmt.Sprintf("%d layers per step", p.LayersPerStep))
	}
	if len(p.KernelsPerLayer) > 0 && len(p.Positions) > 0 {
		parts = append(parts, fmt.Sprintf("kernels per layer %s", ints(p.KernelsPerLayer)))
	}
	s := "`" + p.Source + "`"
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

func kernelLabel(k *KernelChange) string {
	switch k.In {
	case "a":
		return names(k.AShort, len(k.A)) + " (only in A)"
	case "b":
		return names(k.BShort, len(k.B)) + " (only in B)"
	}
	if strings.Join(k.AShort, ",") == strings.Join(k.BShort, ",") {
		return names(k.AShort, len(k.A))
	}
	return names(k.AShort, len(k.A)) + " → " + names(k.BShort, len(k.B))
}

// names prints short names as code, saying how many kernels share them.
func names(shorts []string, n int) string {
	s := nameList(shorts)
	if n > len(shorts) {
		s += fmt.Sprintf(" (%d kernels)", n)
	}
	return s
}

// maxNames is how many names a list prints before it says how many more.
const maxNames = 6

func nameList(shorts []string) string {
	if len(shorts) == 0 {
		return "nothing"
	}
	var parts []string
	for i, s := range shorts {
		if i == maxNames {
			parts = append(parts, fmt.Sprintf("… (%d more)", len(shorts)-maxNames))
			break
		}
		parts = append(parts, code(s))
	}
	return strings.Join(parts, " + ")
}

// code puts a kernel name in a code span, so that the template brackets
// of C++ names are not read as HTML; "|" is escaped for tables.
func code(s string) string { return "`" + strings.ReplaceAll(s, "|", `\|`) + "`" }

func esc(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func signed(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if s == "-0.0" {
		s = "0.0"
	}
	if v > 0 && s != "0.0" {
		s = "+" + s
	}
	return s
}

func pct(p *Pair) string {
	if p.Pct == nil {
		if p.B == 0 {
			return ""
		}
		return "new"
	}
	s := strconv.FormatFloat(*p.Pct, 'f', 1, 64)
	if s == "-0.0" {
		s = "0.0"
	}
	if *p.Pct > 0 && s != "0.0" {
		s = "+" + s
	}
	return s + "%"
}

func pctOf(p *Pair) string {
	if p == nil {
		return ""
	}
	return pct(p)
}

func ratioOf(p *Pair) string {
	if p.A == 0 {
		return ""
	}
	return strconv.FormatFloat(p.B/p.A, 'f', 2, 64)
}

// pf prints one figure of a pair that may be absent: 'a', 'b' or 'd' (the
// signed change).
func pf(p *Pair, which rune) string {
	if p == nil {
		return ""
	}
	switch which {
	case 'a':
		return f1(p.A)
	case 'b':
		return f1(p.B)
	}
	return signed(p.Delta)
}

func sideF1(v float64, pos int) string {
	if pos < 0 {
		return ""
	}
	return f1(v)
}

func posStr(p int) string {
	if p < 0 {
		return ""
	}
	return strconv.Itoa(p)
}

func ints(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ", ")
}

// writeWaterfall writes why TPOT moved: the lead line and each term.
func writeWaterfall(mw *mdWriter, w *analysis.Waterfall) {
	mw.line("**Why TPOT moved:** %s.", w.Lead())
	mw.line("")
	mw.line("| part of the TPOT change | ms/token | share | |")
	mw.line("|---|---:|---:|---|")
	for _, t := range w.Terms {
		share := ""
		if w.DeltaUS != 0 {
			share = fmt.Sprintf("%.0f%%", 100*t.US/w.DeltaUS)
		}
		mw.line("| %s | %s | %s | %s |", t.Name, fmt.Sprintf("%+.3f", t.US/1000), share, t.Detail)
	}
	mw.line("| **total** | **%s** | | |", fmt.Sprintf("%+.3f", w.DeltaUS/1000))
	mw.line("")
	if math.IsNaN(w.SlopeUS) {
		mw.line("Batch priced with no model: %s.", strings.Join(w.Notes, "; "))
	} else {
		mw.line("A change of batch is priced at %s µs of GPU time per decode step per added sequence (the baseline's levels, least squares).", f1(w.SlopeUS))
		for _, n := range w.Notes {
			mw.line("- %s", n)
		}
	}
	mw.line("")
}

type mdWriter struct {
	w   io.Writer
	err error
}

func (m *mdWriter) line(format string, args ...any) {
	if m.err != nil {
		return
	}
	_, m.err = fmt.Fprintf(m.w, format+"\n", args...)
}

// WriteMarkdown prints the comparison of two runs: an overview of the
// levels, then per level the client metrics side by side, what explains
// the TPOT change, and the comparison of the level's kernels.
func (rr *RunReport) WriteMarkdown(w io.Writer, opt MarkdownOptions) error {
	mw := &mdWriter{w: w}
	mw.line("A: `%s`", rr.A)
	mw.line("B: `%s`", rr.B)
	mw.line("")
	concs := make([]int, len(rr.Levels))
	for i, l := range rr.Levels {
		concs[i] = l.Conc
	}
	s := "Levels matched by concurrency: " + ints(concs)
	if len(rr.OnlyA) > 0 {
		s += "; only in A: " + ints(rr.OnlyA)
	}
	if len(rr.OnlyB) > 0 {
		s += "; only in B: " + ints(rr.OnlyB)
	}
	mw.line("%s.", s)
	mw.line("")
	if rr.NoChange {
		mw.line("**No change**: the same client metrics and the same kernels with the same times at every level.")
		mw.line("")
	}
	mw.line("| conc | TPOT p50 A (ms) | B | Δ %% | out tok/s A | B | Δ %% | GPU µs per decode step A | B | Δ %% |")
	mw.line("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, l := range rr.Levels {
		var tpot, tok Pair
		for _, m := range l.Client {
			switch m.Unit {
			case "tpot-p50-ms":
				tpot = m.Pair
			case "out-tok/s":
				tok = m.Pair
			}
		}
		step := "| | |"
		if l.Kernels != nil && l.Kernels.StepUS != nil {
			p := l.Kernels.StepUS
			step = fmt.Sprintf("%s | %s | %s |", f1(p.A), f1(p.B), pct(p))
		}
		mw.line("| %d | %s | %s | %s | %s | %s | %s | %s", l.Conc, f2(tpot.A), f2(tpot.B), pct(&tpot), f1(tok.A), f1(tok.B), pct(&tok), step)
	}
	mw.line("")
	for _, l := range rr.Levels {
		mw.line("## Concurrency %d", l.Conc)
		mw.line("")
		mw.line("| client metric | A | B | Δ | Δ %% |")
		mw.line("|---|---:|---:|---:|---:|")
		for _, m := range l.Client {
			mw.line("| %s | %s | %s | %s | %s |", m.Name, f2(m.Pair.A), f2(m.Pair.B), signed2(m.Pair.Delta), pct(&m.Pair))
		}
		mw.line("")
		if len(l.Energy) > 0 {
			mw.line("| energy per decode token by layer role (mJ, apportioned by GPU time) | A | B | Δ | Δ %% |")
			mw.line("|---|---:|---:|---:|---:|")
			for _, m := range l.Energy {
				mw.line("| %s | %s | %s | %s | %s |", m.Name, f2(m.Pair.A), f2(m.Pair.B), signed2(m.Pair.Delta), pct(&m.Pair))
			}
			mw.line("")
		}
		mw.line("%s", l.Explanation)
		mw.line("")
		if w := l.Waterfall; w != nil {
			writeWaterfall(mw, w)
		}
		for _, n := range l.Notes {
			mw.line("- %s", n)
		}
		if len(l.Notes) > 0 {
			mw.line("")
		}
		if l.Kernels != nil {
			o := opt
			o.Heading = 3
			if err := l.Kernels.WriteMarkdown(w, o); err != nil {
				return err
			}
		}
	}
	return mw.err
}
