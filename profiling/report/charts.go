package report

import (
	"bytes"
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

// chart is one SVG file of the report.
type chart struct {
	file string
	draw func() ([]byte, error)
}

// charts lists the charts the run has data for (the readme links the same).
func (v *view) charts() []chart {
	var out []chart
	if v.haveRows() {
		out = append(out, chart{LatencyChart, v.latencyChart}, chart{ThroughputChart, v.throughputChart},
			chart{ThroughputTPOTChart, v.throughputTPOTChart})
	}
	if len(v.cats) > 0 {
		out = append(out, chart{LayerTimeChart, v.layerTimeChart})
	}
	if v.hasPositionFits() {
		out = append(out, chart{PositionsChart, v.positionsChart})
	}
	if v.hasTokenTimes() {
		out = append(out, chart{TokenTimeChart, v.tokenTimeChart})
	}
	if v.hasRoofline() {
		out = append(out, chart{RooflineChart, v.rooflineChart})
	}
	return out
}

// palette holds distinguishable colours, assigned in order.
var palette = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255}, {148, 103, 189, 255},
	{140, 86, 75, 255}, {227, 119, 194, 255}, {188, 189, 34, 255}, {23, 190, 207, 255}, {127, 127, 127, 255},
	{174, 199, 232, 255}, {255, 187, 120, 255}, {152, 223, 138, 255}, {255, 152, 150, 255}, {197, 176, 213, 255},
	{196, 156, 148, 255}, {247, 182, 210, 255}, {219, 219, 141, 255}, {158, 218, 229, 255}, {199, 199, 199, 255},
}

func colour(i int) color.RGBA { return palette[i%len(palette)] }

const (
	cm         = vg.Centimeter
	titleSize  = 13
	labelSize  = 11
	tickSize   = 10
	legendSize = 10
)

var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// newPlot is a plot with the report's fonts and labelled axes.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = x, y
	p.Title.TextStyle.Font = font.From(sans, titleSize)
	p.X.Label.TextStyle.Font = font.From(sans, labelSize)
	p.Y.Label.TextStyle.Font = font.From(sans, labelSize)
	p.X.Tick.Label.Font = font.From(sans, tickSize)
	p.Y.Tick.Label.Font = font.From(sans, tickSize)
	p.Legend.TextStyle.Font = font.From(sans, legendSize)
	p.Title.Padding = vg.Points(6)
	p.Legend.Padding = vg.Points(2)
	p.Y.Tick.Marker = plainTicks
	p.X.Label.Padding = vg.Points(4)
	p.Y.Label.Padding = vg.Points(4)
	p.Add(plotter.NewGrid())
	return p
}

// plainTicks label four to six round values (1, 2, 2.5 or 5 times a power
// of ten apart) without padded decimals, with unlabelled ticks between.
var plainTicks = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 6, 64)}}
	}
	raw := (hi - lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ts []plot.Tick
	minor := step / 2
	for i := math.Ceil(lo / minor); i*minor <= hi+minor*1e-9; i++ {
		v := i * minor
		t := plot.Tick{Value: v}
		if math.Mod(i, 2) == 0 {
			t.Label = strconv.FormatFloat(v, 'g', 6, 64)
		}
		ts = append(ts, t)
	}
	return ts
})

// svg draws plots side by side on a w × h canvas.
func svg(w, h vg.Length, plots ...*plot.Plot) ([]byte, error) {
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	if len(plots) == 1 {
		plots[0].Draw(draw.Crop(dc, vg.Points(2), -vg.Points(8), vg.Points(2), -vg.Points(6)))
	} else {
		tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: cm, PadTop: vg.Points(6), PadBottom: vg.Points(2), PadLeft: vg.Points(2), PadRight: vg.Points(8)}
		canvases := plot.Align([][]*plot.Plot{plots}, tiles, dc)
		for i, p := range plots {
			p.Draw(canvases[0][i])
		}
	}
	return svgBytes(c)
}

func svgBytes(c *vgsvg.Canvas) ([]byte, error) {
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// levelsWithRows are the levels that have throughput figures.
func (v *view) levelsWithRows() []*level {
	var out []*level
	for _, l := range v.r.levels {
		if l.HaveRow {
			out = append(out, l)
		}
	}
	return out
}

// concAxis sets the x axis to the levels' concurrencies: a log scale with a
// tick at each level (sweeps double the concurrency), linear for one level.
func concAxis(p *plot.Plot, ls []*level) {
	ticks := make(plot.ConstantTicks, len(ls))
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, l := range ls {
		x := float64(l.Conc)
		ticks[i] = plot.Tick{Value: x, Label: strconv.Itoa(l.Conc)}
		lo, hi = min(lo, x), max(hi, x)
	}
	p.X.Tick.Marker = ticks
	if lo == hi {
		p.X.Min, p.X.Max = lo-1, hi+1
		return
	}
	p.X.Scale = plot.LogScale{}
	p.X.Min, p.X.Max = lo/1.25, hi*1.25
	p.X.Label.Text += " — log₂ axis"
}

// line adds one series with markers; dashed for a tail percentile.
func line(p *plot.Plot, name string, xys plotter.XYs, i int, dashed bool) error {
	l, s, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	l.Color, s.Color = colour(i), colour(i)
	l.Width = vg.Points(1.8)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		s.Shape = draw.BoxGlyph{}
	} else {
		s.Shape = draw.CircleGlyph{}
	}
	s.Radius = vg.Points(3)
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return nil
}

// yFromZero starts the y axis at 0 with headroom above the data for the
// legend.
func yFromZero(p *plot.Plot, maxY float64, headroom float64) {
	p.Y.Min = 0
	if maxY <= 0 {
		maxY = 1
	}
	p.Y.Max = maxY * headroom
}

func maxOf(xys ...plotter.XYs) float64 {
	m := 0.0
	for _, s := range xys {
		for _, xy := range s {
			m = max(m, xy.Y)
		}
	}
	return m
}

// latencyChart: TTFT and TPOT, p50 and p99, against concurrency.
func (v *view) latencyChart() ([]byte, error) {
	ls := v.levelsWithRows()
	var t50, t99, p50, p99 plotter.XYs
	for _, l := range ls {
		x := float64(l.Conc)
		t50 = append(t50, plotter.XY{X: x, Y: l.Row.TTFTP50MS})
		t99 = append(t99, plotter.XY{X: x, Y: l.Row.TTFTP99MS})
		p50 = append(p50, plotter.XY{X: x, Y: l.Row.TPOTP50MS})
		p99 = append(p99, plotter.XY{X: x, Y: l.Row.TPOTP99MS})
	}
	ttft := newPlot("Time to first token", "concurrency (requests in flight)", "TTFT (ms)")
	tpot := newPlot("Time per output token", "concurrency (requests in flight)", "TPOT (ms)")
	for _, c := range []struct {
		p        *plot.Plot
		p50, p99 plotter.XYs
		name     string
	}{{ttft, t50, t99, "TTFT"}, {tpot, p50, p99, "TPOT"}} {
		concAxis(c.p, ls)
		if err := line(c.p, c.name+" p50", c.p50, 0, false); err != nil {
			return nil, err
		}
		if err := line(c.p, c.name+" p99", c.p99, 3, true); err != nil {
			return nil, err
		}
		c.p.Legend.Top, c.p.Legend.Left = true, true
		c.p.Legend.XOffs = vg.Points(6)
		yFromZero(c.p, maxOf(c.p50, c.p99), 1.3)
	}
	return svg(26*cm, 10*cm, ttft, tpot)
}

// throughputChart: output and total token throughput against concurrency.
func (v *view) throughputChart() ([]byte, error) {
	ls := v.levelsWithRows()
	var out, total, req plotter.XYs
	for _, l := range ls {
		x := float64(l.Conc)
		out = append(out, plotter.XY{X: x, Y: l.Row.OutTokS})
		total = append(total, plotter.XY{X: x, Y: l.Row.TotalTokS})
		req = append(req, plotter.XY{X: x, Y: l.Row.ReqS})
	}
	po := newPlot("Output tokens", "concurrency (requests in flight)", "output throughput (tok/s)")
	pt := newPlot("All tokens (input + output)", "concurrency (requests in flight)", "total throughput (tok/s)")
	pr := newPlot("Requests", "concurrency (requests in flight)", "request throughput (req/s)")
	for i, c := range []struct {
		p    *plot.Plot
		xys  plotter.XYs
		name string
	}{{po, out, "output tok/s"}, {pt, total, "total tok/s"}, {pr, req, "req/s"}} {
		concAxis(c.p, ls)
		if err := line(c.p, c.name, c.xys, i, false); err != nil {
			return nil, err
		}
		c.p.Legend = plot.NewLegend() // one series: the axis label says it
		yFromZero(c.p, maxOf(c.xys), 1.15)
	}
	return svg(30*cm, 9*cm, po, pt, pr)
}

// throughputTPOTChart: output throughput against median TPOT, a point per
// level: the latency–throughput curve to pick an operating point from.
func (v *view) throughputTPOTChart() ([]byte, error) {
	ls := v.levelsWithRows()
	var xys, xys99 plotter.XYs
	var labels []string
	for _, l := range ls {
		xys = append(xys, plotter.XY{X: l.Row.TPOTP50MS, Y: l.Row.OutTokS})
		xys99 = append(xys99, plotter.XY{X: l.Row.TPOTP99MS, Y: l.Row.OutTokS})
		labels = append(labels, "conc "+strconv.Itoa(l.Conc))
	}
	p := newPlot("Throughput against latency", "TPOT (ms)", "output throughput (tok/s)")
	p.X.Tick.Marker = plainTicks
	if err := line(p, "TPOT p50", xys, 0, false); err != nil {
		return nil, err
	}
	if err := line(p, "TPOT p99", xys99, 3, true); err != nil {
		return nil, err
	}
	// Labels alternate above and below the line, so that neighbouring
	// levels (close in TPOT at low concurrency) do not overlap.
	for side := range 2 {
		var at plotter.XYs
		var text []string
		for i := side; i < len(xys); i += 2 {
			at, text = append(at, xys[i]), append(text, labels[i])
		}
		if len(at) == 0 {
			continue
		}
		lab, err := plotter.NewLabels(plotter.XYLabels{XYs: at, Labels: text})
		if err != nil {
			return nil, err
		}
		for i := range lab.TextStyle {
			lab.TextStyle[i].Font = font.From(sans, tickSize)
			lab.TextStyle[i].XAlign = draw.XRight
		}
		lab.Offset = vg.Point{X: vg.Points(-6), Y: vg.Points(4)}
		if side == 1 {
			lab.TextStyle[0].XAlign = draw.XLeft
			for i := range lab.TextStyle {
				lab.TextStyle[i].XAlign = draw.XLeft
			}
			lab.Offset = vg.Point{X: vg.Points(6), Y: -vg.Points(12)}
		}
		p.Add(lab)
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(6)
	lo, hi := math.Inf(1), 0.0
	for _, xy := range append(slices.Clone(xys), xys99...) {
		lo, hi = min(lo, xy.X), max(hi, xy.X)
	}
	span := max(hi-lo, 1)
	p.X.Min, p.X.Max = max(0, lo-0.35*span), hi+0.1*span
	yFromZero(p, maxOf(xys), 1.25)
	return svg(16*cm, 11*cm, p)
}

// layerTimeChart: a decode layer's time stacked by category, a bar per
// level, the legend beside the plot.
func (v *view) layerTimeChart() ([]byte, error) {
	n := len(v.lv)
	p := newPlot("Decode layer time by category", "level", "time per decode layer (µs)")
	p.Legend = plot.NewLegend()
	names := make([]string, n)
	for i, l := range v.lv {
		names[i] = fmt.Sprintf("conc %d (bs %d)", l.Conc, l.BS())
	}
	p.NominalX(names...)
	p.X.Tick.Label.Font = font.From(sans, tickSize)
	var parts []part
	totals := make([]float64, n)
	for _, c := range v.cats {
		vals := make([]float64, n)
		any := false
		for i := range vals {
			vals[i] = val(c.LayerUS, i)
			totals[i] += vals[i]
			any = any || vals[i] > 0
		}
		if any {
			parts = append(parts, part{c.Category, categoryColour(c.Category), vals})
		}
	}
	return stackedBars(p, parts, totals, " µs")
}
