package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// CommCategory is the category whose decode time the waterfall counts as
// communication.
const CommCategory = "All-reduce / collectives"

// Side is one side of a TPOT comparison: a level's analysis and the
// client's TPOT on the trace's clock (NaN when unknown).
type Side struct {
	Name   string
	TPOTMS float64
	File   *LevelFile
}

// Batch is what a level's decode steps ran: the real and the padded
// (graph) batch, each averaged over decode tokens (a step of batch b
// yields b tokens, so a step's time weighs b times), as the step times
// of StepTime are.
type Batch struct {
	Real, Padded float64
}

// BatchOf reads the decode batch of a level from its step labels (the
// batch histogram and the padding share). ok is false without labels.
func BatchOf(f *LevelFile) (b Batch, ok bool) {
	var n, sq float64
	for k, c := range f.Summary.DecodeBSHist {
		bs, err := strconv.Atoi(k)
		if err != nil || bs <= 0 {
			continue
		}
		n += float64(bs * c)
		sq += float64(bs * bs * c)
	}
	if n == 0 {
		return Batch{}, false
	}
	b.Real = sq / n
	b.Padded = b.Real
	if p := f.Summary.PaddingPct; p > 0 && p < 100 {
		b.Padded = b.Real / (1 - p/100)
	}
	return b, true
}

// BatchSlope fits the GPU-busy time of a decode step against the padded
// batch it ran (what the kernels computed) over a run's levels by least
// squares: µs per added sequence. ok is false with fewer than two levels
// of different batches.
func BatchSlope(files []*LevelFile) (slopeUS float64, ok bool) {
	var xs, ys []float64
	for _, f := range files {
		b, has := BatchOf(f)
		if !has || f.StepTime.Timed == 0 {
			continue
		}
		xs = append(xs, b.Padded)
		ys = append(ys, f.StepTime.BusyUS)
	}
	if len(xs) < 2 {
		return 0, false
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(ys))
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return 0, false
	}
	return sxy / sxx, true
}

// Term is one part of a TPOT change, in µs per token.
type Term struct {
	Name   string  `json:"name"`
	US     float64 `json:"us"`
	Detail string  `json:"detail,omitempty"`
	// Explained is false for what the trace cannot attribute (the time
	// outside it).
	Explained bool `json:"explained"`
}

// Waterfall splits the change of the time per output token between two
// levels into what the workload, the kernels, the host and communication
// each add. The terms sum to Delta.
type Waterfall struct {
	A, B string
	// Delta is the change of TPOT, µs per token: the client's when both
	// sides have it, else the trace's time per token.
	DeltaUS float64 `json:"delta_us"`
	Terms   []Term  `json:"terms"`
	// ExplainedPct is the share of |Delta| the explained terms account
	// for, in percent (100 when they make up all of it).
	ExplainedPct float64 `json:"explained_pct"`
	// SlopeUS is the µs per added sequence the batch terms are priced
	// with; NaN when no batch model was available (then the batch's part
	// stays inside the kernel term, as a note says).
	SlopeUS float64  `json:"slope_us"`
	Notes   []string `json:"notes,omitempty"`
}

// NewWaterfall compares two levels. slopeUS prices a change of batch (the
// GPU-busy µs one more sequence adds to a decode step, BatchSlope); NaN
// when unknown.
//
// The decomposition, per token (a decode step yields one token per
// sequence, so a step's time is the time between two tokens):
//
//	ΔTPOT = Δ(TPOT − trace time per token)           outside the trace
//	      + Δ(prefill and other steps per token)      workload: step mix
//	      + Δ(gaps between kernels)                   host: launches, scheduling
//	      + slope × Δ(real batch)                     workload: batch
//	      + slope × Δ(padded − real batch)            workload: graph padding
//	      + Δ(collective kernels per step)            communication
//	      + the rest of Δ(GPU-busy per step)          kernels at matched batch
func NewWaterfall(a, b Side, slopeUS float64) Waterfall {
	w := Waterfall{A: a.Name, B: b.Name, SlopeUS: slopeUS}
	sa, sb := a.File.StepTime, b.File.StepTime
	clientKnown := !math.IsNaN(a.TPOTMS) && !math.IsNaN(b.TPOTMS) && a.TPOTMS > 0 && b.TPOTMS > 0
	if clientKnown {
		w.DeltaUS = 1000 * (b.TPOTMS - a.TPOTMS)
	} else {
		w.DeltaUS = sb.TokenUS - sa.TokenUS
		w.Notes = append(w.Notes, "no client TPOT on both sides: the change is the trace's time per token")
	}
	add := func(name string, us float64, detail string, explained bool) {
		w.Terms = append(w.Terms, Term{Name: name, US: us, Detail: detail, Explained: explained})
	}

	ba, okA := BatchOf(a.File)
	bb, okB := BatchOf(b.File)
	var batchUS, padUS float64
	switch {
	case !okA || !okB:
		w.Notes = append(w.Notes, "a side has no batch labels on its steps: the batch's part stays in the kernel term")
	case math.IsNaN(slopeUS):
		w.Notes = append(w.Notes, "no batch model (one level, or every level at one batch): the batch's part stays in the kernel term")
	default:
		batchUS = slopeUS * (bb.Real - ba.Real)
		padUS = slopeUS * ((bb.Padded - bb.Real) - (ba.Padded - ba.Real))
	}
	commUS := categoryStepUS(b.File, CommCategory) - categoryStepUS(a.File, CommCategory)
	busy := sb.BusyUS - sa.BusyUS
	kernelUS := busy - batchUS - padUS - commUS

	if okA && okB {
		add("workload: decode batch", batchUS, fmt.Sprintf("bs %s → %s", f1s(ba.Real), f1s(bb.Real)), true)
		add("workload: graph padding", padUS, fmt.Sprintf("padded rows %s → %s per step", f1s(ba.Padded-ba.Real), f1s(bb.Padded-bb.Real)), true)
	}
	add("workload: prefill and other steps", (sb.PrefillPerTokenUS+sb.OtherPerTokenUS)-(sa.PrefillPerTokenUS+sa.OtherPerTokenUS),
		fmt.Sprintf("prefill share %s → %s of the window", pctS(sa.PrefillPct), pctS(sb.PrefillPct)), true)
	detail := topCategories(a.File, b.File)
	if detail != "" && math.Abs(batchUS+padUS) > 0.1*math.Abs(busy) {
		detail = "per category, the batch's part included: " + detail
	}
	add("kernels at matched batch", kernelUS, detail, true)
	add("communication", commUS, "", true)
	add("host: gaps between kernels", sb.GapUS-sa.GapUS, fmt.Sprintf("%s → %s µs per step", f1s(sa.GapUS), f1s(sb.GapUS)), true)
	if clientKnown {
		outside := w.DeltaUS - (sb.TokenUS - sa.TokenUS)
		add("outside the trace (client, streaming, host stalls)", outside, "", false)
	}
	var unexplained float64
	for _, t := range w.Terms {
		if !t.Explained {
			unexplained += t.US
		}
	}
	w.ExplainedPct = 100
	if w.DeltaUS != 0 {
		w.ExplainedPct = 100 * (1 - math.Abs(unexplained)/math.Abs(w.DeltaUS))
	}
	return w
}

// categoryStepUS is a category's GPU time per decode step.
func categoryStepUS(f *LevelFile, category string) float64 {
	if f.Inventory == nil {
		return 0
	}
	for _, c := range f.Inventory.ByCategory {
		if c.Category == category {
			return c.DecodeStepUS
		}
	}
	return 0
}

// topCategories names the categories whose time per decode step moved
// most (communication apart), largest first, at most three.
func topCategories(a, b *LevelFile) string {
	if a.Inventory == nil || b.Inventory == nil {
		return ""
	}
	d := map[string]float64{}
	for _, c := range b.Inventory.ByCategory {
		d[c.Category] += c.DecodeStepUS
	}
	for _, c := range a.Inventory.ByCategory {
		d[c.Category] -= c.DecodeStepUS
	}
	type cd struct {
		c string
		d float64
	}
	var out []cd
	for c, v := range d {
		if c != CommCategory && math.Abs(v) >= 0.05 {
			out = append(out, cd{c, v})
		}
	}
	slices.SortFunc(out, func(x, y cd) int { return cmp.Or(cmp.Compare(math.Abs(y.d), math.Abs(x.d)), strings.Compare(x.c, y.c)) })
	var parts []string
	for _, x := range out[:min(3, len(out))] {
		parts = append(parts, fmt.Sprintf("%s %s µs", x.c, signed1(x.d)))
	}
	return strings.Join(parts, ", ")
}

// Lead is the waterfall in one line: how much of the change it explains
// and its largest terms.
func (w Waterfall) Lead() string {
	terms := slices.Clone(w.Terms)
	slices.SortStableFunc(terms, func(x, y Term) int { return cmp.Compare(math.Abs(y.US), math.Abs(x.US)) })
	var parts []string
	for _, t := range terms {
		if !t.Explained || math.Abs(t.US) < 0.05*math.Abs(w.DeltaUS) || len(parts) == 3 {
			continue
		}
		p := fmt.Sprintf("%s ms %s", signed3(t.US/1000), t.Name)
		if t.Detail != "" {
			p += " (" + t.Detail + ")"
		}
		parts = append(parts, p)
	}
	s := fmt.Sprintf("explained %.0f%% of %s ms/token", math.Max(0, w.ExplainedPct), signed3(w.DeltaUS/1000))
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, "; ")
	}
	return s
}

func f1s(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func pctS(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + "%" }

func signed1(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if v >= 0 && s != "0.0" {
		s = "+" + s
	}
	return s
}

func signed3(v float64) string {
	s := strconv.FormatFloat(v, 'f', 3, 64)
	if s == "-0.000" {
		s = "0.000"
	}
	if v > 0 && s != "0.000" {
		s = "+" + s
	}
	return s
}

// CaptureSizesFor is a CUDA-graph capture size list, as the engines'
// --cudagraph-capture-sizes takes it ("[1,2,4]"), that holds every real
// decode batch making up at least 1% of a level's decode steps (at most
// 16 of them, the most frequent), so that those steps replay a graph of
// exactly their batch, merged with the sizes captured now. "" when the
// histogram is empty or the current sizes already hold them all.
func CaptureSizesFor(hist map[string]int, current []int) string {
	type bc struct{ bs, n int }
	var seen []bc
	total := 0
	for k, n := range hist {
		bs, err := strconv.Atoi(k)
		if err != nil || bs <= 0 || n <= 0 {
			continue
		}
		seen = append(seen, bc{bs, n})
		total += n
	}
	slices.SortFunc(seen, func(x, y bc) int { return cmp.Or(cmp.Compare(y.n, x.n), cmp.Compare(x.bs, y.bs)) })
	sizes := slices.Clone(current)
	added := 0
	for _, s := range seen {
		if 100*s.n < total || added == 16 {
			break
		}
		if !slices.Contains(sizes, s.bs) {
			sizes = append(sizes, s.bs)
			added++
		}
	}
	if added == 0 {
		return ""
	}
	slices.Sort(sizes)
	parts := make([]string, len(sizes))
	for i, s := range sizes {
		parts[i] = strconv.Itoa(s)
	}
	return "[" + strings.Join(parts, ",") + "]"
}
