package analysis

import (
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/tracing"
)

// StepTime reconciles the time between two tokens of a sequence with the
// kernels of the trace: what a decode step costs, how much of it the GPU is
// busy, what the gaps between kernels (launch and host overhead) take, and
// what the prefill steps that interrupt decoding add to every token.
//
// A decode step's time runs from its start to the start of the next step
// (of any kind), both on the GPU timeline: the step annotation's start, or
// its first kernel's when the step comes from a CPU annotation. Start to
// start, not the annotation's own span, because the host work between two
// steps (scheduling, sampling, the sync on the sampled tokens) is part of
// what a token costs and lies outside every annotation; start to start
// tiles the timeline, so the decode, prefill and other steps of the window
// add up to it exactly. Only decode steps followed by another step are
// timed (the last one of the trace has no end).
//
// GPU-busy is the union of the GPU activity intervals (kernels, copies,
// memsets) inside the step's time, so kernels that overlap on two streams
// count once. Gaps are the step time minus GPU-busy.
//
// The per-step figures are averages over the timed decode steps weighted
// by their batch size, so that they are per token as the client's TPOT is:
// a step of 16 sequences gives 16 tokens their time, the step of 3 that
// drains a level gives 3. A prefill (or other) step delays the sequences
// that go on decoding after it; its time spread over the tokens is
// PrefillPerTokenUS. TokenUS = StepUS + PrefillPerTokenUS + OtherPerTokenUS
// is what the trace predicts for the client's mean TPOT. In a closed-loop
// sweep there is no idle time between steps; under a request rate, idle
// time shows up in the gaps.
type StepTime struct {
	DecodeSteps int     `json:"decode_steps"` // decode steps with kernels
	Timed       int     `json:"timed_steps"`  // decode steps followed by another step
	StepUS      float64 `json:"step_us"`      // decode step time, start to next start
	BusyUS      float64 `json:"busy_us"`      // GPU-busy time per decode step
	GapUS       float64 `json:"gap_us"`       // StepUS - BusyUS
	// KernelUS is the summed duration of the GPU activities that start in
	// a decode step (more than BusyUS when streams overlap).
	KernelUS float64 `json:"kernel_us"`

	// GPU-busy as the robust decode table predicts it: Layers × LayerUS +
	// PrologueUS + EpilogueUS + CopyUS. The prologue and epilogue are the
	// table's kernels before the first and after the last layer, timed per
	// step; kernels that run after the step's annotation but before the
	// next step (the sampler) count as epilogue.
	Layers      int     `json:"layers"`
	LayerUS     float64 `json:"layer_us"` // one layer: summed position averages (kinds weighted by their layer counts)
	PrologueUS  float64 `json:"prologue_us"`
	EpilogueUS  float64 `json:"epilogue_us"`
	CopyUS      float64 `json:"copy_us"` // memcpy and memset per decode step
	TableBusyUS float64 `json:"table_busy_us"`

	// The window runs from the first decode step's start to the end of the
	// last timed one; prefill (and mixed) and other steps inside it.
	WindowUS          float64 `json:"window_us"`
	PrefillSteps      int     `json:"prefill_steps"`
	PrefillUS         float64 `json:"prefill_us"`  // their summed time, start to next start
	PrefillPct        float64 `json:"prefill_pct"` // PrefillUS / WindowUS, in percent
	PrefillPerTokenUS float64 `json:"prefill_per_token_us"`
	OtherSteps        int     `json:"other_steps"`
	OtherUS           float64 `json:"other_us"`
	OtherPerTokenUS   float64 `json:"other_per_token_us"`
	TokenUS           float64 `json:"token_us"` // StepUS + PrefillPerTokenUS + OtherPerTokenUS
}

// cycle is one step's time slot on the GPU timeline: start to next start.
type cycle struct {
	s, e              int64
	step              int
	decode            bool
	busy, sum, copies int64   // ns
	pro, epi          int64   // ns, decode steps only
	after             int64   // ns of kernels in no step (decode cycles only)
	w                 float64 // sequences the cycle delays by one token
}

// StepTimes computes the step-time reconciliation of a trace's decode
// steps. decode is the robust decode table of the same trace (nil: the
// table's part is left zero).
func StepTimes(tr *tracing.Trace, decode *inventory.LayerTable) StepTime {
	var out StepTime
	var steps []int // steps with kernels, in start order
	for i := range tr.Steps {
		if len(tr.Steps[i].Kernels) > 0 {
			steps = append(steps, i)
			if tr.Steps[i].Kind == tracing.StepDecode {
				out.DecodeSteps++
			}
		}
	}
	first, last := -1, -1
	for j, i := range steps {
		if tr.Steps[i].Kind != tracing.StepDecode {
			continue
		}
		if first < 0 {
			first = j
		}
		if j+1 < len(steps) {
			last = j
		}
	}
	if first < 0 || last < 0 {
		return out
	}
	var cycles []cycle
	for j := first; j <= last; j++ {
		st := &tr.Steps[steps[j]]
		s, e := st.Start, tr.Steps[steps[j+1]].Start
		if e <= s {
			continue // nested or simultaneous steps: no slot of their own
		}
		cycles = append(cycles, cycle{s: s, e: e, step: steps[j], decode: st.Kind == tracing.StepDecode})
	}
	if len(cycles) == 0 {
		return out
	}
	measure(tr, cycles)
	pro, epi := 0, 0
	if decode != nil {
		pro, epi = len(decode.Prologue), len(decode.Epilogue)
	}
	weigh(tr, cycles)
	var weight, stepW, busyW, sumW, copyW, proW, epiW, prefillW, otherW float64
	var prefillNS int64
	for i := range cycles {
		c := &cycles[i]
		d := float64(c.e - c.s)
		if !c.decode {
			if k := tr.Steps[c.step].Kind; k == tracing.StepPrefill || k == tracing.StepMixed {
				out.PrefillSteps++
				prefillNS += c.e - c.s
				prefillW += c.w * d
			} else {
				out.OtherSteps++
				out.OtherUS += d / 1000
				otherW += c.w * d
			}
			continue
		}
		out.Timed++
		var ks []int32
		for _, k := range tr.Steps[c.step].Kernels {
			if tr.Kernels[k].Kind == tracing.KindKernel {
				ks = append(ks, k)
			}
		}
		if len(ks) >= pro+epi {
			for _, k := range ks[:pro] {
				c.pro += tr.Kernels[k].Dur
			}
			for _, k := range ks[len(ks)-epi:] {
				c.epi += tr.Kernels[k].Dur
			}
		}
		weight += c.w
		stepW += c.w * d
		busyW += c.w * float64(c.busy)
		sumW += c.w * float64(c.sum)
		copyW += c.w * float64(c.copies)
		proW += c.w * float64(c.pro)
		epiW += c.w * float64(c.epi+c.after)
	}
	if out.Timed == 0 || weight == 0 {
		return out
	}
	us := func(ns float64) float64 { return ns / 1000 / weight }
	out.StepUS, out.BusyUS, out.KernelUS, out.CopyUS = us(stepW), us(busyW), us(sumW), us(copyW)
	out.GapUS = out.StepUS - out.BusyUS
	out.PrologueUS, out.EpilogueUS = us(proW), us(epiW)
	window := cycles[len(cycles)-1].e - cycles[0].s
	out.WindowUS = float64(window) / 1000
	out.PrefillUS = float64(prefillNS) / 1000
	if window > 0 {
		out.PrefillPct = 100 * float64(prefillNS) / float64(window)
	}
	out.PrefillPerTokenUS, out.OtherPerTokenUS = us(prefillW), us(otherW)
	out.TokenUS = out.StepUS + out.PrefillPerTokenUS + out.OtherPerTokenUS
	if decode != nil {
		out.Layers, out.LayerUS = decode.Layers, LayerTime(decode)
	}
	out.TableBusyUS = float64(out.Layers)*out.LayerUS + out.PrologueUS + out.EpilogueUS + out.CopyUS
	return out
}

// weigh sets each cycle's weight: the sequences it delays by one token. A
// decode step moves each of its sequences (its batch size, at least 1); a
// prefill or other step between two decode steps holds up the sequences
// that go on decoding after it: the next decode step's batch less the
// sequences the prefill steps in between added, at most the previous
// decode step's batch.
func weigh(tr *tracing.Trace, cycles []cycle) {
	bs := func(c *cycle) int { return max(tr.Steps[c.step].BS, 1) }
	prev := 0
	for i := 0; i < len(cycles); {
		if cycles[i].decode {
			prev = bs(&cycles[i])
			cycles[i].w = float64(prev)
			i++
			continue
		}
		j, added := i, 0
		for ; j < len(cycles) && !cycles[j].decode; j++ {
			if k := tr.Steps[cycles[j].step].Kind; k == tracing.StepPrefill || k == tracing.StepMixed {
				added += tr.Steps[cycles[j].step].BS
			}
		}
		waiting := prev
		if j < len(cycles) {
			waiting = min(prev, max(bs(&cycles[j])-added, 0))
		}
		for ; i < j; i++ {
			cycles[i].w = float64(waiting)
		}
	}
}

// measure fills each cycle's GPU-busy time (the union of activity
// intervals clipped to the cycle), summed activity time and copy time, and
// the kernel time in no step: work launched after the step's annotation
// closed, before the next step (the sampler in ATOM). Kernels are in start order, and so
// are the cycles, so one pass does it.
func measure(tr *tracing.Trace, cycles []cycle) {
	// addBusy spreads a merged interval over the cycles it overlaps.
	ci := 0
	addBusy := func(a, b int64) {
		for ci < len(cycles) && cycles[ci].e <= a {
			ci++
		}
		for j := ci; j < len(cycles) && cycles[j].s < b; j++ {
			if lo, hi := max(a, cycles[j].s), min(b, cycles[j].e); hi > lo {
				cycles[j].busy += hi - lo
			}
		}
	}
	si := 0
	var curA, curB int64
	open := false
	for i := range tr.Kernels {
		k := &tr.Kernels[i]
		if k.Dur <= 0 {
			continue
		}
		for si < len(cycles) && cycles[si].e <= k.Start {
			si++
		}
		if si < len(cycles) && k.Start >= cycles[si].s {
			c := &cycles[si]
			c.sum += k.Dur
			switch {
			case k.Kind != tracing.KindKernel:
				c.copies += k.Dur
			case k.Step < 0 && c.decode:
				c.after += k.Dur
			}
		}
		switch {
		case !open:
			curA, curB, open = k.Start, k.End(), true
		case k.Start > curB:
			addBusy(curA, curB)
			curA, curB = k.Start, k.End()
		default:
			curB = max(curB, k.End())
		}
	}
	if open {
		addBusy(curA, curB)
	}
}

// LayerTime is the time of one layer of a table: the position averages
// summed, each layer kind weighted by its share of the layers (kinds
// alternate).
func LayerTime(t *inventory.LayerTable) float64 {
	layersOfKind := map[int]int{}
	for _, p := range t.Positions {
		layersOfKind[p.LayerKind] = max(layersOfKind[p.LayerKind], p.Count)
	}
	total := 0
	for _, n := range layersOfKind {
		total += n
	}
	if total == 0 {
		return 0
	}
	sum := 0.0
	for _, p := range t.Positions {
		sum += p.AvgUS * float64(layersOfKind[p.LayerKind]) / float64(total)
	}
	return sum
}
