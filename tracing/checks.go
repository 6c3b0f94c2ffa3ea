package tracing

import (
	"fmt"
	"sort"
	"time"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/units"
)

// outsideSlack is how far outside the profile window an event may start
// (at least; the window's own length when that is longer): GPU work runs
// behind the CPU, but never by this much.
const outsideSlack = int64(10 * time.Second)

// checkTimes warns about times that cannot be right: a negative timestamp,
// an event starting far outside the profile window [ws, we] (when steps
// give one), a kernel longer than the trace. It runs once, on what the
// scan kept track of, so it costs the reader nothing per event.
func (b *builder) checkTimes(t *Trace, ws, we int64, steps bool) {
	if !b.any {
		return
	}
	warn := func(format string, args ...any) {
		t.Warnings = append(t.Warnings, diag.New(diag.ImpossibleValue, fmt.Sprintf(format, args...)))
	}
	if b.minTS < 0 {
		warn("traceEvents[%d]: the timestamp %s µs is negative: the trace's clock or this event is wrong; times and spans that involve it are not trustworthy", b.minIdx, units.Duration(b.minTS))
	}
	if !steps {
		return
	}
	slack := max(we-ws, outsideSlack)
	ks := t.Kernels
	if lo := ws - slack; b.minTS < lo {
		n := sort.Search(len(ks), func(i int) bool { return ks[i].Start >= lo })
		warn("traceEvents[%d] starts %s before the profile window (%s that early): the timestamp cannot be right, and the GPU span and coverage include it", b.minIdx, human(ws-b.minTS), kernelCount(n))
	}
	if hi := we + slack; b.maxStart > hi {
		n := len(ks) - sort.Search(len(ks), func(i int) bool { return ks[i].Start > hi })
		warn("traceEvents[%d] starts %s after the profile window (%s that late): the timestamp cannot be right, and the GPU span and coverage include it", b.maxStartIdx, human(b.maxStart-we), kernelCount(n))
	}
	if long := max(we-ws, b.maxStart-b.minTS); b.maxDur > long {
		warn("traceEvents[%d]: a kernel lasts %s, longer than the whole trace (%s): its duration cannot be right, and kernel totals include it", b.maxDurIdx, human(b.maxDur), human(long))
	}
}

// human prints a span of ns for people, in the unit that suits it.
func human(ns int64) string {
	switch d := units.Duration(ns); {
	case ns >= int64(time.Second):
		return fmt.Sprintf("%.1f s", d.Seconds())
	case ns >= int64(time.Millisecond):
		return fmt.Sprintf("%.1f ms", d.MS())
	default:
		return d.String() + " µs"
	}
}

// kernelCount says "1 kernel starts" or "N kernels start".
func kernelCount(n int) string {
	if n == 1 {
		return "1 kernel starts"
	}
	return fmt.Sprintf("%d kernels start", n)
}
