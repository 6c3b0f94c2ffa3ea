package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/internal/diag"
)

// leftOut marks a headline cell a trust check left out; the reason is
// listed below the table.
const leftOut = dash + "†"

// clientBoundRatio is how far the client's TPOT may exceed the server's
// own before a level whose client was busy is called client-bound (as
// the benchmark client's own check).
const clientBoundRatio = 1.2

// distrust is why a level's figures cannot be believed: the client's
// (latencies and throughputs) and the trace's (decode batch, step against
// its speed of light); empty when they can.
type distrust struct {
	client, trace []string
}

// trustOf runs the trust checks on a level.
func (v *view) trustOf(l *level) distrust {
	var d distrust
	if o := v.r.overhead; o != nil && o.Flagged {
		d.client = append(d.client, fmt.Sprintf("the profiler slows TPOT by %s (conc %d run again without it: %s ms against %s ms profiled; threshold %s%%)",
			signedPct(o.DiffPct), o.Conc, f2(o.UnprofiledTPOTMS), f2(o.ProfiledTPOTMS), strconv.FormatFloat(o.ThresholdPct, 'g', -1, 64)))
	}
	if why := v.clientBound(l); why != "" {
		d.client = append(d.client, why)
	}
	for _, h := range v.traceHealth(l) {
		if h.bad {
			d.trace = append(d.trace, h.text)
		}
	}
	return d
}

// clientRatio is the client's TPOT over the server's own, and where the
// server's comes from: the trace's time per token (exact), else /metrics
// (the client's own check: Little's law over gauges sampled every half
// second, rough on a short level); 0 when unknown.
func (v *view) clientRatio(l *level) (float64, string) {
	if l.File != nil && l.File.StepTime.TokenUS > 0 {
		if t, _ := v.tpot(l); t > 0 {
			return t / (l.File.StepTime.TokenUS / 1000), "trace"
		}
	}
	if l.Result != nil && l.Result.Client != nil {
		if c := l.Result.Client; c.ServerTPOTMS > 0 && c.ClientTPOTMS > 0 {
			return c.ClientTPOTMS / c.ServerTPOTMS, "/metrics"
		}
	}
	return 0, ""
}

// clientBound says why a level's client was the bottleneck, "" when it
// was not (or nothing says).
func (v *view) clientBound(l *level) string {
	ratio, src := v.clientRatio(l)
	if ratio == 0 || l.Result == nil || l.Result.Client == nil {
		return ""
	}
	c := l.Result.Client
	if !(ratio > clientBoundRatio && c.BusyShare > 0.5) {
		return ""
	}
	return fmt.Sprintf("the client was the bottleneck: its TPOT is %s× the server's own (%s) and it spent %s of its streams' time away from its reads",
		f2(ratio), src, pctS(100*c.BusyShare))
}

// health is one trace-health finding; bad ones make the trace's figures
// untrustworthy, the others are said for completeness.
type health struct {
	text string
	bad  bool
}

// traceHealth gathers what the trace checks found at a level: lost
// events, events outside the profile window or with impossible times, a
// cut trace, steps and graph replays without kernels, dummy steps and
// missing ranks.
func (v *view) traceHealth(l *level) []health {
	if l.File == nil {
		return nil
	}
	var out []health
	s := l.File.Summary
	ws := append(append([]diag.Warning{}, s.Warnings...), l.File.Warnings...)
	seen := map[diag.Code]bool{}
	for _, w := range ws {
		if seen[w.Code] {
			continue
		}
		seen[w.Code] = true
		switch w.Code {
		case diag.Coverage:
			out = append(out, health{"the profiler lost GPU events (coverage warning)", true})
		case diag.Truncated:
			out = append(out, health{"the trace was cut short (truncated)", true})
		case diag.ImpossibleValue:
			out = append(out, health{"events with impossible times or outside the profile window", true})
		case diag.NoKernels:
			out = append(out, health{"no GPU kernels in the trace", true})
		}
	}
	if c := s.Coverage; c.StepsWithoutKernels > 0 && !seen[diag.Coverage] && !seen[diag.Truncated] {
		out = append(out, health{fmt.Sprintf("%d of %d steps have no kernels", c.StepsWithoutKernels, c.Steps), true})
	}
	if s.GraphLaunches > 0 && s.KernelsReplayed == 0 {
		out = append(out, health{fmt.Sprintf("%d graph replays without kernels", s.GraphLaunches), true})
	}
	if n := s.Steps["dummy"]; n > 0 {
		out = append(out, health{fmt.Sprintf("%s (warm-up, left out of the step figures)", plural(n, "dummy step")), false})
	}
	if tp := v.r.info.Engine.TP; tp > 1 {
		for _, li := range v.r.info.Levels {
			if li.Conc == l.Conc && len(li.Traces) < tp {
				out = append(out, health{fmt.Sprintf("%d of %d ranks' traces (rank 0 analysed)", len(li.Traces), tp), false})
			}
		}
	}
	return out
}

// trustSection writes "Trust checks": before any figure, whether the
// run's figures can be believed — the profiler's overhead, the client's
// load, the traces' health — and what the headline leaves out.
func (v *view) trustSection(b *md) {
	b.p("## Trust checks\n\n")
	switch o := v.r.overhead; {
	case o == nil:
		b.p("Profiler overhead: not checked (`run --overhead-check` runs the first level again without the profiler).\n\n")
	default:
		verdict := "within the threshold"
		if o.Flagged {
			verdict = "**above the threshold**: every level's latencies and throughputs were measured on a slowed engine"
		}
		b.p("Profiler overhead: conc %d run again without the profiler had a mean TPOT of %s ms against %s ms profiled (%s, threshold %s%%): %s.\n\n",
			o.Conc, f2(o.UnprofiledTPOTMS), f2(o.ProfiledTPOTMS), signedPct(o.DiffPct), strconv.FormatFloat(o.ThresholdPct, 'g', -1, 64), verdict)
	}
	head := []string{""}
	var clientRows [3][]string
	var healthRow []string
	measured := false
	for _, l := range v.r.levels {
		head = append(head, l.name())
		busy, cpu, ratio := dash, dash, dash
		if l.Result != nil && l.Result.Client != nil {
			c := l.Result.Client
			measured = true
			if c.BusyShare >= 0 {
				busy = pctS(100 * c.BusyShare)
			}
			if c.WallS > 0 {
				cpu = fmt.Sprintf("%s of %d cores", pctS(100*c.CPUShare), c.Cores)
			}
		}
		if r, src := v.clientRatio(l); r > 0 {
			ratio = f2(r) + "× (" + src + ")"
		}
		clientRows[0] = append(clientRows[0], busy)
		clientRows[1] = append(clientRows[1], cpu)
		clientRows[2] = append(clientRows[2], ratio)
		var hs []string
		for _, h := range v.traceHealth(l) {
			hs = append(hs, h.text)
		}
		switch {
		case l.File == nil:
			healthRow = append(healthRow, dash)
		case len(hs) == 0:
			healthRow = append(healthRow, "clean")
		default:
			healthRow = append(healthRow, esc(strings.Join(hs, "; ")))
		}
	}
	rows := [][]string{
		append([]string{"client: time away from its reads"}, clientRows[0]...),
		append([]string{"client: CPU"}, clientRows[1]...),
		append([]string{"client TPOT ÷ server's own"}, clientRows[2]...),
		append([]string{"trace health"}, healthRow...),
	}
	if !measured {
		rows = rows[2:]
	}
	b.table(head, "l"+strings.Repeat("r", len(v.r.levels)), rows)
	b.p("A client that spends most of its streams' time away from its reads while its TPOT is over %s× the server's own (the trace's time per token, else /metrics) measures itself, not the server. "+
		"Trace health gathers the trace checks (lost events, a cut trace, impossible times or events outside the profile window, steps and graph replays without kernels, dummy steps, missing ranks).\n\n", f1(clientBoundRatio))
	if left := v.leftOutNotes(); len(left) > 0 {
		b.p("Left out of the headline (%s in the throughput table):\n\n%s\n\n", leftOut, strings.Join(left, "\n"))
	} else {
		b.p("Nothing is left out of the headline.\n\n")
	}
}

// leftOutNotes says, one line a level, which headline figures the trust
// checks left out and why.
func (v *view) leftOutNotes() []string {
	var out []string
	for _, l := range v.r.levels {
		d := v.trustOf(l)
		if len(d.client) > 0 {
			out = append(out, fmt.Sprintf("- %s: req/s, throughputs, TTFT and TPOT: %s.", l.name(), strings.Join(d.client, "; ")))
		}
		if len(d.trace) > 0 {
			out = append(out, fmt.Sprintf("- %s: decode batch and step ÷ SOL: %s.", l.name(), strings.Join(d.trace, "; ")))
		}
	}
	return out
}

// applyTrust blanks the headline cells of a level's row that its trust
// checks make untrustworthy: the client's figures (columns 4–10) and the
// trace's (decode batch, step ÷ SOL).
func (v *view) applyTrust(l *level, row []string, sol bool) {
	d := v.trustOf(l)
	if len(d.client) > 0 {
		for i := 4; i <= 10 && i < len(row); i++ {
			row[i] = leftOut
		}
	}
	if len(d.trace) > 0 {
		row[1] = leftOut
		if sol && len(row) > 12 {
			row[12] = leftOut
		}
	}
}
