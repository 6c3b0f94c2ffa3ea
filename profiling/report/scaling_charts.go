package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/profile-model/profile-model/internal/svgchart"
)

// Chart file names of the charts to compare runs by.
const (
	PositionsChart = "positions.svg"  // each position's time against decode batch size
	TokenTimeChart = "token_time.svg" // where a token's time goes, per level
)

// maxPositionLines is how many positions the positions chart draws: the
// largest at the highest level, where the time is.
const maxPositionLines = 8

// positionsChart draws the time of the largest positions of the decode
// layer against the decode batch size, each with its fitted line (dashed):
// the per-layer table's slopes as a picture.
func (v *view) positionsChart() ([]byte, error) {
	last := len(v.lv) - 1
	var rows []*row
	for _, r := range v.rows {
		if r.Fit.N >= 2 {
			rows = append(rows, r)
		}
	}
	top := func(r *row) float64 {
		m := 0.0
		for _, c := range r.Cells {
			if c != nil {
				m = max(m, c.AvgUS)
			}
		}
		return m
	}
	slices.SortStableFunc(rows, func(a, b *row) int {
		return cmp.Or(cmp.Compare(top(b), top(a)), cmp.Compare(a.Pos, b.Pos))
	})
	rows = rows[:min(len(rows), maxPositionLines)]
	var bss []int
	for _, l := range v.lv {
		if !slices.Contains(bss, l.BS()) {
			bss = append(bss, l.BS())
		}
	}
	p := &svgchart.Panel{Title: "Decode layer positions against batch size", X: levelAxis("decode batch size", bss), Legend: true}
	maxY := 0.0
	for i, r := range rows {
		var xys [][2]float64
		for li, c := range r.Cells {
			if c != nil {
				xys = append(xys, [2]float64{float64(v.lv[li].BS()), c.AvgUS})
				maxY = max(maxY, c.AvgUS)
			}
		}
		// The fitted line over the measured range.
		x0, x1 := xys[0][0], xys[len(xys)-1][0]
		var fit [][2]float64
		for k := 0; k <= 16; k++ {
			x := x0 * math.Pow(x1/x0, float64(k)/16)
			fit = append(fit, [2]float64{x, r.Fit.Intercept + r.Fit.Slope*x})
		}
		name := fmt.Sprintf("%d %s: %s µs/seq", r.Pos, r.Label, f2(r.Fit.Slope))
		if c := r.Cells[last]; c == nil {
			name = fmt.Sprintf("%d %s", r.Pos, r.Label)
		}
		p.Series = append(p.Series, svgchart.Series{Name: name, Pts: xys, LinePts: fit, Index: i, Dashed: true, Width: 1.5})
	}
	p.Y = yFromZero("time per layer (µs)", maxY, 1.1+0.09*float64(len(rows)))
	return svgchart.Panels(20*cm, 14*cm, p), nil
}

// tokenTimeChart stacks where a token's time goes at each level, in engine
// time: the decode step's GPU-busy time split by category, the gaps
// between kernels, and the prefill (and other) steps spread per token.
func (v *view) tokenTimeChart() ([]byte, error) {
	var lv []*level
	var idx []int
	for i, l := range v.lv {
		if l.File.StepTime.Timed > 0 && l.File.StepTime.TokenUS > 0 {
			lv, idx = append(lv, l), append(idx, i)
		}
	}
	n := len(lv)
	names := make([]string, n)
	for i, l := range lv {
		names[i] = fmt.Sprintf("conc %d (bs %d)", l.Conc, l.BS())
	}
	var parts []part
	for _, c := range v.cats {
		ms := make([]float64, n)
		any := false
		for j, i := range idx {
			st := lv[j].File.StepTime
			ms[j] = val(c.Share, i) / 100 * st.BusyUS / 1000
			any = any || ms[j] > 0
		}
		if any {
			parts = append(parts, part{c.Category, categoryColour(c.Category), ms})
		}
	}
	extra := func(name, col string, f func(j int) float64) {
		ms := make([]float64, n)
		any := false
		for j := range lv {
			ms[j] = f(j) / 1000
			any = any || ms[j] > 0
		}
		if any {
			parts = append(parts, part{name, col, ms})
		}
	}
	extra("gaps between kernels", gapColour, func(j int) float64 { return lv[j].File.StepTime.GapUS })
	extra("prefill steps (per token)", prefillColour, func(j int) float64 { return lv[j].File.StepTime.PrefillPerTokenUS })
	extra("other steps (per token)", otherStepColour, func(j int) float64 { return lv[j].File.StepTime.OtherPerTokenUS })
	totals := make([]float64, n)
	for j, l := range lv {
		totals[j] = l.File.StepTime.TokenUS / 1000
	}
	return stackedBars("Where a token's time goes", "time per token (ms)", names, parts, totals, " ms"), nil
}

// part is one layer of a stacked bar chart: a value per bar.
type part struct {
	name string
	col  string
	vals []float64
}

// stackedBars draws parts stacked in bars, one per name on the x axis
// ("level"), each bar's total above it with unit, and the legend beside
// the plot, listing the stack from its top down.
func stackedBars(title, yLabel string, names []string, parts []part, totals []float64, unit string) []byte {
	n := len(totals)
	x := svgchart.Axis{Label: "level", Min: -0.6, Max: float64(n) - 0.4}
	for i, name := range names {
		x.Ticks = append(x.Ticks, svgchart.Tick{V: float64(i), Label: name})
	}
	top := 0.0
	for _, t := range totals {
		top = max(top, t)
	}
	y := yFromZero(yLabel, top, 1.12)

	const ls = svgchart.LegendSize
	legendW := 6 * cm
	for _, pt := range parts {
		legendW = max(legendW, svgchart.TextWidth(pt.name, ls)+20+cm)
	}
	width := 6*cm + 3.5*cm*float64(n) + legendW
	height := max(11*cm, float64(len(parts))*(ls+5)+3*cm)
	c := svgchart.New(width, height)
	r := c.Frame(2, 6, width-legendW-4, height-8, title, &x, &y)
	const barW = 44
	for i := range n {
		cx, base := r.PX(&x, float64(i)), 0.0
		for _, pt := range parts {
			if pt.vals[i] > 0 {
				y0, y1 := r.PY(&y, base+pt.vals[i]), r.PY(&y, base)
				c.Rect(cx-barW/2, y0, barW, y1-y0, pt.col, "#ffffff")
			}
			base += pt.vals[i]
		}
		label := f1(totals[i]) + unit
		if unit == " ms" {
			label = f2(totals[i]) + unit
		}
		c.Text(cx, r.PY(&y, totals[i])-4, svgchart.TickSize, "middle", label, false)
	}
	ly := r.Y0 + ls
	lx := width - legendW + 0.4*cm
	for i := len(parts) - 1; i >= 0; i-- {
		c.Rect(lx, ly-ls*0.8, 14, ls*0.8, parts[i].col, "")
		c.Text(lx+20, ly, ls, "start", parts[i].name, false)
		ly += ls + 5
	}
	return c.Bytes()
}

// hasPositionFits says whether a position has a fit over two levels or more.
func (v *view) hasPositionFits() bool {
	return slices.ContainsFunc(v.rows, func(r *row) bool { return r.Fit.N >= 2 })
}

// hasTokenTimes says whether any level has timed decode steps.
func (v *view) hasTokenTimes() bool {
	return slices.ContainsFunc(v.lv, func(l *level) bool { return l.File.StepTime.Timed > 0 && l.File.StepTime.TokenUS > 0 })
}
