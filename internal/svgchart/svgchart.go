// Package svgchart writes the SVG charts of the run and sweep reports: line
// and scatter charts on linear or log axes, and the primitives for others
// (the report's stacked bars). A plotting library would parse its embedded
// fonts at package init, in every command, charts drawn or not; the charts
// need only lines, markers, rectangles and text, and the viewer renders the
// text in its own sans-serif font. Lengths are in points; the output is
// deterministic.
package svgchart

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Font sizes, and the ratio of an average sans-serif character's width to
// its size, for laying out text without font metrics.
const (
	TitleSize  = 13
	LabelSize  = 11
	TickSize   = 10
	LegendSize = 10
	charWidth  = 0.56
	CM         = 28.3465 // points
)

// TextWidth estimates the width of s at size.
func TextWidth(s string, size float64) float64 {
	return float64(len([]rune(s))) * size * charWidth
}

// Colours is how many colours the palette holds.
const Colours = 20

// palette holds distinguishable colours, assigned in order.
var palette = [Colours]string{
	"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#7f7f7f",
	"#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5", "#c7c7c7",
}

// Colour is the i-th colour of the palette.
func Colour(i int) string { return palette[i%Colours] }

// Canvas is an SVG document being written, y growing downwards.
type Canvas struct {
	b     bytes.Buffer
	W, H  float64
	clips int // clip paths defined so far, for unique ids
}

// New starts a w × h document with a white background.
func New(w, h float64) *Canvas {
	c := &Canvas{W: w, H: h}
	fmt.Fprintf(&c.b, "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%spt\" height=\"%spt\" viewBox=\"0 0 %s %s\" font-family=\"Liberation Sans, Arial, Helvetica, sans-serif\">\n",
		num(w), num(h), num(w), num(h))
	fmt.Fprintf(&c.b, "<rect width=\"%s\" height=\"%s\" fill=\"#ffffff\"/>\n", num(w), num(h))
	return c
}

// Bytes ends the document and returns it.
func (c *Canvas) Bytes() []byte {
	c.b.WriteString("</svg>\n")
	return c.b.Bytes()
}

// num writes a coordinate with at most two decimals.
func num(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

// Text draws s with its anchor (start, middle, end) at x and its baseline
// at y; rotate turns it a quarter counter-clockwise (a y-axis label).
func (c *Canvas) Text(x, y, size float64, anchor, s string, rotate bool) {
	tr := ""
	if rotate {
		tr = fmt.Sprintf(" transform=\"rotate(-90 %s %s)\"", num(x), num(y))
	}
	c.text(x, y, size, anchor, tr, s)
}

// text writes a text element with extra attributes.
func (c *Canvas) text(x, y, size float64, anchor, attrs, s string) {
	fmt.Fprintf(&c.b, "<text x=\"%s\" y=\"%s\" font-size=\"%s\" text-anchor=\"%s\"%s>%s</text>\n",
		num(x), num(y), num(size), anchor, attrs, xmlEscaper.Replace(s))
}

// Line draws a straight line.
func (c *Canvas) Line(x1, y1, x2, y2 float64, stroke string, width float64) {
	fmt.Fprintf(&c.b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"%s\" stroke-width=\"%s\"/>\n",
		num(x1), num(y1), num(x2), num(y2), stroke, num(width))
}

// Rect fills a rectangle, outlined thinly in stroke unless stroke is "".
func (c *Canvas) Rect(x, y, w, h float64, fill, stroke string) {
	fmt.Fprintf(&c.b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"", num(x), num(y), num(w), num(h), fill)
	if stroke != "" {
		fmt.Fprintf(&c.b, " stroke=\"%s\" stroke-width=\"0.5\"", stroke)
	}
	c.b.WriteString("/>\n")
}

// Polyline draws a series' line of the given width, dashed for a tail
// percentile, a fit or a frontier.
func (c *Canvas) Polyline(pts [][2]float64, stroke string, width float64, dashed bool) {
	c.b.WriteString("<polyline points=\"")
	for i, p := range pts {
		if i > 0 {
			c.b.WriteByte(' ')
		}
		c.b.WriteString(num(p[0]) + "," + num(p[1]))
	}
	fmt.Fprintf(&c.b, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" stroke-linejoin=\"round\"", stroke, num(width))
	if dashed {
		c.b.WriteString(" stroke-dasharray=\"6,3\"")
	}
	c.b.WriteString("/>\n")
}

// Shape is a marker's shape.
type Shape int

// The marker shapes; Circle is the zero value.
const (
	Circle Shape = iota
	Square
	Triangle
	Cross
	Plus
	Ring
)

// Circle and Square are filled; Triangle and Ring are outlines.

// Marker draws a point of radius r in the shape given.
func (c *Canvas) Marker(x, y, r float64, fill string, shape Shape) {
	switch shape {
	case Square:
		c.Rect(x-r, y-r, 2*r, 2*r, fill, "")
	case Triangle:
		h := r * math.Sqrt(3) / 2
		fmt.Fprintf(&c.b, "<polygon points=\"%s,%s %s,%s %s,%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\"/>\n",
			num(x), num(y-r), num(x+h), num(y+r/2), num(x-h), num(y+r/2), fill)
	case Cross:
		d := r / math.Sqrt2
		c.Line(x-d, y-d, x+d, y+d, fill, 1.2)
		c.Line(x-d, y+d, x+d, y-d, fill, 1.2)
	case Plus:
		c.Line(x-r, y, x+r, y, fill, 1.2)
		c.Line(x, y-r, x, y+r, fill, 1.2)
	case Ring:
		fmt.Fprintf(&c.b, "<circle cx=\"%s\" cy=\"%s\" r=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\"/>\n", num(x), num(y), num(r), fill)
	default:
		fmt.Fprintf(&c.b, "<circle cx=\"%s\" cy=\"%s\" r=\"%s\" fill=\"%s\"/>\n", num(x), num(y), num(r), fill)
	}
}

// Tick is a value on an axis; an empty label is a minor tick.
type Tick struct {
	V     float64
	Label string
}

// Axis is a range of values, linear or logarithmic, and its ticks.
type Axis struct {
	Label    string
	Min, Max float64
	Log      bool
	Ticks    []Tick
}

// frac is where v falls along the axis, 0 at Min and 1 at Max.
func (a *Axis) frac(v float64) float64 {
	if a.Log {
		return (math.Log(v) - math.Log(a.Min)) / (math.Log(a.Max) - math.Log(a.Min))
	}
	return (v - a.Min) / (a.Max - a.Min)
}

// PlainTicks label four to six round values (1, 2, 2.5 or 5 times a power
// of ten apart) without padded decimals, with unlabelled ticks between.
func PlainTicks(lo, hi float64) []Tick {
	if !(hi > lo) {
		return []Tick{{lo, strconv.FormatFloat(lo, 'g', 6, 64)}}
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
	var ts []Tick
	minor := step / 2
	for i := math.Ceil(lo / minor); i*minor <= hi+minor*1e-9; i++ {
		t := Tick{V: i*minor + 0} // + 0: no "-0" label
		if math.Mod(i, 2) == 0 {
			t.Label = strconv.FormatFloat(t.V, 'g', 6, 64)
		}
		ts = append(ts, t)
	}
	return ts
}

// LogTicks label the powers of ten from the one at or below lo to the one
// at or above hi (lo > 0), with unlabelled ticks at 2 to 9 times each.
func LogTicks(lo, hi float64) []Tick {
	var ts []Tick
	for e := math.Floor(math.Log10(lo)); ; e++ {
		p := math.Pow(10, e)
		ts = append(ts, Tick{V: p, Label: strconv.FormatFloat(p, 'g', -1, 64)})
		if p >= hi {
			return ts
		}
		for m := 2.0; m < 10; m++ {
			ts = append(ts, Tick{V: m * p})
		}
	}
}

// Series is one set of points: a line with markers, or markers alone.
type Series struct {
	Name    string       // in the legend; "" for none
	Pts     [][2]float64 // x, y in data units
	LinePts [][2]float64 // the line through these instead of Pts (a fit); markers stay at Pts
	Colour  string       // "" for the palette's Index-th colour
	Index   int
	Dashed  bool // a dashed line (a tail percentile, a fit)
	Mark    Shape
	NoLine  bool    // markers alone (a scatter)
	NoMarks bool    // the line alone
	Radius  float64 // the markers'; 3 if 0
	Width   float64 // the line's; 1.8 if 0
}

func (s *Series) colour() string {
	if s.Colour != "" {
		return s.Colour
	}
	return Colour(s.Index)
}

func (s *Series) radius() float64 {
	if s.Radius > 0 {
		return s.Radius
	}
	return 3
}

func (s *Series) width() float64 {
	if s.Width > 0 {
		return s.Width
	}
	return 1.8
}

// Note is a text at a point, beside it on the side given.
type Note struct {
	X, Y        float64 // data units
	Text        string
	Size        float64 // TickSize if 0
	Left, Below bool
}

// Corner is where a panel's legend goes, inside its axes.
type Corner int

// The legend's corners; TopLeft is the zero value.
const (
	TopLeft Corner = iota
	TopRight
	BottomRight
)

// Panel is one chart: a title, two axes, series with their legend and notes.
type Panel struct {
	Title    string
	X, Y     Axis
	Series   []Series
	Notes    []Note
	Legend   bool
	LegendAt Corner
}

// Area is the rectangle inside a panel's axes.
type Area struct{ X0, Y0, X1, Y1 float64 }

// PX is where x value v lies on the canvas.
func (r Area) PX(a *Axis, v float64) float64 { return r.X0 + a.frac(v)*(r.X1-r.X0) }

// PY is where y value v lies on the canvas.
func (r Area) PY(a *Axis, v float64) float64 { return r.Y1 - a.frac(v)*(r.Y1-r.Y0) }

// tickLen: labelled ticks are longer than the unlabelled ones between.
func tickLen(t Tick) float64 {
	if t.Label != "" {
		return 5
	}
	return 3
}

// Frame draws a panel's title, grid, axes and tick labels in the box at
// (x, y) of size w × h, and returns the area inside the axes.
func (c *Canvas) Frame(x, y, w, h float64, title string, xa, ya *Axis) Area {
	yTickW := 0.0
	for _, t := range ya.Ticks {
		yTickW = max(yTickW, TextWidth(t.Label, TickSize))
	}
	r := Area{X0: x + LabelSize + 8 + yTickW + 6, Y0: y + TitleSize + 10, X1: x + w - 4, Y1: y + h - LabelSize - TickSize - 14}
	c.Text((r.X0+r.X1)/2, y+TitleSize, TitleSize, "middle", title, false)
	for _, t := range ya.Ticks {
		if t.V < ya.Min || t.V > ya.Max {
			continue
		}
		py := r.PY(ya, t.V)
		if t.Label != "" {
			c.Line(r.X0, py, r.X1, py, "#e5e5e5", 0.5)
			c.Text(r.X0-5, py+TickSize*0.35, TickSize, "end", t.Label, false)
		}
		c.Line(r.X0-tickLen(t), py, r.X0, py, "#000000", 0.5)
	}
	for _, t := range xa.Ticks {
		if t.V < xa.Min || t.V > xa.Max {
			continue
		}
		px := r.PX(xa, t.V)
		if t.Label != "" {
			c.Line(px, r.Y0, px, r.Y1, "#e5e5e5", 0.5)
			c.Text(px, r.Y1+TickSize+5, TickSize, "middle", t.Label, false)
		}
		c.Line(px, r.Y1, px, r.Y1+tickLen(t), "#000000", 0.5)
	}
	c.Line(r.X0, r.Y1, r.X1, r.Y1, "#000000", 0.5)
	c.Line(r.X0, r.Y0, r.X0, r.Y1, "#000000", 0.5)
	c.Text((r.X0+r.X1)/2, y+h-4, LabelSize, "middle", xa.Label, false)
	c.Text(x+LabelSize, (r.Y0+r.Y1)/2, LabelSize, "middle", ya.Label, true)
	return r
}

// clip starts a group that clips what is drawn in it to r; end it with
// "</g>".
func (c *Canvas) clip(r Area) {
	c.clips++
	fmt.Fprintf(&c.b, "<clipPath id=\"area%d\"><rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\"/></clipPath>\n<g clip-path=\"url(#area%d)\">\n",
		c.clips, num(r.X0), num(r.Y0), num(r.X1-r.X0), num(r.Y1-r.Y0), c.clips)
}

// finite says whether a point can be drawn (a log axis has no place for 0).
func finite(p [2]float64) bool {
	return !math.IsNaN(p[0]) && !math.IsInf(p[0], 0) && !math.IsNaN(p[1]) && !math.IsInf(p[1], 0)
}

// Draw draws the panel in the box at (x, y) of size w × h: lines clipped to
// the axes, then the notes, then the markers where they fall.
func (c *Canvas) Draw(p *Panel, x, y, w, h float64) {
	r := c.Frame(x, y, w, h, p.Title, &p.X, &p.Y)
	place := func(data [][2]float64) [][2]float64 {
		var out [][2]float64
		for _, v := range data {
			if q := [2]float64{r.PX(&p.X, v[0]), r.PY(&p.Y, v[1])}; finite(q) {
				out = append(out, q)
			}
		}
		return out
	}
	for _, s := range p.Series {
		if s.NoLine {
			continue
		}
		line := s.LinePts
		if line == nil {
			line = s.Pts
		}
		c.clip(r)
		c.Polyline(place(line), s.colour(), s.width(), s.Dashed)
		c.b.WriteString("</g>\n")
	}
	for _, n := range p.Notes {
		size := n.Size
		if size == 0 {
			size = TickSize
		}
		px, py := r.PX(&p.X, n.X), r.PY(&p.Y, n.Y)
		anchor := "start"
		if px += 5; n.Left {
			anchor, px = "end", px-10
		}
		if py -= 3; n.Below {
			py += 6 + size
		}
		// A white halo keeps the note legible where it crosses a line.
		c.text(px, py, size, anchor, ` stroke="#ffffff" stroke-width="3" stroke-linejoin="round" paint-order="stroke"`, n.Text)
	}
	// Markers over the notes' halos: the data stays in sight.
	for _, s := range p.Series {
		if s.NoMarks {
			continue
		}
		for _, q := range place(s.Pts) {
			c.Marker(q[0], q[1], s.radius(), s.colour(), s.Mark)
		}
	}
	if p.Legend {
		c.legend(p, r)
	}
}

// legend lists the named series, a line and marker beside each name, in
// the panel's corner.
func (c *Canvas) legend(p *Panel, r Area) {
	const rowH = LegendSize + 5
	legendW, rows := 0.0, 0
	for _, s := range p.Series {
		if s.Name != "" {
			legendW, rows = max(legendW, 26+TextWidth(s.Name, LegendSize)), rows+1
		}
	}
	lx, ly := r.X0+8, r.Y0+LegendSize+4
	switch p.LegendAt {
	case TopRight:
		lx = r.X1 - 8 - legendW
	case BottomRight:
		lx, ly = r.X1-8-legendW, r.Y1-8-float64(rows-1)*rowH-LegendSize*0.3
	}
	for _, s := range p.Series {
		if s.Name == "" {
			continue
		}
		my := ly - LegendSize*0.35
		if !s.NoLine {
			c.Polyline([][2]float64{{lx, my}, {lx + 20, my}}, s.colour(), s.width(), s.Dashed)
		}
		if !s.NoMarks {
			c.Marker(lx+10, my, s.radius(), s.colour(), s.Mark)
		}
		c.Text(lx+26, ly, LegendSize, "start", s.Name, false)
		ly += rowH
	}
}

// Panels draws panels side by side on a w × h canvas.
func Panels(w, h float64, panels ...*Panel) []byte {
	c := New(w, h)
	pw := w / float64(len(panels))
	for i, p := range panels {
		c.Draw(p, float64(i)*pw+2, 6, pw-10, h-8)
	}
	return c.Bytes()
}
