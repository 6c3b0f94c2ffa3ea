package telemetry

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/profile-model/profile-model/internal/results"
)

// Round is one reading of the GPUs: what one run of a tool, or one pass of
// nvidia-smi's stream over its GPUs, gave.
type Round struct {
	At      time.Time
	Samples []Sample
}

// Summarize makes a phase's telemetry from its rounds: per GPU of devs
// (nil: every GPU seen) its means, peaks and time at each limit, and the
// summed power at each round. A reading's limits count until the GPU's
// next reading (at most two periods; the last one period, cut at end).
// The rounds are in the order they were read.
func Summarize(tool string, period time.Duration, start, end time.Time, devs []int, rounds []Round) *results.Telemetry {
	t := &results.Telemetry{Tool: tool, PeriodMS: float64(period.Milliseconds()), DurationS: end.Sub(start).Seconds(), Rounds: len(rounds)}
	by := map[int][]Sample{}
	for _, r := range rounds {
		var w float64
		n := 0
		for _, s := range r.Samples {
			if devs != nil && !slices.Contains(devs, s.GPU) {
				continue
			}
			by[s.GPU] = append(by[s.GPU], s)
			if !math.IsNaN(s.PowerW) {
				w += s.PowerW
				n++
			}
		}
		if n > 0 {
			t.Power = append(t.Power, results.PowerPoint{T: round3(r.At.Sub(start).Seconds()), W: round3(w)})
		}
	}
	ids := devs
	if ids == nil {
		for g := range by {
			ids = append(ids, g)
		}
		slices.Sort(ids)
	}
	for _, g := range ids {
		t.GPUs = append(t.GPUs, summarizeGPU(g, by[g], period, end))
	}
	return t
}

func summarizeGPU(idx int, ss []Sample, period time.Duration, end time.Time) results.GPUTelemetry {
	g := results.GPUTelemetry{Index: idx, Samples: len(ss)}
	if len(ss) == 0 {
		g.Missing = true
		return g
	}
	var power, sm, mem, util stats
	limits := map[string]float64{}
	for i, s := range ss {
		power.add(s.PowerW)
		sm.add(s.SMClockMHz)
		mem.add(s.MemClkMHz)
		util.add(s.UtilPct)
		if !math.IsNaN(s.TempC) {
			g.PeakTempC = max(g.PeakTempC, s.TempC)
		}
		if !math.IsNaN(s.MemUsedMiB) {
			g.PeakMemUsedMiB = max(g.PeakMemUsedMiB, s.MemUsedMiB)
		}
		if !math.IsNaN(s.MemTotMiB) {
			g.MemTotalMiB = max(g.MemTotalMiB, s.MemTotMiB)
		}
		if len(s.Limits) == 0 {
			continue
		}
		dt := period
		if i+1 < len(ss) {
			// A clock that went back (a tool's local time) counts a period.
			if next := ss[i+1].At.Sub(s.At); next > 0 {
				dt = min(next, 2*period)
			}
		} else if rest := end.Sub(s.At); rest < dt {
			dt = rest
		}
		for _, l := range s.Limits {
			limits[l] += max(dt.Seconds(), 0)
		}
	}
	g.MeanPowerW, g.PeakPowerW = round3(power.mean()), round3(power.hi)
	g.MeanSMClockMHz, g.MinSMClockMHz, g.MaxSMClockMHz = round3(sm.mean()), sm.lo, sm.hi
	g.MeanMemClkMHz = round3(mem.mean())
	g.MeanUtilPct = round3(util.mean())
	for l, s := range limits {
		g.Throttle = append(g.Throttle, results.LimitTime{Limit: l, Seconds: round3(s)})
	}
	slices.SortFunc(g.Throttle, func(a, b results.LimitTime) int {
		return cmp.Or(cmp.Compare(b.Seconds, a.Seconds), cmp.Compare(a.Limit, b.Limit))
	})
	return g
}

// stats are the readings of one figure, unknown ones left out.
type stats struct {
	n           int
	sum, lo, hi float64
}

func (s *stats) add(v float64) {
	if math.IsNaN(v) {
		return
	}
	if s.n == 0 || v < s.lo {
		s.lo = v
	}
	s.hi = max(s.hi, v)
	s.sum += v
	s.n++
}

func (s *stats) mean() float64 {
	if s.n == 0 {
		return 0
	}
	return s.sum / float64(s.n)
}

// round3 keeps three decimals: the files stay readable and stable.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
