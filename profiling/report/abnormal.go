package report

import (
	"fmt"
	"strings"

	"github.com/profile-model/profile-model/internal/diag"
)

// Thresholds of the observations that lead the report (see the package
// documentation): what a performance engineer acts on first.
const (
	capFrac         = 0.9  // a level whose decode batch stays under 90% of its concurrency is capped
	flatGainPct     = 5.0  // throughput that gains less than this from one level to the next is flat
	latencyJumpMult = 1.5  // ... while median TTFT or TPOT grows by this factor: saturation
	lostEventsPct   = 10.0 // a trace whose steps lost this share of their kernels is incomplete
)

// batchCap says which levels ran a smaller decode batch than their
// concurrency and why: the engine's --max-num-seqs when the batch sits at
// it, else too few requests in flight.
func (v *view) batchCap() string {
	var capped []string
	cap := v.r.info.Engine.MaxNumSeqs
	atCap := true
	for _, l := range v.r.levels {
		bs := l.BS()
		if bs <= 0 || bs == l.Conc || float64(bs) >= capFrac*float64(l.Conc) {
			continue
		}
		capped = append(capped, fmt.Sprintf("conc %d ran decode batches of %d", l.Conc, bs))
		atCap = atCap && cap > 0 && float64(bs) >= capFrac*float64(cap) && bs <= cap
	}
	if len(capped) == 0 {
		return ""
	}
	queue := v.queueing()
	if atCap {
		s := fmt.Sprintf("**The decode batch is capped at %d by `--max-num-seqs %d`**: %s; the requests beyond %d wait in the queue", cap, cap, strings.Join(capped, ", "), cap)
		if queue != "" {
			s += " (" + queue + ")"
		}
		return s + ". Raise `--max-num-seqs` to measure those levels, or read them as queueing."
	}
	s := "**The decode batch stays below the concurrency**: " + strings.Join(capped, ", ")
	if cap > 0 {
		s += fmt.Sprintf(" (not `--max-num-seqs %d`, which is above it)", cap)
	}
	return s + ": too few requests were in flight in the profiled window; raise `--num-prompts-mul` so that each level reaches its steady batch."
}

// queueing compares the median TTFT of the highest level with the level
// before it: "median TTFT 37.66 → 289.18 ms from conc 32 to conc 64".
func (v *view) queueing() string {
	ls := v.levelsWithRows()
	if len(ls) < 2 {
		return ""
	}
	a, b := ls[len(ls)-2], ls[len(ls)-1]
	if a.Row.TTFTP50MS <= 0 || b.Row.TTFTP50MS < latencyJumpMult*a.Row.TTFTP50MS {
		return ""
	}
	return fmt.Sprintf("median TTFT %s → %s ms from conc %d to conc %d", f2(a.Row.TTFTP50MS), f2(b.Row.TTFTP50MS), a.Conc, b.Conc)
}

// saturation finds the first step up in concurrency where output
// throughput stops rising (gains under 5% or falls) while median TTFT or
// TPOT jumps by half or more.
func (v *view) saturation() string {
	ls := v.levelsWithRows()
	for i := 1; i < len(ls); i++ {
		a, b := ls[i-1], ls[i]
		if a.Row.OutTokS <= 0 {
			continue
		}
		gain := 100 * (b.Row.OutTokS - a.Row.OutTokS) / a.Row.OutTokS
		if gain >= flatGainPct {
			continue
		}
		var jumps []string
		if a.Row.TTFTP50MS > 0 && b.Row.TTFTP50MS >= latencyJumpMult*a.Row.TTFTP50MS {
			jumps = append(jumps, fmt.Sprintf("median TTFT %s× (%s → %s ms)", f1(b.Row.TTFTP50MS/a.Row.TTFTP50MS), f2(a.Row.TTFTP50MS), f2(b.Row.TTFTP50MS)))
		}
		if a.Row.TPOTP50MS > 0 && b.Row.TPOTP50MS >= latencyJumpMult*a.Row.TPOTP50MS {
			jumps = append(jumps, fmt.Sprintf("median TPOT %s× (%s → %s ms)", f1(b.Row.TPOTP50MS/a.Row.TPOTP50MS), f2(a.Row.TPOTP50MS), f2(b.Row.TPOTP50MS)))
		}
		if len(jumps) == 0 {
			continue
		}
		verb := "stays flat"
		if gain < 0 {
			verb = "falls"
		}
		return fmt.Sprintf("**Saturated from conc %d to conc %d**: output throughput %s (%s → %s tok/s, %s, %s → %s req/s) while %s: more concurrency past conc %d buys latency, not throughput.",
			a.Conc, b.Conc, verb, f1(a.Row.OutTokS), f1(b.Row.OutTokS), signedPct(gain), f2(a.Row.ReqS), f2(b.Row.ReqS), strings.Join(jumps, " and "), a.Conc)
	}
	return ""
}

// lostEvents names the levels whose trace lost GPU events (steps without
// kernels), with advice from the run's own settings.
func (v *view) lostEvents() string {
	var parts []string
	for _, l := range v.lv {
		c := l.File.Summary.Coverage
		n, of := c.DecodeWithout, c.DecodeSteps
		if of == 0 {
			n, of = c.StepsWithoutKernels, c.Steps
		}
		if of == 0 {
			continue
		}
		if pct := 100 * float64(n) / float64(of); pct >= lostEventsPct {
			parts = append(parts, fmt.Sprintf("%s lost the kernels of %d of its %d steps (%s)", l.name(), n, of, pctS(pct)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "**Incomplete traces**: " + strings.Join(parts, "; ") + ": their per-step figures cover only the steps that kept their kernels. " + v.bufferAdvice() + "."
}

// bufferAdvice says how to keep a trace's GPU events, from what the run
// already set.
func (v *view) bufferAdvice() string {
	set, conf := "", false
	for _, e := range v.r.info.Engine.Env {
		if val, ok := strings.CutPrefix(e, "KINETO_BUFFER_SIZE_MB="); ok {
			set = val
		}
		conf = conf || strings.HasPrefix(e, "KINETO_CONFIG=")
	}
	switch {
	case set != "" && conf:
		return fmt.Sprintf("The run already set `KINETO_BUFFER_SIZE_MB=%s` and, for upstream Kineto, the `KINETO_CONFIG` file sized from it: profile fewer decode steps (`--profile-steps N`) or send fewer prompts (`--num-prompts-mul`), or raise the buffer further", set)
	case set != "":
		return fmt.Sprintf("The run already set `KINETO_BUFFER_SIZE_MB=%s`: profile fewer decode steps (`--profile-steps N`) or send fewer prompts (`--num-prompts-mul`), or raise the buffer further", set)
	}
	return "Raise `KINETO_BUFFER_SIZE_MB` (256 or more; upstream Kineto reads `ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB` and `ROCTRACER_MAX_EVENTS` from the file `KINETO_CONFIG` names) for the engine, or profile fewer decode steps (`--profile-steps N`)"
}

// adviseWarning rewrites the generic advice of a level's warning with the
// cause the run's settings show.
func (v *view) adviseWarning(l *level, w diag.Warning) string {
	msg := w.Message
	switch {
	case w.Code == diag.Coverage:
		if i := strings.Index(msg, "; the profiler buffer dropped GPU events"); i > 0 {
			msg = msg[:i] + "; the profiler buffer dropped GPU events. " + v.bufferAdvice()
		}
	case strings.Contains(msg, "raise --num-prompts-mul so the level lasts longer, or the server's --max-num-seqs"):
		if c := v.r.info.Engine.MaxNumSeqs; c > 0 && l.BS() <= c && float64(l.BS()) >= capFrac*float64(c) {
			msg = strings.Replace(msg, "the server never reached that batch (raise --num-prompts-mul so the level lasts longer, or the server's --max-num-seqs)",
				fmt.Sprintf("the engine's --max-num-seqs %d caps it (raise --max-num-seqs to run this level)", c), 1)
		}
	}
	return msg
}

// structural reports whether a change alters the layer's kernels (split,
// fused, replaced, appears, no longer runs), not just a template instance.
func structural(c change) bool {
	if len(c.Old) != 1 || len(c.New) != 1 || c.Old[0] != c.New[0] {
		return true
	}
	before, now := c.Old[0].last(c.Level), c.New[0].Cells[c.Level]
	return before == nil || now == nil || before.ShortName != now.ShortName
}

// structuralChanges is the observation on kernels that split, fuse, appear
// or are replaced between levels.
func (v *view) structuralChanges() string {
	var parts []string
	for _, c := range v.changes {
		if structural(c) {
			parts = append(parts, strings.TrimSuffix(v.describeChange(c), "."))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "**The layer's kernels change structure between levels**: " + strings.Join(parts, "; ") + "."
}

// instanceChanges is the closing observation on positions that run another
// instance of the same kernel (other template arguments, tuned for the
// batch): worth knowing, rarely worth acting on.
func (v *view) instanceChanges() string {
	var parts []string
	for _, c := range v.changes {
		if !structural(c) {
			parts = append(parts, fmt.Sprintf("%s from %s", code(esc(c.New[0].Cells[c.Level].Label())), v.names[c.Level]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "Other template instances of the same kernel (tuned for the batch size) run at " + strings.Join(parts, ", ") + "."
}

// limitWord says what limits a token's time from its parts: the largest
// of GPU work, gaps between kernels and prefill steps; prefill only when
// it is the largest.
func limitWord(busy, gap, prefill, step float64) string {
	switch {
	case prefill > busy && prefill > gap:
		return "Prefill interference limits it: new requests' prefill steps take more of a token's time than the decode work, and stall every running sequence."
	case gap > busy && step > 0 && 100*gap/step >= gapLimitPct:
		return "Host overhead limits it: the GPU idles between kernels (launches, scheduling, sampling sync) for more of each step than it computes."
	}
	return ""
}
