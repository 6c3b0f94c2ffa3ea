package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/profile-model/profile-model/internal/results"
)

// Limits for what limits the highest level (see the package documentation).
const (
	prefillLimitPct = 25 // prefill steps take this much of a token's time
	gapLimitPct     = 30 // gaps between kernels take this much of a decode step
)

// observations are the key observations, each generated from the numbers.
func (v *view) observations() []string {
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
		}
	}
	// The abnormal first: a capped batch, saturation, lost events and
	// structural kernel changes are what an engineer acts on; cosmetic
	// kernel instances last.
	add(v.throttling())
	add(v.batchCap())
	add(v.saturation())
	add(v.lostEvents())
	add(v.structuralChanges())
	add(v.dominantCategory())
	add(v.throughputScaling())
	add(v.limit())
	add(v.mostToGain())
	add(v.kernelChanges())
	add(v.launchBound())
	add(v.fastestGrowing())
	add(v.closes())
	add(v.instanceChanges())
	return out
}

// levelsList joins per-level figures: "34.6% at conc 4, 41.2% at conc 8".
func (v *view) levelsList(f func(i int) (string, bool)) string {
	var parts []string
	for i := range v.lv {
		if s, ok := f(i); ok {
			parts = append(parts, s+" at "+v.names[i])
		}
	}
	return strings.Join(parts, ", ")
}

func (v *view) dominantCategory() string {
	if len(v.cats) == 0 {
		return ""
	}
	top := make([]string, len(v.lv))
	for i := range v.lv {
		best := -1.0
		for _, c := range v.cats {
			if s := val(c.Share, i); s > best {
				best, top[i] = s, c.Category
			}
		}
	}
	share := func(cat string) func(i int) (string, bool) {
		return func(i int) (string, bool) {
			for _, c := range v.cats {
				if c.Category == cat && !math.IsNaN(c.Share[i]) {
					return pctS(c.Share[i]), true
				}
			}
			return "", false
		}
	}
	if uniq := slices.Compact(slices.Clone(top)); len(uniq) == 1 {
		c := top[0]
		first, last := val(v.catShare(c), 0), val(v.catShare(c), len(v.lv)-1)
		move := "holds steady"
		switch {
		case len(v.lv) < 2:
			move = ""
		case last-first > 2:
			move = "grows with concurrency"
		case first-last > 2:
			move = "shrinks with concurrency"
		}
		s := fmt.Sprintf("**%s dominates the decode step's kernel time**", c)
		if move != "" {
			s += " and its share " + move
		}
		return s + ": " + v.levelsList(share(c)) + "."
	}
	var parts []string
	for i, c := range top {
		parts = append(parts, fmt.Sprintf("%s at %s (%s)", c, v.names[i], pctS(val(v.catShare(c), i))))
	}
	return "**The largest category of the decode step changes with concurrency**: " + strings.Join(parts, ", ") + "."
}

func (v *view) catShare(cat string) []float64 {
	for _, c := range v.cats {
		if c.Category == cat {
			return c.Share
		}
	}
	return nil
}

func (v *view) throughputScaling() string {
	// Not an interrupted level, nor one that measured nothing: its part
	// of the load (0 tok/s) is not a fall.
	ls := slices.DeleteFunc(v.levelsWithRows(), func(l *level) bool {
		return l.Row.OutTokS <= 0 || l.Result != nil && l.Result.Status == results.StatusInterrupted
	})
	if len(ls) < 2 {
		return ""
	}
	a, b := ls[0], ls[len(ls)-1]
	if a.Row.OutTokS <= 0 || a.Row.TPOTP50MS <= 0 {
		return ""
	}
	moves := func(r float64) string {
		if r < 1 {
			return "falls to"
		}
		return "rises"
	}
	return fmt.Sprintf("**From conc %d to conc %d** (%s× the concurrency) output throughput %s %s× (%s → %s tok/s) while median TPOT %s %s× (%s → %s ms) and median TTFT %s× (%s → %s ms).",
		a.Conc, b.Conc, f1(float64(b.Conc)/float64(a.Conc)),
		moves(b.Row.OutTokS/a.Row.OutTokS), f2(b.Row.OutTokS/a.Row.OutTokS), f1(a.Row.OutTokS), f1(b.Row.OutTokS),
		moves(b.Row.TPOTP50MS/a.Row.TPOTP50MS), f2(b.Row.TPOTP50MS/a.Row.TPOTP50MS), f2(a.Row.TPOTP50MS), f2(b.Row.TPOTP50MS),
		f2(safeRatio(b.Row.TTFTP50MS, a.Row.TTFTP50MS)), f2(a.Row.TTFTP50MS), f2(b.Row.TTFTP50MS))
}

func safeRatio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// limit says where a token's time goes at the highest analysed level and
// what limits it.
func (v *view) limit() string {
	var l *level
	li := -1
	for i := len(v.lv) - 1; i >= 0; i-- {
		if v.lv[i].File.StepTime.Timed > 0 {
			l, li = v.lv[i], i
			break
		}
	}
	if l == nil {
		return ""
	}
	st := l.File.StepTime
	tok := st.TokenUS
	ms := func(us float64) string { return f2(us / 1000) }
	s := fmt.Sprintf("**At %s (the highest level) a token takes %s ms** in the trace: GPU-busy %s ms (%s), gaps between kernels %s ms (%s), prefill steps %s ms (%s)",
		l.name(), ms(tok), ms(st.BusyUS), pctS(100*st.BusyUS/tok), ms(st.GapUS), pctS(100*st.GapUS/tok),
		ms(st.PrefillPerTokenUS), pctS(100*st.PrefillPerTokenUS/tok))
	if st.OtherPerTokenUS > 0 {
		s += fmt.Sprintf(", other steps %s ms (%s)", ms(st.OtherPerTokenUS), pctS(100*st.OtherPerTokenUS/tok))
	}
	s += ". "
	if w := limitWord(st.BusyUS, st.GapUS, st.PrefillPerTokenUS, st.StepUS); w != "" {
		s += w
	} else {
		s += "The GPU's work limits it"
		var top *catRow
		for _, c := range v.cats {
			if top == nil || val(c.Share, li) > val(top.Share, li) {
				top = c
			}
		}
		if top != nil {
			s += fmt.Sprintf(", led by %s (%s of the step's kernel time", top.Category, pctS(val(top.Share, li)))
			if top.StepFit.N >= 2 {
				s += fmt.Sprintf(", %s µs more per step for each added sequence", f1(top.StepFit.Slope))
			}
			s += ")"
		}
		s += "."
		if p := 100 * st.PrefillPerTokenUS / tok; p >= prefillLimitPct {
			s += fmt.Sprintf(" Prefill steps add %s of a token's time on top: second to the GPU's decode work, not the limit.", pctS(p))
		}
	}
	return s
}

// kernelChanges says that the layer's kernels hold across levels; their
// changes are the structural and instance observations.
func (v *view) kernelChanges() string {
	if len(v.changes) == 0 && len(v.lv) > 1 && len(v.rows) > 0 {
		return "**The same kernels run at every level**: no kernel of the decode layer switches or fuses between levels."
	}
	return ""
}

// launchBound counts the positions that are short and flat at every level.
func (v *view) launchBound() string {
	if len(v.lv) < 2 || len(v.rows) == 0 {
		return ""
	}
	n, sum, layer := 0, 0.0, 0.0
	last := len(v.lv) - 1
	for _, r := range v.rows {
		if c := r.Cells[last]; c != nil {
			layer += c.AvgUS
		}
		if r.Trend != "flat" {
			continue
		}
		short := true
		for _, c := range r.Cells {
			if c != nil && c.AvgUS > launchMaxUS {
				short = false
			}
		}
		if short {
			n++
			if c := r.Cells[last]; c != nil {
				sum += c.AvgUS
			}
		}
	}
	if n == 0 || layer == 0 {
		return ""
	}
	return fmt.Sprintf("**%d of %d positions per layer stay launch-bound**: each runs at most %s µs and is flat across levels; together %s µs of the layer's %s µs at %s (%s) that more batch does not amortise away.",
		n, len(v.rows), f1(launchMaxUS), f1(sum), f1(layer), v.names[last], pctS(100*sum/layer))
}

func (v *view) fastestGrowing() string {
	var best *row
	for _, r := range v.rows {
		if r.Fit.N >= 2 && r.Fit.Slope > 0 && (best == nil || r.Fit.Slope > best.Fit.Slope) {
			best = r
		}
	}
	if best == nil {
		return ""
	}
	s := fmt.Sprintf("**%s (pos %d) grows fastest with batch**: %s µs per added sequence per layer", code(best.Label), best.Pos, f2(best.Fit.Slope))
	if best.Fit.N >= 3 {
		s += fmt.Sprintf(" (R² %s)", f2(best.Fit.R2))
	}
	return s + ", " + best.Trend + "."
}

func (v *view) closes() string {
	var worst *level
	worstPct := 0.0
	n := 0
	for _, l := range v.lv {
		tp, _ := v.closure(l)
		if math.IsNaN(tp) {
			continue
		}
		n++
		if worst == nil || math.Abs(tp) > math.Abs(worstPct) {
			worst, worstPct = l, tp
		}
	}
	if n == 0 {
		return ""
	}
	if math.Abs(worstPct) <= closeTolPct {
		return fmt.Sprintf("**The trace accounts for the client's TPOT** within %s at every level (largest difference %s at %s): decode steps, prefill steps and gaps explain the latency.",
			pctS(closeTolPct), signedPct(worstPct), worst.name())
	}
	if worstPct > 0 {
		return fmt.Sprintf("**The client's TPOT exceeds what the trace accounts for** by %s at %s: time outside the GPU timeline (client, streaming, host stalls, or a simulated engine behind its clock); see the step-time reconciliation.",
			pctS(worstPct), worst.name())
	}
	return fmt.Sprintf("**The client's TPOT is below the trace's time per token** by %s at %s: the trace's window holds steps the client's requests did not wait for (warm-up, drain); see the step-time reconciliation.",
		pctS(-worstPct), worst.name())
}
