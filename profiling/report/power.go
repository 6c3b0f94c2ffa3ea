package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/internal/svgchart"
	"github.com/profile-model/profile-model/inventory/analysis"
)

// EnergyChart is the chart of energy per output token and output tokens
// per joule against concurrency.
const EnergyChart = "energy.svg"

// Thresholds of the throttling observation.
const (
	throttleSharePct = 5.0 // a level held at a limit this share of its time was throttled
	clockDropFrac    = 0.9 // ... or whose lowest clock fell under 90% of the run's highest
)

// energy is a level's energy figures on the engine's clock (a simulated
// engine run faster than real time: its seconds, joules and GPU-hours
// scaled back, its watts as they were); false without telemetry.
func (v *view) energy(l *level) (results.Energy, bool) {
	if l.Result == nil {
		return results.Energy{}, false
	}
	e, ok := results.EnergyOf(l.Result)
	if !ok {
		return e, false
	}
	if s := v.timeScale(); s != 1 {
		e.J *= s
		e.JPerOutToken *= s
		e.JPerRequest *= s
		e.OutTokensPerJ /= s
		e.ThrottleS *= s
		e.GPUHours *= s
		e.DurationSeconds *= s
		lims := make([]results.LimitTime, len(e.ThrottleLimits))
		for i, t := range e.ThrottleLimits {
			lims[i] = results.LimitTime{Limit: t.Limit, Seconds: t.Seconds * s}
		}
		e.ThrottleLimits = lims
	}
	return e, true
}

// energyLevels are the levels with telemetry of their requests.
func (v *view) energyLevels() []*level {
	var out []*level
	for _, l := range v.r.levels {
		if _, ok := v.energy(l); ok {
			out = append(out, l)
		}
	}
	return out
}

func gibS(mib float64) string { return f1(mib / 1024) }

// powerSection writes "GPU power and energy": per level the GPUs' power,
// energy per output token and per request, tokens per joule, clocks, time
// at a limit and memory, the cost per million tokens at the GPU price,
// and the energy of the decode steps apportioned to the layer roles. Runs
// without telemetry have no such section.
func (v *view) powerSection(b *md) {
	ls := v.energyLevels()
	if len(ls) == 0 {
		return
	}
	b.p("## GPU power and energy\n\n")
	price, priceFrom := v.price()
	head := []string{"concurrency", "GPUs", "mean W", "peak W", "energy (J)", "J / output token", "J / request", "output tok / J",
		"graphics clock MHz (lowest)", "time at a limit", "memory used (GiB)"}
	align := "rrrrrrrrrlr"
	if price > 0 {
		head = append(head, "$ / M input tok", "$ / M output tok")
		align += "rr"
	}
	var rows [][]string
	for _, l := range ls {
		e, _ := v.energy(l)
		lim := dash
		if len(e.ThrottleLimits) > 0 {
			var parts []string
			for _, t := range e.ThrottleLimits {
				parts = append(parts, fmt.Sprintf("%s s %s", f1(t.Seconds), t.Limit))
			}
			lim = strings.Join(parts, ", ")
		}
		clk := dash
		if e.SMClockMeanMHz > 0 {
			clk = fmt.Sprintf("%.0f (%.0f)", e.SMClockMeanMHz, e.SMClockMinMHz)
		}
		mem := dash
		if e.MemTotalMiB > 0 {
			mem = fmt.Sprintf("%s of %s (%s)", gibS(e.MemUsedMiB), gibS(e.MemTotalMiB), pctS(100*e.MemUsedMiB/e.MemTotalMiB))
		}
		row := []string{strconv.Itoa(l.Conc), strconv.Itoa(e.NumGPUs), f1(e.MeanW), f1(e.PeakW), f1(e.J), f4(e.JPerOutToken), f2(e.JPerRequest),
			f2(e.OutTokensPerJ), clk, lim, mem}
		if price > 0 {
			in, out := e.CostPerMTokens(price)
			row = append(row, orDash(in, f4), orDash(out, f4))
		}
		rows = append(rows, row)
	}
	b.table(head, align, rows)
	b.p("Power is the GPUs' summed draw over each level's measured requests as %s reported it (%s); energy is that mean power over the level's duration, so J per output token charges the prefill of its prompts to its output tokens too. The warm-up before each level is sampled apart and not counted.", v.telemetryTool(ls), cmp0(v.r.info.Telemetry, "see run.json"))
	if s := v.timeScale(); s != 1 {
		b.p(" The run was accelerated %g×: seconds and joules are on the engine's clock.", s)
	}
	if price > 0 {
		b.p(" Cost is the level's GPU-hours at $%s per GPU-hour (%s) over its input tokens, and over its output tokens (each side carries the whole cost, as serving benchmarks quote it).", f2(price), priceFrom)
	}
	b.p("\n\n")
	var warm []string
	for _, l := range ls {
		if w := l.Result.WarmupTelemetry; w != nil && w.MeanPowerW() > 0 {
			warm = append(warm, fmt.Sprintf("%s W before conc %d", f1(w.MeanPowerW()), l.Conc))
		}
	}
	if len(warm) > 0 {
		b.p("The warm-ups drew %s (mean).\n\n", strings.Join(warm, ", "))
	}
	if t := v.energyTrend(ls); t != "" {
		b.p("%s\n\n", t)
	}
	if len(ls) > 1 {
		b.p("![Energy per output token against concurrency](%s)\n\n", EnergyChart)
	}
	v.roleEnergy(b, ls)
}

// price is the price of a GPU-hour and where it comes from: --gpu-price
// (of report, else of run), else the peaks file's line for the GPU.
func (v *view) price() (float64, string) {
	if v.r.price > 0 {
		return v.r.price, "--gpu-price"
	}
	if g, _ := v.gpu(); g != "" && v.r.peaks != nil {
		if p, ok := v.r.peaks.Find(g); ok && p.USDPerHour > 0 {
			return p.USDPerHour, "the peaks file's price for " + p.GPU
		}
	}
	return 0, ""
}

func f4(v float64) string { return noNegZero(strconv.FormatFloat(v, 'f', 4, 64)) }

func cmp0(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// telemetryTool names the tool of the levels' readings.
func (v *view) telemetryTool(ls []*level) string {
	if t := ls[0].Result.Telemetry.Tool; t == "sim" {
		return "the simulated engine"
	} else if t != "" {
		return "`" + t + "`"
	}
	return "the GPU tool"
}

// energyTrend says how energy per output token moves with concurrency.
func (v *view) energyTrend(ls []*level) string {
	if len(ls) < 2 {
		return ""
	}
	first, _ := v.energy(ls[0])
	last, _ := v.energy(ls[len(ls)-1])
	if first.JPerOutToken <= 0 || last.JPerOutToken <= 0 {
		return ""
	}
	verb := "falls"
	if last.JPerOutToken > first.JPerOutToken {
		verb = "rises"
	}
	best, bestJ := ls[0], first.JPerOutToken
	for _, l := range ls[1:] {
		if e, _ := v.energy(l); e.JPerOutToken > 0 && e.JPerOutToken < bestJ {
			best, bestJ = l, e.JPerOutToken
		}
	}
	return fmt.Sprintf("**Energy per output token %s %s× from conc %d to conc %d** (%s → %s J, %s → %s output tokens per joule, at %s → %s W); the most tokens per joule at conc %d.",
		verb, f2(math.Max(first.JPerOutToken, last.JPerOutToken)/math.Min(first.JPerOutToken, last.JPerOutToken)), ls[0].Conc, ls[len(ls)-1].Conc,
		f4(first.JPerOutToken), f4(last.JPerOutToken), f2(first.OutTokensPerJ), f2(last.OutTokensPerJ), f1(first.MeanW), f1(last.MeanW), best.Conc)
}

// roleEnergyRow is the energy per decode-step token apportioned to one
// group, in joules, per level (NaN where a level has none).
type roleEnergyRow struct {
	group string
	j     []float64
}

// roleEnergyRows apportions each level's decode-step energy to the groups.
func (v *view) roleEnergyRows(ls []*level) []roleEnergyRow {
	var rows []roleEnergyRow
	for _, g := range analysis.EnergyGroups {
		r := roleEnergyRow{group: g, j: make([]float64, len(ls))}
		found := false
		for i, l := range ls {
			r.j[i] = math.NaN()
			for _, e := range l.File.RoleEnergy(l.Result) {
				if e.Group == g {
					r.j[i], found = e.J, true
				}
			}
		}
		if found {
			rows = append(rows, r)
		}
	}
	return rows
}

// roleEnergy writes the per-role energy table.
func (v *view) roleEnergy(b *md, ls []*level) {
	var with []*level
	for _, l := range ls {
		if l.File.RoleEnergy(l.Result) != nil {
			with = append(with, l)
		}
	}
	if len(with) == 0 {
		return
	}
	b.p("### Energy per layer role (decode)\n\n")
	head := []string{"role"}
	for _, l := range with {
		head = append(head, fmt.Sprintf("conc %d (mJ / token)", l.Conc))
	}
	var rows [][]string
	total := make([]float64, len(with))
	for _, r := range v.roleEnergyRows(with) {
		row := []string{r.group}
		for i, j := range r.j {
			row = append(row, orDash(j*1000, f2))
			if !math.IsNaN(j) {
				total[i] += j
			}
		}
		rows = append(rows, row)
	}
	trow := []string{"**decode step, per token**"}
	for _, j := range total {
		trow = append(trow, "**"+f2(j*1000)+"**")
	}
	rows = append(rows, trow)
	b.table(head, "l"+strings.Repeat("r", len(with)), rows)
	b.p("An apportionment, not a measurement: the GPUs' mean power over the profiled window times the decode step's time is the step's energy, split among the layer positions by their share of the step's GPU time (the idle gaps and the kernels outside the layers apart) and divided by the step's batch. No tool measures a kernel's own energy; a memory-bound position draws less than its time share says, a compute-bound one more.\n\n")
}

// throttling names the levels whose GPUs a limit held (power cap,
// thermal, ...) for a noticeable share of the level, or whose clocks fell
// well below the run's highest: their kernel times are a throttled GPU's.
func (v *view) throttling() string {
	ls := v.energyLevels()
	var top float64
	for _, l := range ls {
		_, _, hi := l.Result.Telemetry.SMClock()
		top = max(top, hi)
	}
	var parts []string
	var limits []string
	for _, l := range ls {
		e, _ := v.energy(l)
		var held []string
		for _, t := range e.ThrottleLimits {
			if e.DurationSeconds > 0 && 100*t.Seconds/e.DurationSeconds >= throttleSharePct {
				held = append(held, fmt.Sprintf("%s for %s s of its %s s (%s)", t.Limit, f1(t.Seconds), f1(e.DurationSeconds), pctS(min(100, 100*t.Seconds/e.DurationSeconds))))
				if !contains(limits, t.Limit) {
					limits = append(limits, t.Limit)
				}
			}
		}
		fell := top > 0 && e.SMClockMinMHz > 0 && e.SMClockMinMHz < clockDropFrac*top
		if len(held) == 0 && !fell {
			continue
		}
		s := fmt.Sprintf("conc %d", l.Conc)
		if len(held) > 0 {
			s += " at its " + strings.Join(held, " and ")
		}
		if e.SMClockMeanMHz > 0 {
			s += fmt.Sprintf(" (graphics clock %.0f MHz mean, down to %.0f of the run's %.0f MHz; %s W mean, %s W peak)", e.SMClockMeanMHz, e.SMClockMinMHz, top, f1(e.MeanW), f1(e.PeakW))
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return ""
	}
	what := "**The GPU clocks fell during a level**"
	if len(limits) > 0 {
		what = "**The GPUs were held by their " + strings.Join(limits, " and ") + "**"
	}
	return what + ": " + strings.Join(parts, "; ") + ". The kernel times of these levels are those of a throttled GPU, not of its rated clocks: raise or lift the limit (power cap, cooling) before comparing them, or read them as limited."
}

func contains(v []string, s string) bool {
	for _, x := range v {
		if x == s {
			return true
		}
	}
	return false
}

// energyChart: joules per output token and output tokens per joule
// against concurrency.
func (v *view) energyChart() ([]byte, error) {
	ls := v.energyLevels()
	var jpt, tpj [][2]float64
	for _, l := range ls {
		e, _ := v.energy(l)
		x := float64(l.Conc)
		jpt = append(jpt, [2]float64{x, e.JPerOutToken})
		tpj = append(tpj, [2]float64{x, e.OutTokensPerJ})
	}
	var panels []*svgchart.Panel
	for i, c := range []struct {
		title, label string
		xys          [][2]float64
	}{{"Energy per output token", "J per output token", jpt}, {"Tokens per joule", "output tokens per J", tpj}} {
		panels = append(panels, &svgchart.Panel{Title: c.title, X: concAxis(ls), Y: yFromZero(c.label, maxOf(c.xys), 1.15),
			Series: []svgchart.Series{{Pts: c.xys, Index: i}}})
	}
	return svgchart.Panels(20*cm, 9*cm, panels...), nil
}
