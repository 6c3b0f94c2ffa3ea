package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/internal/svgchart"
	"github.com/profile-model/profile-model/inventory/roofline"
)

// RooflineChart is the roofline chart's file name.
const RooflineChart = "roofline.svg"

// rooflines computes each analysed level's roofline from the model config
// and the run's settings (so a report rebuilt with another config or peaks
// file has it too); the context comes from the run's own computation when
// analysis.json holds one (the decode labels' ctx=). The note says why
// there is none.
func (v *view) rooflines() ([]*roofline.Table, string) {
	out := make([]*roofline.Table, len(v.lv))
	note := ""
	isl, osl := v.lengths()
	for i, l := range v.lv {
		rl := roofline.Level{Arch: v.r.arch, Device: l.File.Summary.Device, BS: roofline.MeanBatch(l.File.Summary.DecodeBSHist), TP: max(v.r.info.Engine.TP, 1),
			KVCache: v.r.info.Engine.KVCacheDType, Context: float64(isl) + float64(osl)/2, Peaks: v.r.peaks}
		if t := l.decode(); t != nil {
			rl.Decode = &t.LayerTable
		}
		if f := l.File.Roofline; f != nil && f.Step.Context > 0 {
			rl.Context = f.Step.Context
		}
		out[i], note = roofline.Build(rl)
		if out[i] == nil && l.File.RooflineNote != "" {
			note = l.File.RooflineNote
		}
	}
	return out, note
}

// whyNoRoofline says why no level has a roofline, never "".
func (v *view) whyNoRoofline() string {
	switch {
	case v.roofNote != "":
		return v.roofNote
	case len(v.lv) == 0:
		return "no level has a trace analysis (levels/conc{N}/analysis.json); if the run was interrupted before, `profile-model report RUN_DIR --reanalyse` analyses the traces on disk"
	}
	var refused []string
	for _, t := range v.roofs {
		if t != nil {
			refused = append(refused, t.Refused...)
		}
	}
	if len(refused) > 0 {
		return "every position's figures were left out as impossible: " + joinCode(refused)
	}
	return "no position of the analysed levels has its work modelled (their roles are not known)"
}

func (v *view) hasRoofline() bool {
	return slices.ContainsFunc(v.roofs, func(t *roofline.Table) bool { return t != nil && len(t.Points) > 0 })
}

// rooflineSection is the positions against the GPU's roof: the highest
// level in full, every level's % of roofline per position.
func (v *view) rooflineSection(b *md) {
	b.p("## Roofline per position\n\n")
	if !v.hasRoofline() {
		b.p("Not computed: %s.\n\n", v.whyNoRoofline())
		return
	}
	li := len(v.roofs) - 1
	for li > 0 && (v.roofs[li] == nil || len(v.roofs[li].Points) == 0) {
		li--
	}
	t := v.roofs[li]
	g := t.GPU
	b.p("How far each position of the decode layer is from what the GPU can do. The work of each role per decode step (FLOPs and bytes) comes from the model config, "+
		"the decode batch (the mean over the level's decode steps: %s), the context (%s tokens on average) and the dtypes (weights %s, KV cache %s); MoE positions count the experts the step's tokens touch under uniform routing. "+
		"Peaks of the %s (%s: %s): %s TFLOP/s dense %s matrix, %s TFLOP/s vector, %s TB/s HBM. "+
		"%% of roofline is the time the position would take at the peak (its FLOPs at the compute peak or its bytes at the bandwidth, whichever is longer) over its measured time; "+
		"bytes assume no cache reuse, so they are a lower bound (docs/roofline.md gives every formula).\n\n",
		f1(t.Step.Tokens), f1(t.Step.Context), t.Step.Weights, t.Step.KVCache, g.GPU, g.Kind, esc(g.Source), f1(g.Matrix(t.Step.Weights)), t.Step.Weights, f1(g.Vector), f2(g.HBM))
	b.p("At %s:\n\n", v.names[li])
	pointTable(b, t)
	if len(t.Missing) > 0 {
		b.p("Not modelled (no FLOP or byte count for the role): %s.\n\n", joinCode(t.Missing))
	}
	if len(t.Refused) > 0 {
		b.p("Left out as impossible: %s.\n\n", joinCode(t.Refused))
	}
	var over []string
	for _, p := range t.Points {
		if p.PctRoof > 100 {
			over = append(over, code(esc(p.Label)))
		}
	}
	if len(over) > 0 {
		b.p("Above 100%% (%s): the position moved less than the model of its work assumes — for MoE GEMMs, the tokens touched fewer distinct experts than uniform routing predicts (skewed routing, or steps with fewer tokens than the mean); "+
			"for attention, shorter contexts than assumed. Read them as at the roof.\n\n", strings.Join(over, ", "))
	}
	if len(v.lv) > 1 {
		head := append([]string{"position"}, v.names...)
		var rows [][]string
		byLabel := map[string][]string{}
		var order []string
		for i, tt := range v.roofs {
			if tt == nil {
				continue
			}
			for _, p := range tt.Points {
				if byLabel[p.Label] == nil {
					byLabel[p.Label] = make([]string, len(v.lv))
					for j := range byLabel[p.Label] {
						byLabel[p.Label][j] = dash
					}
					order = append(order, p.Label)
				}
				byLabel[p.Label][i] = f1(p.PctRoof) + "%"
			}
		}
		for _, l := range order {
			rows = append(rows, append([]string{code(esc(l))}, byLabel[l]...))
		}
		b.p("%% of roofline per level:\n\n")
		b.table(head, "l"+strings.Repeat("r", len(v.lv)), rows)
	}
	b.p("![Roofline](%s)\n\n", RooflineChart)
	if pt, name := v.prefillRoofline(); pt != nil {
		ctx := "the prompt alone"
		if pt.Step.Context > 0 {
			ctx = f1(pt.Step.Context) + " tokens after the step"
		}
		b.p("Prefill steps at %s: %s prompt tokens of %s sequences per step on average (context: %s); the GEMMs run all the step's tokens, "+
			"attention is causal over each sequence (docs/roofline.md):\n\n", name, f1(pt.Step.Tokens), f1(pt.Step.Seqs), ctx)
		pointTable(b, pt)
		if len(pt.Missing) > 0 {
			b.p("Not modelled: %s.\n\n", joinCode(pt.Missing))
		}
	}
}

// pointTable is a roofline's positions, one row each.
func pointTable(b *md, t *roofline.Table) {
	var rows [][]string
	for _, p := range t.Points {
		rows = append(rows, []string{strconv.Itoa(p.Pos), code(esc(p.Label)), f1(p.TimeUS), f2(p.TFLOPS), f2(p.TBS), f1(p.Intensity), f1(p.PctRoof) + "%", p.Bound, f1(p.GainUS)})
	}
	b.table([]string{"pos", "position", "time (µs)", "TFLOP/s", "TB/s", "FLOP/byte", "% of roofline", "bound", "µs to gain"}, "rlrrrrrlr", rows)
}

// prefillRoofline is the prefill roofline of the highest level whose run
// recorded one, recomputed with the report's model config and peaks from
// the prefill step the run read off the trace (tokens, sequences,
// context); nil when no level has one.
func (v *view) prefillRoofline() (*roofline.Table, string) {
	for i := len(v.lv) - 1; i >= 0; i-- {
		f := v.lv[i].File
		if f == nil || f.PrefillRoofline == nil || f.Prefill == nil {
			continue
		}
		s := f.PrefillRoofline.Step
		t, _ := roofline.BuildPrefill(roofline.Level{Arch: v.r.arch, Device: f.Summary.Device, TP: max(v.r.info.Engine.TP, 1),
			KVCache: v.r.info.Engine.KVCacheDType, Peaks: v.r.peaks, Prefill: &f.Prefill.LayerTable,
			PrefillTokens: s.Tokens, PrefillSeqs: s.Seqs, PrefillContext: s.Context})
		if t != nil && len(t.Points) > 0 {
			return t, v.names[i]
		}
	}
	return nil, ""
}

func joinCode(s []string) string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = code(esc(x))
	}
	return strings.Join(out, ", ")
}

// mostToGain is the key observation naming the position with the most
// time to gain at the highest level with a roofline.
func (v *view) mostToGain() string {
	for li := len(v.roofs) - 1; li >= 0; li-- {
		t := v.roofs[li]
		best, ok := t.MostToGain()
		if !ok {
			continue
		}
		layers := 0
		if d := v.lv[li].decode(); d != nil {
			layers = d.Layers
		}
		s := fmt.Sprintf("**%s has the most time to gain at %s**: %s µs per layer at %s of the roofline (%s-bound: %s TB/s of %s, %s TFLOP/s); at the roof it would take %s µs, %s µs less per layer",
			code(esc(best.Label)), v.names[li], f1(best.TimeUS), pctS(best.PctRoof), best.Bound, f2(best.TBS), f2(t.GPU.HBM), f1(best.TFLOPS),
			f1(best.TimeUS-best.GainUS), f1(best.GainUS))
		if layers > 0 {
			s += fmt.Sprintf(" (%s ms per decode step over %d layers)", f2(best.GainUS*float64(layers)/1000), layers)
		}
		return s + "."
	}
	return ""
}

// rooflineChart: achieved TFLOP/s against arithmetic intensity, log–log,
// under the GPU's roofs; a point per position and level.
func (v *view) rooflineChart() ([]byte, error) {
	var g *roofline.Table
	for _, t := range v.roofs {
		if t != nil && len(t.Points) > 0 {
			g = t
		}
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	ylo := math.Inf(1)
	for _, t := range v.roofs {
		if t == nil {
			continue
		}
		for _, pt := range t.Points {
			if pt.Intensity > 0 && pt.TFLOPS > 0 {
				lo, hi = min(lo, pt.Intensity), max(hi, pt.Intensity)
				ylo = min(ylo, pt.TFLOPS)
			}
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi, ylo = 0.1, 1000, 0.01
	}
	matrix := g.GPU.Matrix(g.Step.Weights)
	lo, hi = lo/3, max(hi*3, 3*matrix/g.GPU.HBM)
	p := &svgchart.Panel{
		Title: "Roofline: " + g.GPU.GPU,
		X:     svgchart.Axis{Label: "arithmetic intensity (FLOP/byte) — log axis", Min: lo, Max: hi, Log: true, Ticks: svgchart.LogTicks(lo, hi)},
		Y:     svgchart.Axis{Label: "achieved TFLOP/s — log axis", Min: max(ylo/3, 1e-4), Max: matrix * 3, Log: true},
		// Bottom right: under the roof's compute plateau, where no
		// position of a decode layer lies.
		Legend: true, LegendAt: svgchart.BottomRight,
	}
	p.Y.Ticks = svgchart.LogTicks(p.Y.Min, p.Y.Max)
	roof := func(peak float64, name string, i int, dashed bool) {
		var xys [][2]float64
		for k := 0; k <= 64; k++ {
			x := lo * math.Pow(hi/lo, float64(k)/64)
			xys = append(xys, [2]float64{x, min(peak, g.GPU.HBM*x)})
		}
		p.Series = append(p.Series, svgchart.Series{Name: name, Pts: xys, Index: i, Dashed: dashed, NoMarks: true, Width: 1.5})
	}
	roof(matrix, fmt.Sprintf("roof: %s TB/s, %s TFLOP/s %s matrix", f2(g.GPU.HBM), f1(matrix), g.Step.Weights), 9, false)
	if g.GPU.Vector > 0 {
		roof(g.GPU.Vector, fmt.Sprintf("roof: %s TFLOP/s vector", f1(g.GPU.Vector)), 7, true)
	}
	shapes := []svgchart.Shape{svgchart.Circle, svgchart.Square, svgchart.Triangle, svgchart.Cross, svgchart.Plus, svgchart.Ring}
	for i, t := range v.roofs {
		if t == nil {
			continue
		}
		var xys [][2]float64
		for _, pt := range t.Points {
			if pt.Intensity > 0 && pt.TFLOPS > 0 {
				xys = append(xys, [2]float64{pt.Intensity, pt.TFLOPS})
			}
		}
		if len(xys) == 0 {
			continue
		}
		p.Series = append(p.Series, svgchart.Series{Name: fmt.Sprintf("%s (bs %d)", v.names[i], v.lv[i].BS()), Pts: xys, Index: i,
			NoLine: true, Mark: shapes[i%len(shapes)], Radius: 3.5})
	}
	return svgchart.Panels(20*cm, 14*cm, p), nil
}

// memoryLine sets the GPU's memory against the weights and the KV cache of
// the top level's sequences at full length (ISL + OSL), "" when the model
// config or the GPU's capacity is unknown.
func (v *view) memoryLine() string {
	a := v.r.arch
	gpu, _ := v.gpu()
	if a == nil || a.Params == 0 || gpu == "" || len(v.r.levels) == 0 {
		return ""
	}
	peaks := v.r.peaks
	if peaks == nil {
		peaks = roofline.DefaultPeaks()
	}
	p, ok := peaks.Find(gpu)
	if !ok || p.MemGB == 0 {
		return ""
	}
	isl, osl := v.lengths()
	seqs := v.r.levels[len(v.r.levels)-1].Conc
	if c := v.r.info.Engine.MaxNumSeqs; c > 0 {
		seqs = min(seqs, c)
	}
	kv := v.r.info.Engine.KVCacheDType
	if kv == "" || kv == "auto" {
		kv = "bf16"
		for _, t := range v.roofs {
			if t != nil {
				kv = t.Step.KVCache
			}
		}
	}
	e := v.r.info.Engine
	m := roofline.MemoryOf(a, e.TP, kv, float64(seqs), float64(isl+osl))
	total := m.WeightsGB + m.KVGB
	return fmt.Sprintf("weights %s GB (%s) + KV cache %s GB (%d sequences × %d tokens, %s) = %s GB of the %s's %s GB (%s), per rank",
		f1(m.WeightsGB), roofline.WeightType(a), f2(m.KVGB), seqs, isl+osl, kv, f1(total), p.GPU, f1(p.MemGB), pctS(100*total/p.MemGB))
}
