package report

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart file names of the charts to compare runs by.
const (
	PositionsChart = "positions.svg"  // each position's time against decode batch size
	TokenTimeChart = "token_time.svg" // where a token's time goes, per level
)

// maxPositionLines is how many positions the positions chart draws: the
// largest at the highest level, where the time is.
const maxPositionLines = 8

// bsAxis sets the x axis to the decode batch sizes of the levels: log₂
// with a labelled tick at each (sweeps double), linear for one.
func bsAxis(p *plot.Plot, bss []int) {
	ticks := plot.ConstantTicks{}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, bs := range bss {
		x := float64(bs)
		ticks = append(ticks, plot.Tick{Value: x, Label: strconv.Itoa(bs)})
		lo, hi = min(lo, x), max(hi, x)
	}
	p.X.Tick.Marker = ticks
	if lo == hi || lo <= 0 {
		p.X.Min, p.X.Max = lo-1, hi+1
		return
	}
	p.X.Scale = plot.LogScale{}
	p.X.Min, p.X.Max = lo/1.25, hi*1.25
	p.X.Label.Text += " — log₂ axis"
}

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
	p := newPlot("Decode layer positions against batch size", "decode batch size", "time per layer (µs)")
	var bss []int
	for _, l := range v.lv {
		if !slices.Contains(bss, l.BS()) {
			bss = append(bss, l.BS())
		}
	}
	bsAxis(p, bss)
	maxY := 0.0
	for i, r := range rows {
		var xys plotter.XYs
		for li, c := range r.Cells {
			if c != nil {
				xys = append(xys, plotter.XY{X: float64(v.lv[li].BS()), Y: c.AvgUS})
				maxY = max(maxY, c.AvgUS)
			}
		}
		col := colour(i)
		pts, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, err
		}
		pts.Color, pts.Shape, pts.Radius = col, draw.CircleGlyph{}, vg.Points(3)
		// The fitted line over the measured range.
		x0, x1 := xys[0].X, xys[len(xys)-1].X
		var fitXYs plotter.XYs
		for k := 0; k <= 16; k++ {
			x := x0 * math.Pow(x1/x0, float64(k)/16)
			fitXYs = append(fitXYs, plotter.XY{X: x, Y: r.Fit.Intercept + r.Fit.Slope*x})
		}
		fl, err := plotter.NewLine(fitXYs)
		if err != nil {
			return nil, err
		}
		fl.Color, fl.Width, fl.Dashes = col, vg.Points(1.5), []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(fl, pts)
		name := fmt.Sprintf("%d %s: %s µs/seq", r.Pos, r.Label, f2(r.Fit.Slope))
		if c := r.Cells[last]; c == nil {
			name = fmt.Sprintf("%d %s", r.Pos, r.Label)
		}
		p.Legend.Add(name, fl, pts)
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(6)
	yFromZero(p, maxY, 1.1+0.09*float64(len(rows)))
	return svg(20*cm, 14*cm, p)
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
	p := newPlot("Where a token's time goes", "level", "time per token (ms)")
	p.Legend = plot.NewLegend()
	names := make([]string, n)
	for i, l := range lv {
		names[i] = fmt.Sprintf("conc %d (bs %d)", l.Conc, l.BS())
	}
	p.NominalX(names...)
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
	extra := func(name string, col color.RGBA, f func(j int) float64) {
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
	extra("other steps (per token)", color.RGBA{160, 160, 160, 255}, func(j int) float64 { return lv[j].File.StepTime.OtherPerTokenUS })
	totals := make([]float64, n)
	for j, l := range lv {
		totals[j] = l.File.StepTime.TokenUS / 1000
	}
	return stackedBars(p, parts, totals, " ms")
}

// part is one layer of a stacked bar chart: a value per bar.
type part struct {
	name string
	col  color.RGBA
	vals []float64
}

// stackedBars draws parts stacked in bars on p (its x axis already
// nominal, one bar per value), each bar's total above it with unit, and
// the legend beside the plot, listing the stack from its top down.
func stackedBars(p *plot.Plot, parts []part, totals []float64, unit string) ([]byte, error) {
	n := len(totals)
	legend := plot.NewLegend()
	legend.TextStyle.Font = font.From(sans, legendSize)
	legend.Top, legend.Left = true, true
	legend.Padding = vg.Points(3)
	var below *plotter.BarChart
	var bars []*plotter.BarChart
	for _, pt := range parts {
		b, err := plotter.NewBarChart(plotter.Values(pt.vals), vg.Points(44))
		if err != nil {
			return nil, err
		}
		b.Color = pt.col
		b.LineStyle.Width = vg.Points(0.5)
		b.LineStyle.Color = color.White
		if below != nil {
			b.StackOn(below)
		}
		below = b
		p.Add(b)
		bars = append(bars, b)
	}
	for i := len(bars) - 1; i >= 0; i-- {
		legend.Add(parts[i].name, bars[i])
	}
	var tops plotter.XYs
	var labels []string
	top := 0.0
	for i, t := range totals {
		tops = append(tops, plotter.XY{X: float64(i), Y: t})
		if unit == " ms" {
			labels = append(labels, f2(t)+unit)
		} else {
			labels = append(labels, f1(t)+unit)
		}
		top = max(top, t)
	}
	lab, err := plotter.NewLabels(plotter.XYLabels{XYs: tops, Labels: labels})
	if err != nil {
		return nil, err
	}
	for i := range lab.TextStyle {
		lab.TextStyle[i].Font = font.From(sans, tickSize)
		lab.TextStyle[i].XAlign = draw.XCenter
	}
	lab.Offset = vg.Point{Y: vg.Points(4)}
	p.Add(lab)
	yFromZero(p, top, 1.12)
	p.X.Min, p.X.Max = -0.6, float64(n)-0.4
	legendW := 6 * cm
	for _, pt := range parts {
		legendW = max(legendW, legend.TextStyle.Width(pt.name)+legend.ThumbnailWidth+cm)
	}
	width := 6*cm + 3.5*cm*vg.Length(n) + legendW
	height := max(11*cm, vg.Length(len(bars))*(legend.TextStyle.Height("X")+legend.Padding)+3*cm)
	c := vgsvg.New(width, height)
	dc := draw.New(c)
	p.Draw(draw.Crop(dc, vg.Points(2), -legendW, vg.Points(2), -vg.Points(6)))
	legend.Draw(draw.Crop(dc, width-legendW+0.4*cm, 0, 0, -1.2*cm))
	return svgBytes(c)
}

// hasPositionFits says whether a position has a fit over two levels or more.
func (v *view) hasPositionFits() bool {
	return slices.ContainsFunc(v.rows, func(r *row) bool { return r.Fit.N >= 2 })
}

// hasTokenTimes says whether any level has timed decode steps.
func (v *view) hasTokenTimes() bool {
	return slices.ContainsFunc(v.lv, func(l *level) bool { return l.File.StepTime.Timed > 0 && l.File.StepTime.TokenUS > 0 })
}
