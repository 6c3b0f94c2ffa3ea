package report

import (
	"fmt"
	"math"
	"strconv"

	"github.com/profile-model/profile-model/internal/svgchart"
)

const cm = svgchart.CM

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
	if len(v.energyLevels()) > 1 {
		out = append(out, chart{EnergyChart, v.energyChart})
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

// levelAxis is an x axis with a labelled tick at each value: log₂ (sweeps
// double), linear for one value.
func levelAxis(label string, xs []int) svgchart.Axis {
	a := svgchart.Axis{Label: label, Min: math.Inf(1), Max: math.Inf(-1)}
	for _, x := range xs {
		a.Ticks = append(a.Ticks, svgchart.Tick{V: float64(x), Label: strconv.Itoa(x)})
		a.Min, a.Max = min(a.Min, float64(x)), max(a.Max, float64(x))
	}
	if a.Min == a.Max || a.Min <= 0 {
		a.Min, a.Max = a.Min-1, a.Max+1
		return a
	}
	a.Log = true
	a.Min, a.Max = a.Min/1.25, a.Max*1.25
	a.Label += " — log₂ axis"
	return a
}

// concAxis is the x axis of the levels' concurrencies.
func concAxis(ls []*level) svgchart.Axis {
	var cs []int
	for _, l := range ls {
		cs = append(cs, l.Conc)
	}
	return levelAxis("concurrency (requests in flight)", cs)
}

// yFromZero is a y axis from 0 with headroom above the data for the
// legend.
func yFromZero(label string, maxY, headroom float64) svgchart.Axis {
	if maxY <= 0 {
		maxY = 1
	}
	a := svgchart.Axis{Label: label, Max: maxY * headroom}
	a.Ticks = svgchart.PlainTicks(0, a.Max)
	return a
}

func maxOf(ss ...[][2]float64) float64 {
	m := 0.0
	for _, s := range ss {
		for _, xy := range s {
			m = max(m, xy[1])
		}
	}
	return m
}

// p50 and p99 are a percentile pair's series: the tail dashed, with square
// markers.
func p50(name string, pts [][2]float64) svgchart.Series {
	return svgchart.Series{Name: name, Pts: pts, Index: 0}
}

func p99(name string, pts [][2]float64) svgchart.Series {
	return svgchart.Series{Name: name, Pts: pts, Index: 3, Dashed: true, Mark: svgchart.Square}
}

// latencyChart: TTFT and TPOT, p50 and p99, against concurrency.
func (v *view) latencyChart() ([]byte, error) {
	ls := v.levelsWithRows()
	var t50, t99, o50, o99 [][2]float64
	for _, l := range ls {
		x := float64(l.Conc)
		t50 = append(t50, [2]float64{x, l.Row.TTFTP50MS})
		t99 = append(t99, [2]float64{x, l.Row.TTFTP99MS})
		o50 = append(o50, [2]float64{x, l.Row.TPOTP50MS})
		o99 = append(o99, [2]float64{x, l.Row.TPOTP99MS})
	}
	var panels []*svgchart.Panel
	for _, c := range []struct {
		title, name string
		p50, p99    [][2]float64
	}{{"Time to first token", "TTFT", t50, t99}, {"Time per output token", "TPOT", o50, o99}} {
		panels = append(panels, &svgchart.Panel{
			Title: c.title, X: concAxis(ls), Y: yFromZero(c.name+" (ms)", maxOf(c.p50, c.p99), 1.3), Legend: true,
			Series: []svgchart.Series{p50(c.name+" p50", c.p50), p99(c.name+" p99", c.p99)},
		})
	}
	return svgchart.Panels(26*cm, 10*cm, panels...), nil
}

// throughputChart: output and total token throughput against concurrency.
func (v *view) throughputChart() ([]byte, error) {
	ls := v.levelsWithRows()
	var out, total, req [][2]float64
	for _, l := range ls {
		x := float64(l.Conc)
		out = append(out, [2]float64{x, l.Row.OutTokS})
		total = append(total, [2]float64{x, l.Row.TotalTokS})
		req = append(req, [2]float64{x, l.Row.ReqS})
	}
	var panels []*svgchart.Panel
	for i, c := range []struct {
		title, label string
		xys          [][2]float64
	}{{"Output tokens", "output throughput (tok/s)", out}, {"All tokens (input + output)", "total throughput (tok/s)", total}, {"Requests", "request throughput (req/s)", req}} {
		// One series: the axis label says it, no legend.
		panels = append(panels, &svgchart.Panel{Title: c.title, X: concAxis(ls), Y: yFromZero(c.label, maxOf(c.xys), 1.15),
			Series: []svgchart.Series{{Pts: c.xys, Index: i}}})
	}
	return svgchart.Panels(30*cm, 9*cm, panels...), nil
}

// throughputTPOTChart: output throughput against median TPOT, a point per
// level: the latency–throughput curve to pick an operating point from.
func (v *view) throughputTPOTChart() ([]byte, error) {
	ls := v.levelsWithRows()
	var xys, xys99 [][2]float64
	var notes []svgchart.Note
	lo, hi := math.Inf(1), 0.0
	for i, l := range ls {
		xys = append(xys, [2]float64{l.Row.TPOTP50MS, l.Row.OutTokS})
		xys99 = append(xys99, [2]float64{l.Row.TPOTP99MS, l.Row.OutTokS})
		// Labels alternate left-above and right-below the point, so that
		// neighbouring levels (close in TPOT at low concurrency) do not
		// overlap.
		notes = append(notes, svgchart.Note{X: l.Row.TPOTP50MS, Y: l.Row.OutTokS, Text: "conc " + strconv.Itoa(l.Conc), Left: i%2 == 0, Below: i%2 == 1})
		lo, hi = min(lo, l.Row.TPOTP50MS, l.Row.TPOTP99MS), max(hi, l.Row.TPOTP50MS, l.Row.TPOTP99MS)
	}
	span := max(hi-lo, 1)
	x := svgchart.Axis{Label: "TPOT (ms)", Min: max(0, lo-0.35*span), Max: hi + 0.1*span}
	x.Ticks = svgchart.PlainTicks(x.Min, x.Max)
	p := &svgchart.Panel{Title: "Throughput against latency", X: x, Y: yFromZero("output throughput (tok/s)", maxOf(xys), 1.25), Legend: true,
		Series: []svgchart.Series{p50("TPOT p50", xys), p99("TPOT p99", xys99)}, Notes: notes}
	return svgchart.Panels(16*cm, 11*cm, p), nil
}

// layerTimeChart: a decode layer's time stacked by category, a bar per
// level, the legend beside the plot.
func (v *view) layerTimeChart() ([]byte, error) {
	n := len(v.lv)
	names := make([]string, n)
	for i, l := range v.lv {
		names[i] = fmt.Sprintf("conc %d (bs %d)", l.Conc, l.BS())
	}
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
	return stackedBars("Decode layer time by category", "time per decode layer (µs)", names, parts, totals, " µs"), nil
}
