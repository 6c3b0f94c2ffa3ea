package svgchart_test

import (
	"encoding/xml"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/svgchart"
)

func labels(ts []svgchart.Tick) []string {
	var out []string
	for _, tk := range ts {
		if tk.Label != "" {
			out = append(out, tk.Label)
		}
	}
	return out
}

func TestPlainTicks(t *testing.T) {
	for _, tt := range []struct {
		lo, hi float64
		labels []string
	}{
		{0, 1150, []string{"0", "200", "400", "600", "800", "1000"}},
		{0, 26000, []string{"0", "5000", "10000", "15000", "20000", "25000"}},
		{0, 0.9, []string{"0", "0.2", "0.4", "0.6", "0.8"}},
		{8.4, 36, []string{"10", "15", "20", "25", "30", "35"}},
		{-12, 330, []string{"0", "100", "200", "300"}}, // zero, not "-0"
	} {
		require.Equal(t, tt.labels, labels(svgchart.PlainTicks(tt.lo, tt.hi)), "%g..%g", tt.lo, tt.hi)
	}
}

// Log ticks label every power of ten from the one at or below lo to the
// one at or above hi, with the eight multiples between unlabelled.
func TestLogTicks(t *testing.T) {
	ts := svgchart.LogTicks(0.003, 250)
	require.Equal(t, []string{"0.001", "0.01", "0.1", "1", "10", "100", "1000"}, labels(ts))
	require.Len(t, ts, 7+6*8)
	for i, tk := range ts {
		exp := math.Floor(math.Log10(tk.V) + 1e-9)
		mult := tk.V / math.Pow(10, exp)
		require.InDelta(t, math.Round(mult), mult, 1e-9, "tick %d at %g is a whole multiple of a power of ten", i, tk.V)
		require.Equal(t, math.Round(mult) == 1, tk.Label != "", "only powers of ten are labelled (%g)", tk.V)
		if i > 0 {
			require.Greater(t, tk.V, ts[i-1].V)
		}
	}
}

// element is one drawn SVG element: its name, attributes and text.
type element struct {
	name  string
	attrs map[string]string
	text  string
}

// parse reads an SVG document, failing on anything that is not XML.
func parse(t *testing.T, doc []byte) []element {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(string(doc)))
	var out []element
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		switch e := tok.(type) {
		case xml.StartElement:
			el := element{name: e.Name.Local, attrs: map[string]string{}}
			for _, a := range e.Attr {
				el.attrs[a.Name.Local] = a.Value
			}
			out = append(out, el)
			inText = el.name == "text"
		case xml.CharData:
			if inText {
				out[len(out)-1].text += string(e)
			}
		case xml.EndElement:
			inText = false
		}
	}
}

func attr(t *testing.T, e element, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(e.attrs[name], 64)
	require.NoError(t, err, "%s=%q", name, e.attrs[name])
	return v
}

// Points land where their data puts them: on a log x axis 1, 10 and 100
// are evenly spaced and the axis' ends are the area's edges; on a linear y
// axis 0, 5 and 10 are too, growing upwards.
func TestPointPlacement(t *testing.T) {
	p := &svgchart.Panel{
		X: svgchart.Axis{Min: 1, Max: 100, Log: true, Ticks: svgchart.LogTicks(1, 100)},
		Y: svgchart.Axis{Min: 0, Max: 10, Ticks: svgchart.PlainTicks(0, 10)},
		Series: []svgchart.Series{
			{Pts: [][2]float64{{1, 0}, {10, 5}, {100, 10}}, NoLine: true, Colour: "#123456"},
			// 0 has no place on a log axis: skipped, not drawn at -Inf.
			{Pts: [][2]float64{{0, 5}}, NoLine: true, Colour: "#654321"},
		},
	}
	doc := svgchart.Panels(400, 300, p)
	require.NotContains(t, string(doc), "Inf")
	require.NotContains(t, string(doc), "NaN")
	var cx, cy []float64
	var axisX, axisY float64 // the y axis' x, the x axis' y
	for _, e := range parse(t, doc) {
		switch {
		case e.name == "circle":
			require.Equal(t, "#123456", e.attrs["fill"])
			cx, cy = append(cx, attr(t, e, "cx")), append(cy, attr(t, e, "cy"))
		case e.name == "line" && e.attrs["stroke"] == "#000000" && e.attrs["x1"] == e.attrs["x2"] && attr(t, e, "y2")-attr(t, e, "y1") > 100:
			axisX = attr(t, e, "x1")
		case e.name == "line" && e.attrs["stroke"] == "#000000" && e.attrs["y1"] == e.attrs["y2"] && attr(t, e, "x2")-attr(t, e, "x1") > 100:
			axisY = attr(t, e, "y1")
		}
	}
	require.Len(t, cx, 3)
	require.InDelta(t, cx[1]-cx[0], cx[2]-cx[1], 0.02)
	require.InDelta(t, cy[0]-cy[1], cy[1]-cy[2], 0.02)
	require.Greater(t, cy[0], cy[2], "larger values are higher up")
	require.InDelta(t, axisX, cx[0], 0.01, "x = Min lies on the y axis")
	require.InDelta(t, axisY, cy[0], 0.01, "y = Min lies on the x axis")
}

// A panel is well-formed SVG with its title, axis labels, tick labels,
// legend entries and notes as text, escaped.
func TestPanelTexts(t *testing.T) {
	p := &svgchart.Panel{
		Title: `A & B "quoted"`, Legend: true,
		X:      svgchart.Axis{Label: "x <unit>", Min: 1, Max: 100, Log: true, Ticks: svgchart.LogTicks(1, 100)},
		Y:      svgchart.Axis{Label: "y", Max: 10, Ticks: svgchart.PlainTicks(0, 10)},
		Series: []svgchart.Series{{Name: "line", Pts: [][2]float64{{1, 1}, {10, 5}, {100, 9}}}, {Name: "scatter", Pts: [][2]float64{{2, 2}}, NoLine: true, Index: 1, Mark: svgchart.Triangle}},
		Notes:  []svgchart.Note{{X: 2, Y: 2, Text: "p@2 <b>", Left: true}},
	}
	doc := svgchart.Panels(400, 300, p)
	require.Contains(t, string(doc), "A &amp; B &quot;quoted&quot;")
	require.Contains(t, string(doc), "x &lt;unit&gt;")
	var texts []string
	for _, e := range parse(t, doc) {
		if e.name == "text" {
			texts = append(texts, e.text)
		}
	}
	for _, want := range []string{`A & B "quoted"`, "x <unit>", "y", "1", "10", "100", "line", "scatter", "p@2 <b>"} {
		require.Contains(t, texts, want)
	}
}

// The legend goes in the corner asked for: its first entry's text starts
// in the left or right half of the panel, in the top or bottom half.
func TestLegendCorner(t *testing.T) {
	for _, tt := range []struct {
		at          svgchart.Corner
		right, down bool
	}{{svgchart.TopLeft, false, false}, {svgchart.TopRight, true, false}, {svgchart.BottomRight, true, true}} {
		p := &svgchart.Panel{Legend: true, LegendAt: tt.at,
			X:      svgchart.Axis{Max: 1, Ticks: svgchart.PlainTicks(0, 1)},
			Y:      svgchart.Axis{Max: 1, Ticks: svgchart.PlainTicks(0, 1)},
			Series: []svgchart.Series{{Name: "entry", Pts: [][2]float64{{0.5, 0.5}}}},
		}
		found := false
		for _, e := range parse(t, svgchart.Panels(400, 300, p)) {
			if e.name == "text" && e.text == "entry" {
				found = true
				require.Equal(t, tt.right, attr(t, e, "x") > 200, "corner %d: x", tt.at)
				require.Equal(t, tt.down, attr(t, e, "y") > 150, "corner %d: y", tt.at)
			}
		}
		require.True(t, found, "corner %d: the legend is drawn", tt.at)
	}
}
