package results

import (
	"cmp"
	"math"
	"slices"
)

// Telemetry is what the GPUs' own tools (amd-smi, rocm-smi, nvidia-smi, or
// the simulated engine's stand-in) said over one phase of a level: the
// measured requests, or the warm-up before them, kept apart. Figures a tool
// does not report are 0.
type Telemetry struct {
	Tool      string  `json:"tool"`
	PeriodMS  float64 `json:"period_ms"`  // the sampling period asked for
	DurationS float64 `json:"duration_s"` // the phase's wall time
	Rounds    int     `json:"rounds"`     // readings taken (each of every GPU)
	// GPUs are the GPUs the engine uses, by index; one the tool never
	// reported is Missing.
	GPUs []GPUTelemetry `json:"gpus"`
	// Power is the GPUs' summed power at each reading, T seconds from the
	// phase's start: what the energy of part of a phase is read from.
	Power []PowerPoint `json:"power,omitempty"`
}

// GPUTelemetry is one GPU over a phase.
type GPUTelemetry struct {
	Index          int     `json:"index"`
	Samples        int     `json:"samples"`
	Missing        bool    `json:"missing,omitzero"`
	MeanPowerW     float64 `json:"mean_power_w"`
	PeakPowerW     float64 `json:"peak_power_w"`
	MeanSMClockMHz float64 `json:"mean_sm_clock_mhz"`
	MinSMClockMHz  float64 `json:"min_sm_clock_mhz"`
	MaxSMClockMHz  float64 `json:"max_sm_clock_mhz"`
	MeanMemClkMHz  float64 `json:"mean_mem_clock_mhz"`
	PeakTempC      float64 `json:"peak_temp_c"`
	MeanUtilPct    float64 `json:"mean_util_pct"`
	PeakMemUsedMiB float64 `json:"peak_mem_used_mib"`
	MemTotalMiB    float64 `json:"mem_total_mib"`
	// Throttle is the time the GPU's clocks were held by each limit the
	// tool names ("power cap", "thermal", ...), longest first.
	Throttle []LimitTime `json:"throttle,omitempty"`
}

// LimitTime is the time spent at one clock limit.
type LimitTime struct {
	Limit   string  `json:"limit"`
	Seconds float64 `json:"seconds"`
}

// PowerPoint is one reading of the GPUs' summed power.
type PowerPoint struct {
	T float64 `json:"t"`
	W float64 `json:"w"`
}

// reported are the GPUs the tool reported.
func (t *Telemetry) reported() []GPUTelemetry {
	var out []GPUTelemetry
	for _, g := range t.GPUs {
		if !g.Missing && g.Samples > 0 {
			out = append(out, g)
		}
	}
	return out
}

// NumGPUs is the number of GPUs the phase was sampled on.
func (t *Telemetry) NumGPUs() int { return len(t.GPUs) }

// MeanPowerW is the GPUs' summed mean power.
func (t *Telemetry) MeanPowerW() float64 {
	var w float64
	for _, g := range t.reported() {
		w += g.MeanPowerW
	}
	return w
}

// PeakPowerW is the highest summed reading, else the sum of the GPUs' peaks.
func (t *Telemetry) PeakPowerW() float64 {
	if len(t.Power) > 0 {
		return slices.MaxFunc(t.Power, func(a, b PowerPoint) int { return cmp.Compare(a.W, b.W) }).W
	}
	var w float64
	for _, g := range t.reported() {
		w += g.PeakPowerW
	}
	return w
}

// EnergyJ is the GPUs' energy over the phase: mean power × duration.
func (t *Telemetry) EnergyJ() float64 { return t.MeanPowerW() * t.DurationS }

// MeanPowerBetween is the summed power's mean over the readings from a to
// b seconds into the phase, the phase's mean when none falls there.
func (t *Telemetry) MeanPowerBetween(a, b float64) float64 {
	var sum float64
	n := 0
	for _, p := range t.Power {
		if p.T >= a && p.T <= b {
			sum += p.W
			n++
		}
	}
	if n == 0 {
		return t.MeanPowerW()
	}
	return sum / float64(n)
}

// Throttle is, per limit, the longest time any GPU spent at it, longest
// first.
func (t *Telemetry) Throttle() []LimitTime {
	by := map[string]float64{}
	for _, g := range t.GPUs {
		for _, l := range g.Throttle {
			by[l.Limit] = max(by[l.Limit], l.Seconds)
		}
	}
	out := make([]LimitTime, 0, len(by))
	for k, v := range by {
		out = append(out, LimitTime{k, v})
	}
	slices.SortFunc(out, func(a, b LimitTime) int {
		if c := cmp.Compare(b.Seconds, a.Seconds); c != 0 {
			return c
		}
		return cmp.Compare(a.Limit, b.Limit)
	})
	return out
}

// ThrottleS is the longest time at any limit.
func (t *Telemetry) ThrottleS() float64 {
	if l := t.Throttle(); len(l) > 0 {
		return l[0].Seconds
	}
	return 0
}

// MemPeak is the highest used memory of any GPU and that GPU's capacity, MiB.
func (t *Telemetry) MemPeak() (used, total float64) {
	for _, g := range t.reported() {
		if g.PeakMemUsedMiB > used || total == 0 {
			used, total = g.PeakMemUsedMiB, g.MemTotalMiB
		}
	}
	return used, total
}

// SMClock is the GPUs' mean graphics clock and the lowest and highest
// readings, MHz (0 when not reported).
func (t *Telemetry) SMClock() (mean, lo, hi float64) {
	n := 0
	for _, g := range t.reported() {
		if g.MeanSMClockMHz <= 0 {
			continue
		}
		mean += g.MeanSMClockMHz
		if lo == 0 || g.MinSMClockMHz < lo {
			lo = g.MinSMClockMHz
		}
		hi = max(hi, g.MaxSMClockMHz)
		n++
	}
	if n > 0 {
		mean /= float64(n)
	}
	return mean, lo, hi
}

// Missing are the GPUs the tool never reported.
func (t *Telemetry) Missing() []int {
	var out []int
	for _, g := range t.GPUs {
		if g.Missing || g.Samples == 0 {
			out = append(out, g.Index)
		}
	}
	return out
}

// Energy is a level's energy figures: its GPUs' energy over its measured
// requests against the tokens and requests they served. Zero figures when
// the level has no telemetry or no output.
type Energy struct {
	MeanW, PeakW    float64
	J               float64
	JPerOutToken    float64
	JPerRequest     float64
	OutTokensPerJ   float64
	ThrottleS       float64
	MemUsedMiB      float64
	MemTotalMiB     float64
	SMClockMeanMHz  float64
	SMClockMinMHz   float64
	NumGPUs         int
	GPUHours        float64
	InTokens        int
	OutTokens       int
	ThrottleLimits  []LimitTime
	DurationSeconds float64
}

// EnergyOf is the energy figures of a level; false when it has no
// telemetry of its measured requests.
func EnergyOf(l *Level) (Energy, bool) {
	t := l.Telemetry
	if t == nil || len(t.reported()) == 0 {
		return Energy{}, false
	}
	e := Energy{MeanW: t.MeanPowerW(), PeakW: t.PeakPowerW(), ThrottleS: t.ThrottleS(), ThrottleLimits: t.Throttle(),
		NumGPUs: t.NumGPUs(), InTokens: l.TotalInputTokens, OutTokens: l.TotalOutputTokens, DurationSeconds: l.DurationS}
	// The requests' window (the level's duration) is what the tokens
	// were served in; the sampler's own span differs by its start-up.
	dur := l.DurationS
	if dur <= 0 {
		dur = t.DurationS
	}
	e.J = e.MeanW * dur
	e.GPUHours = float64(e.NumGPUs) * dur / 3600
	e.MemUsedMiB, e.MemTotalMiB = t.MemPeak()
	e.SMClockMeanMHz, e.SMClockMinMHz, _ = t.SMClock()
	if l.TotalOutputTokens > 0 {
		e.JPerOutToken = e.J / float64(l.TotalOutputTokens)
	}
	if l.Completed > 0 {
		e.JPerRequest = e.J / float64(l.Completed)
	}
	if e.J > 0 {
		e.OutTokensPerJ = float64(l.TotalOutputTokens) / e.J
	}
	return e, true
}

// CostPerMTokens is the cost of a level's GPU time per million input and
// per million output tokens at price dollars per GPU-hour: the whole cost
// over each side's tokens (as serving benchmarks quote it), so the two do
// not add up. NaN where the level served no such tokens.
func (e Energy) CostPerMTokens(price float64) (in, out float64) {
	cost := price * e.GPUHours
	in, out = math.NaN(), math.NaN()
	if e.InTokens > 0 {
		in = cost / float64(e.InTokens) * 1e6
	}
	if e.OutTokens > 0 {
		out = cost / float64(e.OutTokens) * 1e6
	}
	return in, out
}
