package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/profile-model/profile-model/inventory/analysis"
)

// waterfallSection writes "Why TPOT moves": the change of TPOT from each
// level to the next split into workload (batch, padding, prefill),
// kernels at matched batch, communication, host gaps and what lies
// outside the trace (analysis.Waterfall), and what graph padding costs.
func (v *view) waterfallSection(b *md) {
	var lv []*level
	var files []*analysis.LevelFile
	for _, l := range v.lv {
		if l.File.StepTime.Timed > 0 {
			lv = append(lv, l)
			files = append(files, l.File)
		}
	}
	if len(lv) < 2 {
		return
	}
	b.p("## Why TPOT moves\n\n")
	slope, ok := analysis.BatchSlope(files)
	if !ok {
		slope = math.NaN()
	}
	head := []string{"part of the TPOT change (ms/token)"}
	var ws []analysis.Waterfall
	for i := 1; i < len(lv); i++ {
		a, c := lv[i-1], lv[i]
		ws = append(ws, analysis.NewWaterfall(v.waterfallSide(a), v.waterfallSide(c), slope))
		head = append(head, a.name()+" → "+c.name())
	}
	var rows [][]string
	for ti, t := range ws[0].Terms {
		r := []string{t.Name}
		for _, w := range ws {
			r = append(r, signed3(w.Terms[ti].US/1000))
		}
		rows = append(rows, r)
	}
	total := []string{"**TPOT change**"}
	for _, w := range ws {
		total = append(total, "**"+signed3(w.DeltaUS/1000)+"**")
	}
	rows = append(rows, total)
	b.WriteString("From each level to the next, the change of the time per output token split into what the workload (decode batch, graph padding, prefill steps), " +
		"the kernels at a matched batch, communication, the host (gaps between kernels) and what lies outside the trace (client, streaming) each add. ")
	if ok {
		b.p("A change of batch is priced at %s µs of GPU time per decode step per added sequence: the least-squares fit of GPU-busy per step against the padded batch over these levels. ", f1(slope))
	} else {
		b.p("No batch model (the levels ran one batch): the batch's part stays in the kernel term. ")
	}
	b.p("The terms sum to the change. Within one run the kernels are the same at every level, so the kernel term is how far the steps depart from that linear batch model " +
		"(a MoE layer activates more experts as the batch grows, attention reads more context).\n\n")
	b.table(head, "l"+strings.Repeat("r", len(ws)), rows)
	for i, w := range ws {
		b.p("* %s → %s: %s.\n", lv[i].name(), lv[i+1].name(), w.Lead())
	}
	b.p("\n")
	if ok {
		v.paddingCost(b, lv, slope)
	}
}

// waterfallSide is a level with its client TPOT on the trace's clock.
func (v *view) waterfallSide(l *level) analysis.Side {
	t, _ := v.tpot(l)
	return analysis.Side{Name: l.name(), TPOTMS: t, File: l.File}
}

// paddingCost prices the padding of replayed decode graphs per token at
// each padded level, and gives the capture sizes its batches call for.
func (v *view) paddingCost(b *md, lv []*level, slope float64) {
	var lines []string
	for _, l := range lv {
		bt, ok := analysis.BatchOf(l.File)
		if !ok || bt.Padded <= bt.Real {
			continue
		}
		st := l.File.StepTime
		waste := slope * (bt.Padded - bt.Real)
		line := fmt.Sprintf("%s: %s padded rows per decode step (%s of the graph rows) cost about %s ms per token (%s of the decode step)",
			l.name(), f1(bt.Padded-bt.Real), pctS(l.File.Summary.PaddingPct), f3(waste/1000), pctS(100*waste/st.StepUS))
		if sizes := analysis.CaptureSizesFor(l.File.Summary.DecodeBSHist, v.r.info.Engine.CaptureSizes); sizes != "" {
			line += fmt.Sprintf("; capture sizes that cover its batches: `--cudagraph-capture-sizes \"%s\"`", sizes)
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return
	}
	b.p("**Graph padding.** A decode step replays the smallest captured graph that holds its batch; the rows beyond the batch are computed and thrown away. " +
		"Priced at the same µs per added sequence:\n\n")
	for _, s := range lines {
		b.p("* %s.\n", s)
	}
	b.p("\n")
}

func f3(v float64) string { return fmt.Sprintf("%.3f", v) }

func signed3(v float64) string {
	s := fmt.Sprintf("%+.3f", v)
	if s == "-0.000" {
		s = "+0.000"
	}
	return s
}
