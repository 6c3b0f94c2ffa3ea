package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/inventory/analysis"
)

const dash = "—"

func f1(v float64) string { return noNegZero(strconv.FormatFloat(v, 'f', 1, 64)) }
func f2(v float64) string { return noNegZero(strconv.FormatFloat(v, 'f', 2, 64)) }

// noNegZero prints a value that rounds to zero without a sign.
func noNegZero(s string) string {
	if strings.Trim(s, "-0.") == "" {
		return strings.TrimPrefix(s, "-")
	}
	return s
}

// pctS prints a percentage with one decimal.
func pctS(v float64) string { return f1(v) + "%" }

// signedPct prints a signed percentage: +1.2%, −0.4%.
func signedPct(v float64) string {
	s := strconv.FormatFloat(math.Abs(v), 'f', 1, 64)
	if v < 0 && s != "0.0" {
		return "−" + s + "%"
	}
	return "+" + s + "%"
}

func orDash(v float64, format func(float64) string) string {
	if math.IsNaN(v) {
		return dash
	}
	return format(v)
}

// count prints a parameter count: 228.7 B, 812.3 M.
func count(n int64) string {
	switch {
	case n >= 1e9:
		return f1(float64(n)/1e9) + " B"
	case n >= 1e6:
		return f1(float64(n)/1e6) + " M"
	}
	return strconv.FormatInt(n, 10)
}

func (v *view) markdown() []byte {
	var b md
	v.header(&b)
	v.trustSection(&b)
	v.observationsSection(&b)
	v.modelSection(&b)
	v.throughputSection(&b)
	v.powerSection(&b)
	v.reconciliationSection(&b)
	v.waterfallSection(&b)
	v.inventorySection(&b)
	v.layerSection(&b)
	v.rooflineSection(&b)
	v.scalingSection(&b)
	v.breakdownSection(&b)
	v.warningsSection(&b)
	v.filesSection(&b)
	return b.Bytes()
}

func (v *view) modelName() string {
	if m := v.r.info.Engine.Model; m != "" {
		return m
	}
	for _, l := range v.r.levels {
		if l.Result != nil && l.Result.ModelID != "" {
			return l.Result.ModelID
		}
	}
	return "(model not recorded)"
}

// gpu is the device name from the first trace, else from run.json.
func (v *view) gpu() (name, source string) {
	for _, l := range v.lv {
		if d := l.File.Summary.Device; d != "" {
			return d, "trace"
		}
	}
	for _, l := range v.r.info.Levels {
		if l.Device != "" {
			return l.Device, "trace"
		}
	}
	if g := preflightGPU(v.r.info); g != "" {
		return g, "GPU memory pre-flight"
	}
	return "", ""
}

// timeScale is the simulated engine's clock speed-up (1 when none).
func (v *view) timeScale() float64 {
	if s := v.r.info.Engine.TimeScale; s > 0 {
		return s
	}
	return 1
}

func (v *view) header(b *md) {
	title := v.modelName()
	if g, _ := v.gpu(); g != "" {
		title += " on " + g
	}
	b.p("# Profile: %s\n\n", title)
	var parts []string
	e := v.r.info.Engine
	if e.Kind != "" {
		parts = append(parts, "engine `"+e.Kind+"`")
	}
	if e.TP > 0 {
		parts = append(parts, fmt.Sprintf("TP %d", e.TP))
	}
	concs := make([]string, len(v.r.levels))
	for i, l := range v.r.levels {
		concs[i] = strconv.Itoa(l.Conc)
	}
	parts = append(parts, "concurrency "+strings.Join(concs, ", "))
	if isl, osl := v.lengths(); isl > 0 {
		parts = append(parts, fmt.Sprintf("ISL %d, OSL %d", isl, osl))
	}
	b.p("%s.\n\n", capitalize(strings.Join(parts, "; ")))
	start, end := runTimes(v.r.info)
	switch {
	case !start.IsZero() && !end.IsZero():
		b.p("Run time: %s to %s (%s).\n\n", start.UTC().Format("2006-01-02 15:04:05 MST"), end.UTC().Format("2006-01-02 15:04:05 MST"), end.Sub(start).Round(time.Second))
	case !start.IsZero():
		b.p("Run time: started %s.\n\n", start.UTC().Format("2006-01-02 15:04:05 MST"))
	}
	b.p("Generated from the run directory by `profile-model report RUN_DIR`; all figures below come from its files.\n\n")
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// lengths are the requested input and output lengths.
func (v *view) lengths() (int, int) {
	if sw := v.r.info.Sweep; sw.ISL > 0 {
		return sw.ISL, sw.OSL
	}
	for _, l := range v.r.levels {
		if l.Result != nil && l.Result.RandomInputLen > 0 {
			return l.Result.RandomInputLen, l.Result.RandomOutputLen
		}
	}
	return 0, 0
}

func (v *view) observationsSection(b *md) {
	b.p("## Key observations\n\n")
	obs := v.observations()
	if len(obs) == 0 {
		b.p("None: the run holds no level with both results and a trace analysis.\n\n")
		return
	}
	for _, o := range obs {
		b.p("- %s\n", o)
	}
	b.p("\n")
}

// modelSection writes "Model and setup": the model's architecture (from
// its config.json) and how the engine and the sweep were run.
func (v *view) modelSection(b *md) {
	b.p("## Model and setup\n\n")
	var rows [][]string
	add := func(k, val string) { rows = append(rows, []string{k, esc(val)}) }
	ri := v.r.info
	a := v.r.arch
	traceLayers := 0
	for _, l := range v.lv {
		if t := l.decode(); t != nil {
			traceLayers = t.Layers
		}
	}
	name := v.modelName()
	if a != nil && a.Name != "" {
		name += fmt.Sprintf(" (%s", a.Name)
		if a.ModelType != "" && a.ModelType != a.Name {
			name += ", " + a.ModelType
		}
		name += ")"
	}
	add("Model", name)
	switch {
	case a != nil && a.MoE:
		s := fmt.Sprintf("MoE: %d experts, top-%d", a.Experts, a.TopK)
		switch {
		case a.SharedExperts > 0:
			s += fmt.Sprintf(", %d shared", a.SharedExperts)
		case a.SharedIntermediate > 0:
			s += fmt.Sprintf(", one shared expert of %d", a.SharedIntermediate)
		default:
			s += ", no shared expert"
		}
		s += fmt.Sprintf("; %d MoE layers", a.MoELayers)
		if a.DenseLayers > 0 {
			s += fmt.Sprintf(", %d dense", a.DenseLayers)
		}
		add("Type", s)
	case a != nil:
		add("Type", "dense")
	default:
		add("Type", v.traceKind())
	}
	switch {
	case a != nil && a.Layers > 0 && traceLayers > 0:
		add("Layers", fmt.Sprintf("%d (%d per decode step in the trace)", a.Layers, traceLayers))
	case a != nil && a.Layers > 0:
		add("Layers", strconv.Itoa(a.Layers))
	case traceLayers > 0:
		add("Layers", fmt.Sprintf("%d per decode step (from the trace)", traceLayers))
	}
	if a != nil {
		if a.Hidden > 0 {
			add("Hidden size", strconv.Itoa(a.Hidden))
		}
		if a.Heads > 0 {
			s := fmt.Sprintf("%d heads, %d KV heads, head dim %d", a.Heads, a.KVHeads, a.HeadDim)
			if a.Attention != "" {
				s += " (" + a.Attention + ")"
			}
			add("Attention", s)
		}
		if a.ExpertIntermediate > 0 {
			add("Expert intermediate size", strconv.Itoa(a.ExpertIntermediate))
		}
		if a.Intermediate > 0 {
			add("Intermediate size (dense MLP)", strconv.Itoa(a.Intermediate))
		}
		if a.Vocab > 0 {
			add("Vocabulary", strconv.Itoa(a.Vocab))
		}
		if a.MaxPositions > 0 {
			add("Max positions", strconv.Itoa(a.MaxPositions))
		}
		if a.Params > 0 {
			s := count(a.Params) + " total"
			if a.MoE {
				s += ", " + count(a.ActiveParams) + " active per token"
			}
			add("Parameters (estimate)", s)
		}
		w := a.Dtype
		if q := a.Quantization; q != nil {
			if w != "" {
				w += "; "
			}
			w += "quantised " + q.String()
		}
		if w != "" {
			add("Weights", w)
		}
	}
	e := ri.Engine
	switch {
	case e.KVCacheDType != "":
		add("KV cache dtype", e.KVCacheDType)
	case e.Kind != "":
		add("KV cache dtype", "the engine's default")
	default:
		add("KV cache dtype", "not recorded")
	}
	if g, src := v.gpu(); g != "" {
		add("GPU", g+" (from the "+src+")")
	} else {
		add("GPU", "not recorded")
	}
	if m := v.memoryLine(); m != "" {
		add("GPU memory (estimate)", m)
	}
	if e.TP > 0 {
		add("Tensor parallel", strconv.Itoa(e.TP))
	} else {
		add("Tensor parallel", "not recorded")
	}
	switch {
	case e.Level != nil:
		add("Compilation level", strconv.Itoa(*e.Level))
	case e.Kind != "":
		add("Compilation level", "the engine's default")
	default:
		add("Compilation level", "not recorded")
	}
	switch {
	case e.EnforceEager:
		add("Graphs", "disabled (--enforce-eager)")
	case len(e.CaptureSizes) > 0:
		add("Graph capture sizes", fmt.Sprint(e.CaptureSizes))
	}
	if e.Kind != "" {
		add("Engine", e.Kind)
	}
	if e.MaxNumSeqs > 0 {
		add("Max sequences per batch", strconv.Itoa(e.MaxNumSeqs))
	}
	if e.MaxModelLen > 0 {
		add("Max model length", strconv.Itoa(e.MaxModelLen))
	}
	if len(e.ExtraArgs) > 0 {
		add("Other engine flags", "`"+strings.Join(e.ExtraArgs, " ")+"`")
	}
	if s := v.timeScale(); s != 1 {
		add("Clock", fmt.Sprintf("simulated engine at %g× speed: the client's times were %g× shorter than the trace's; every figure here is on the engine's clock (times × %g, throughputs ÷ %g)", s, s, s, s))
	}
	if w := v.workload(); w != "" {
		add("Workload", w)
	}
	if ri.Tool != "" {
		add("Tool", ri.Tool)
	}
	b.table([]string{"", "value"}, "ll", rows)
	if e.Command != "" {
		b.p("Engine command line:\n\n```sh\n%s\n```\n\n", e.Command)
	}
}

// plural prints n and a noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// perLayer prints kernels per layer: 19, or 17+18 for alternating kinds.
func perLayer(ks []int) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = strconv.Itoa(k)
	}
	return strings.Join(s, "+")
}

// traceKind guesses dense or MoE from the kernels when no config is known.
func (v *view) traceKind() string {
	for _, c := range v.cats {
		if strings.HasPrefix(c.Category, "MoE") {
			return "MoE (no model config; the trace runs " + c.Category + " kernels)"
		}
	}
	if len(v.cats) > 0 {
		return "dense (no model config; the trace runs no MoE kernels)"
	}
	return "not known (no model config, no trace analysis)"
}

func (v *view) workload() string {
	for _, l := range v.r.levels {
		res := l.Result
		if res == nil || res.RandomInputLen == 0 {
			continue
		}
		s := fmt.Sprintf("random prompts, ISL %d, OSL %d, lengths uniform in [⌊L·%g⌋, L]; %d prompts per unit of concurrency",
			res.RandomInputLen, res.RandomOutputLen, res.RandomRangeRatio, res.NumPromptsMul)
		if math.IsInf(res.RequestRate, 1) || res.RequestRate == 0 {
			s += ", closed loop"
		} else {
			s += fmt.Sprintf(", %g requests/s", res.RequestRate)
		}
		return s + fmt.Sprintf(", %s, seed %d", plural(res.NumWarmups, "warmup request"), res.Seed)
	}
	if isl, osl := v.lengths(); isl > 0 {
		return fmt.Sprintf("ISL %d, OSL %d", isl, osl)
	}
	return ""
}

// throughputSection writes "Throughput": the client's figures per level,
// with the latency and throughput charts.
func (v *view) throughputSection(b *md) {
	b.p("## Throughput\n\n")
	var rows [][]string
	// With telemetry, the headline table carries power and energy per
	// token too (the section below has the rest).
	power := len(v.energyLevels()) > 0
	for _, l := range v.r.levels {
		var row []string
		if !l.HaveRow {
			row = []string{strconv.Itoa(l.Conc), bsCell(l), dash, dash, dash, dash, dash, dash, dash, dash, dash}
		} else {
			r := l.Row
			row = []string{strconv.Itoa(l.Conc), bsCell(l), strconv.Itoa(r.Completed), strconv.Itoa(r.Failed),
				f2(r.ReqS), f1(r.OutTokS), f1(r.TotalTokS), f2(r.TTFTP50MS), f2(r.TTFTP99MS), f2(r.TPOTP50MS), f2(r.TPOTP99MS)}
		}
		if power {
			if e, ok := v.energy(l); ok {
				row = append(row, f1(e.MeanW), f4(e.JPerOutToken))
			} else {
				row = append(row, dash, dash)
			}
		}
		rows = append(rows, row)
	}
	head, align := []string{"concurrency", "decode bs", "completed", "failed", "req/s", "output tok/s", "total tok/s",
		"TTFT p50 (ms)", "TTFT p99 (ms)", "TPOT p50 (ms)", "TPOT p99 (ms)"}, "rrrrrrrrrrr"
	sol := v.hasSOL()
	if sol {
		// Right after the client's columns, where applyTrust finds them.
		head, align = append(head, "SOL step (ms)", "step ÷ SOL"), align+"rr"
		for i, l := range v.r.levels {
			rows[i] = slices.Insert(rows[i], 11, v.solCells(l)...)
		}
	}
	if power {
		head, align = append(head, "GPU W (mean)", "J / output token"), align+"rr"
	}
	for i, l := range v.r.levels {
		v.applyTrust(l, rows[i], sol)
	}
	b.table(head, align, rows)
	b.p("The decode batch size is the most frequent one in the level's trace (what the GPU ran), not the client's concurrency.\n\n")
	if left := v.leftOutNotes(); len(left) > 0 {
		b.p("%s Left out by the trust checks:\n\n%s\n\n", leftOut, strings.Join(left, "\n"))
	}
	if sol {
		v.solNote(b)
	}
	if sc := v.timeScale(); sc != 1 {
		b.p("The run was accelerated %g× (simulated engine): throughputs and latencies here are scaled back to the engine's clock, the trace's.\n\n", sc)
	}
	if v.haveRows() {
		b.p("![Latency against concurrency](%s)\n\n![Throughput against concurrency](%s)\n\n![Throughput against TPOT](%s)\n\n", LatencyChart, ThroughputChart, ThroughputTPOTChart)
	}
}

func bsCell(l *level) string {
	if l.File != nil && l.File.DecodeBS() > 0 {
		return strconv.Itoa(l.File.DecodeBS())
	}
	if l.Row.DecodeBS > 0 {
		return strconv.Itoa(l.Row.DecodeBS)
	}
	return dash
}

func (v *view) haveRows() bool {
	for _, l := range v.r.levels {
		if l.HaveRow {
			return true
		}
	}
	return false
}

// tpot is the client's TPOT of a level in ms at the trace's clock, and
// which statistic it is ("mean" or "median"); NaN when unknown.
func (v *view) tpot(l *level) (float64, string) {
	s := v.timeScale()
	switch {
	case l.Result != nil && l.Result.Completed > 0:
		return l.Result.TPOT.Mean * s, "mean"
	case l.HaveRow && l.Row.Completed > 0:
		return l.Row.TPOTP50MS, "median" // already on the engine's clock (engineClock)
	}
	return math.NaN(), ""
}

// closure is how well a level's reconciliation closes, in percent: the
// client's TPOT against the trace's time per token, and the decode step
// against table GPU-busy + gaps.
func (v *view) closure(l *level) (tpotPct, stepPct float64) {
	st := l.File.StepTime
	tpotPct, stepPct = math.NaN(), math.NaN()
	if t, _ := v.tpot(l); !math.IsNaN(t) && t > 0 && st.TokenUS > 0 {
		tpotPct = 100 * (t - st.TokenUS/1000) / t
	}
	if st.StepUS > 0 && st.Layers > 0 {
		stepPct = 100 * (st.KernelUS - st.TableBusyUS) / st.StepUS
	}
	return tpotPct, stepPct
}

// reconciliationSection writes "Step-time reconciliation": where the time
// between two tokens goes per level, client TPOT against the trace's decode
// step (GPU-busy, gaps between kernels, prefill).
func (v *view) reconciliationSection(b *md) {
	b.p("## Step-time reconciliation\n\n")
	var lv []*level
	for _, l := range v.lv {
		if l.File.StepTime.Timed > 0 {
			lv = append(lv, l)
		}
	}
	if len(lv) == 0 {
		b.p("No level has timed decode steps in its trace analysis.\n\n")
		return
	}
	b.WriteString("Where the time between two tokens goes, per level. The trace's decode step runs from a step's start to the next step's start on the GPU timeline; " +
		"GPU-busy is the union of kernel intervals in it (kernels that overlap on several streams count once), gaps are the rest (kernel launches, host scheduling, sampling sync). " +
		"Averages are over the decode steps weighted by their batch size, so they are per token as TPOT is; prefill steps are spread over the tokens they delay. " +
		"It closes when the client's TPOT matches the trace's time per token and the layer table's kernel time matches the measured one, each within 3%.\n\n")
	head := []string{""}
	for _, l := range lv {
		head = append(head, l.name())
	}
	var rows [][]string
	line := func(name string, f func(l *level, st analysis.StepTime) string) {
		r := []string{name}
		for _, l := range lv {
			r = append(r, f(l, l.File.StepTime))
		}
		rows = append(rows, r)
	}
	ms := func(us float64) string { return f2(us / 1000) }
	stat := ""
	for _, l := range lv {
		if _, s := v.tpot(l); s != "" {
			stat = s
			break
		}
	}
	tpotName := "client TPOT, " + stat + " (ms)"
	if v.timeScale() != 1 {
		tpotName = fmt.Sprintf("client TPOT, %s, × %g clock (ms)", stat, v.timeScale())
	}
	line("decode batch size", func(l *level, _ analysis.StepTime) string { return strconv.Itoa(l.BS()) })
	line(tpotName, func(l *level, _ analysis.StepTime) string { t, _ := v.tpot(l); return orDash(t, f2) })
	line("**trace: time per token (ms)**", func(_ *level, st analysis.StepTime) string { return "**" + ms(st.TokenUS) + "**" })
	line("TPOT − trace", func(l *level, _ analysis.StepTime) string { p, _ := v.closure(l); return orDash(p, signedPct) })
	line("= decode step (ms)", func(_ *level, st analysis.StepTime) string { return ms(st.StepUS) })
	line("+ prefill steps, per token (ms)", func(_ *level, st analysis.StepTime) string { return ms(st.PrefillPerTokenUS) })
	if slices.ContainsFunc(lv, func(l *level) bool { return l.File.StepTime.OtherSteps > 0 }) {
		line("+ other steps, per token (ms)", func(_ *level, st analysis.StepTime) string { return ms(st.OtherPerTokenUS) })
	}
	line("decode step: GPU-busy from the layer table (ms)", func(_ *level, st analysis.StepTime) string { return ms(st.TableBusyUS) })
	line("· layers × per-layer time", func(_ *level, st analysis.StepTime) string {
		return fmt.Sprintf("%d × %s µs = %s ms", st.Layers, f1(st.LayerUS), ms(float64(st.Layers)*st.LayerUS))
	})
	line("· prologue + epilogue + copies (ms)", func(_ *level, st analysis.StepTime) string {
		return ms(st.PrologueUS + st.EpilogueUS + st.CopyUS)
	})
	line("− overlap of kernels on several streams (ms)", func(_ *level, st analysis.StepTime) string { return ms(st.KernelUS - st.BusyUS) })
	line("+ gaps between kernels (ms)", func(_ *level, st analysis.StepTime) string {
		return fmt.Sprintf("%s (%s)", ms(st.GapUS), pctS(100*st.GapUS/st.StepUS))
	})
	line("+ residual: kernel time measured − table (ms)", func(l *level, st analysis.StepTime) string {
		_, p := v.closure(l)
		return fmt.Sprintf("%s (%s)", ms(st.KernelUS-st.TableBusyUS), orDash(p, signedPct))
	})
	line("GPU-busy measured (ms)", func(_ *level, st analysis.StepTime) string { return ms(st.BusyUS) })
	line("kernel time summed (ms)", func(_ *level, st analysis.StepTime) string { return ms(st.KernelUS) })
	line("decode steps timed", func(_ *level, st analysis.StepTime) string { return strconv.Itoa(st.Timed) })
	line("level duration: client / trace's GPU span (s)", func(l *level, _ analysis.StepTime) string {
		span := l.File.Summary.Coverage.GPUSpanS
		if l.Result == nil || l.Result.DurationS == 0 || span == 0 {
			return dash
		}
		return fmt.Sprintf("%s / %s", f2(l.Result.DurationS*v.timeScale()), f2(span))
	})
	line("prefill steps (share of the window)", func(_ *level, st analysis.StepTime) string {
		return fmt.Sprintf("%d (%s)", st.PrefillSteps, pctS(st.PrefillPct))
	})
	align := "l" + strings.Repeat("r", len(lv))
	b.table(head, align, rows)
	var open []string
	for _, l := range lv {
		tp, sp := v.closure(l)
		if math.Abs(tp) > closeTolPct {
			open = append(open, fmt.Sprintf("%s: the client's TPOT is %s off the trace's time per token", l.name(), pctS(math.Abs(tp))))
		}
		if math.Abs(sp) > closeTolPct {
			open = append(open, fmt.Sprintf("%s: the layer table's kernel time is %s of the step off the measured one", l.name(), pctS(math.Abs(sp))))
		}
	}
	if v.hasTokenTimes() {
		b.p("![Where a token's time goes](%s)\n\n", TokenTimeChart)
	}
	if len(open) == 0 {
		b.p("It closes within 3%% at every level.\n\n")
		return
	}
	b.p("It does not close within 3%% everywhere: %s. ", strings.Join(open, "; "))
	b.p("A TPOT above the trace means time the GPU timeline does not see (the client, streaming, a host stall, or on the simulated engine its clock falling behind: " +
		"then the level lasts longer on the client's clock than the trace's GPU span, by about as much); " +
		"a residual means layers that differ from step to step or kernels outside the table's layers, prologue and epilogue.\n\n")
}

// inventorySection writes "Kernel inventory": kernel time by category and
// provider at each level.
func (v *view) inventorySection(b *md) {
	b.p("## Kernel inventory\n\n")
	if len(v.lv) == 0 {
		b.p("No trace analysis in the run.\n\n")
		return
	}
	type key struct{ cat, prov, phase string }
	type agg struct {
		names map[string]bool
		pct   []float64
	}
	byKey := map[key]*agg{}
	var keys []key
	for i, l := range v.lv {
		inv := l.File.Inventory
		if inv == nil {
			continue
		}
		phase := kernelPhase(l)
		for _, k := range inv.Kernels.All() {
			kk := key{k.Category, k.Provider, phase(k)}
			a := byKey[kk]
			if a == nil {
				a = &agg{names: map[string]bool{}, pct: make([]float64, len(v.lv))}
				byKey[kk] = a
				keys = append(keys, kk)
			}
			a.names[k.Kernel] = true
			a.pct[i] += k.Pct
		}
	}
	catOrder := map[string]int{}
	for i, c := range v.cats {
		catOrder[c.Category] = i
	}
	last := len(v.lv) - 1
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(catOrder[a.cat], catOrder[b.cat]), cmp.Compare(byKey[b].pct[last], byKey[a].pct[last]), cmp.Compare(a.prov, b.prov), cmp.Compare(a.phase, b.phase))
	})
	head := []string{"category", "provider", "phase", "kernels"}
	for _, n := range v.names {
		head = append(head, n+" (% of GPU time)")
	}
	var rows [][]string
	for _, k := range keys {
		a := byKey[k]
		r := []string{esc(k.cat), esc(orNone(k.prov)), k.phase, strconv.Itoa(len(a.names))}
		for _, p := range a.pct {
			r = append(r, f1(p))
		}
		rows = append(rows, r)
	}
	b.p("Every distinct kernel of each level's trace, by category, provider and phase (decode: in the decode steps' layers or around them; prefill: in the prefill steps' layers; both; other: outside either, e.g. warm-up); kernels counts distinct names over all levels.\n\n")
	b.table(head, "lllr"+strings.Repeat("r", len(v.lv)), rows)
	var other []string
	for i, l := range v.lv {
		if inv := l.File.Inventory; inv != nil {
			other = append(other, fmt.Sprintf("%s %s", v.names[i], pctS(inv.OtherPct)))
		}
	}
	b.p("Kernel time no category rule matched (%s): %s.\n\n", inventory.Other, strings.Join(other, ", "))
	top := v.lv[last]
	if inv := top.File.Inventory; inv != nil && inv.Kernels.Len() > 0 {
		b.p("Top kernels at %s by total time (a kernel that runs at several positions of the decode layer lists each role):\n\n", top.name())
		roles := kernelRoles(top)
		var rows [][]string
		for i, k := range inv.Kernels.All() {
			if i == 10 {
				break
			}
			rows = append(rows, []string{code(esc(k.ShortName)), esc(cmp.Or(roles[k.Kernel], "outside the layers")), esc(k.Category), esc(orNone(k.Provider)), strconv.Itoa(k.Count),
				f2(k.Total.MS()), f1(k.AvgUS), f1(k.Pct)})
		}
		b.table([]string{"kernel", "role in the decode layer", "category", "provider", "launches", "total (ms)", "avg (µs)", "% of GPU time"}, "llllrrrr", rows)
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// layerSection writes "Per-layer time by position": each kernel position
// of the layer across levels, with its slope and trend word.
func (v *view) layerSection(b *md) {
	b.p("## Per-layer time by position\n\n")
	if len(v.rows) == 0 {
		b.p("No level has a decode layer table.\n\n")
		return
	}
	var layers []string
	for i, l := range v.lv {
		if t := l.decode(); t != nil {
			layers = append(layers, fmt.Sprintf("%s %d × %s", v.names[i], t.Layers, perLayer(t.KernelsPerLayer)))
		}
	}
	b.WriteString("Average time of each kernel position of a decode layer (µs, over every layer of every decode step), aligned across levels by kernel and role; " +
		"layers per step × kernels per layer: " + strings.Join(layers, ", ") + ". " +
		"The slope is µs per added sequence of decode batch size, from a least-squares fit (R² its quality, shown from three levels on); the trend word follows the rules at the end of this section. " +
		v.roleSources() + "\n\n")
	kinds := 0
	for _, r := range v.rows {
		kinds = max(kinds, r.Kind+1)
	}
	for kind := range kinds {
		if kinds > 1 {
			b.p("### Layer kind %d\n\n", kind)
		}
		// With the engine's capture traces (--mark-trace) each position
		// also says which module launched it.
		module := func(r *row) string {
			for _, c := range r.Cells {
				if c != nil && c.Module != "" {
					return c.Module
				}
			}
			return ""
		}
		withModule := false
		for _, r := range v.rows {
			withModule = withModule || (r.Kind == kind && module(r) != "")
		}
		head := []string{"pos", "position (kernel and role)", "category", "provider"}
		align := "rlll"
		if withModule {
			head = append(head, "module")
			align += "l"
		}
		head = append(head, v.names...)
		head = append(head, "µs / added seq", "R²", "trend")
		var rows [][]string
		total := make([]float64, len(v.lv))
		present := make([]bool, len(v.lv))
		for _, r := range v.rows {
			if r.Kind != kind {
				continue
			}
			p := r.first()
			row := []string{strconv.Itoa(r.Pos), r.Name, esc(p.Category), esc(orNone(p.Provider))}
			if withModule {
				row = append(row, code(esc(orNone(module(r)))))
			}
			for i, c := range r.Cells {
				if c == nil {
					row = append(row, dash)
					continue
				}
				row = append(row, f1(c.AvgUS))
				total[i] += c.AvgUS
				present[i] = true
			}
			row = append(row, slopeCell(r.Fit), r2Cell(r.Fit), r.Trend)
			rows = append(rows, row)
		}
		row := []string{"", "**layer total**", "", ""}
		if withModule {
			row = append(row, "")
		}
		for i := range total {
			if present[i] {
				row = append(row, "**"+f1(total[i])+"**")
			} else {
				row = append(row, dash)
			}
		}
		rows = append(rows, append(row, "", "", ""))
		b.table(head, align+strings.Repeat("r", len(v.lv))+"rrl", rows)
	}
	top := v.lv[len(v.lv)-1]
	if t := top.decode(); t != nil && len(t.Prologue)+len(t.Epilogue) > 0 {
		b.p("Around the layers at %s: prologue %s; epilogue %s.\n\n", top.name(), codeList(t.Prologue), codeList(t.Epilogue))
	}
	if v.hasPositionFits() {
		b.p("![Decode layer positions against batch size](%s)\n\n", PositionsChart)
	}
	b.p("### Kernels that change between levels\n\n")
	if len(v.changes) == 0 {
		b.p("The same kernels run at every level.\n\n")
	} else {
		for _, c := range v.changes {
			b.p("- %s\n", v.describeChange(c))
		}
		b.p("\n")
	}
	v.prefillTable(b)
	b.p("Trend words, from each position's times against the decode batch size (x) across levels: " +
		"**flat** when the times spread less than 10%% of their mean (or 0.5 µs); " +
		"**step change at conc N** at the level where the kernel at the position changes, when that change moves the time by more than the flat margin and makes at least 80%% of its movement, or when the linear fit has R² under 0.9; without a kernel change, when R² is under 0.9 and one jump makes at least 80%% of the movement; " +
		"a position a line fits (R² 0.9 or more) is linear even when its kernel changes on the way; " +
		"**not linear** when the fit has R² under 0.9 otherwise; " +
		"**grows with context** for a growing kernel that reads the KV cache (paged attention, attention reduce, KV cache writes: their work is batch × context length); " +
		"**linear in batch** for any other growing position; **falls with batch** when the slope is negative; **only at conc N** for a kernel that runs at one level.\n\n")
}

func slopeCell(f fit) string {
	if f.N < 2 {
		return dash
	}
	return f2(f.Slope)
}

func r2Cell(f fit) string {
	if f.N < 3 {
		return dash
	}
	return f2(f.R2)
}

func codeList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = code(esc(n))
	}
	return strings.Join(out, ", ")
}

// describeChange says what a change does, in words.
func (v *view) describeChange(c change) string {
	name := func(p *inventory.Position) string { return code(esc(p.Label())) }
	var olds, news []string
	for _, r := range c.Old {
		olds = append(olds, name(r.last(c.Level)))
	}
	for _, r := range c.New {
		news = append(news, name(r.Cells[c.Level]))
	}
	where := func(rs []*row) string {
		ps := make([]string, len(rs))
		for i, r := range rs {
			ps[i] = strconv.Itoa(r.Pos)
		}
		if len(ps) == 1 {
			return "pos " + ps[0]
		}
		return "pos " + strings.Join(ps, ", ")
	}
	prefix := "From " + v.names[c.Level]
	if bs := v.lv[c.Level].BS(); bs != v.lv[c.Level].Conc {
		prefix += fmt.Sprintf(" (decode bs %d)", bs)
	}
	switch {
	case len(c.Old) == 1 && len(c.New) == 1 && c.Old[0] == c.New[0] && olds[0] == news[0]:
		return fmt.Sprintf("%s, %s: %s runs another instance (the same kernel with other template arguments).", prefix, where(c.New), news[0])
	case len(c.Old) == 0:
		return fmt.Sprintf("%s, %s: %s appears.", prefix, where(c.New), strings.Join(news, " + "))
	case len(c.New) == 0:
		return fmt.Sprintf("%s: %s (%s) no longer runs.", prefix, strings.Join(olds, " + "), where(c.Old))
	case len(c.Old) > 1 && len(c.New) == 1:
		return fmt.Sprintf("%s, %s: %s are fused into %s.", prefix, where(c.New), strings.Join(olds, " + "), news[0])
	case len(c.Old) == 1 && len(c.New) > 1:
		return fmt.Sprintf("%s, %s: %s is split into %s.", prefix, where(c.New), olds[0], strings.Join(news, " + "))
	}
	return fmt.Sprintf("%s, %s: %s replaced by %s.", prefix, where(c.New), strings.Join(olds, " + "), strings.Join(news, " + "))
}

func (v *view) prefillTable(b *md) {
	var rows [][]string
	for i, l := range v.lv {
		t := l.File.Prefill
		if t == nil || t.Steps == 0 {
			continue
		}
		rows = append(rows, []string{v.names[i], strconv.Itoa(t.Steps), strconv.Itoa(t.Layers), perLayer(t.KernelsPerLayer), f1(analysis.LayerTime(&t.LayerTable))})
	}
	if len(rows) == 0 {
		return
	}
	b.p("### Prefill steps\n\n")
	b.p("The prefill steps of each level, broken into layers the same way (table `conc{bs}_prefill_layer.csv` in the level's folder).\n\n")
	b.table([]string{"level", "prefill steps", "layers", "kernels per layer", "per-layer time (µs)"}, "lrrrr", rows)
}

// scalingSection writes "Scaling with batch size": each category's slope
// against the decode batch size.
func (v *view) scalingSection(b *md) {
	b.p("## Scaling with batch size\n\n")
	if len(v.cats) == 0 {
		b.p("No level has a kernel inventory.\n\n")
		return
	}
	b.WriteString("Time of each category per decode layer (µs) at each level, and the least-squares slope against the decode batch size: " +
		"µs per added sequence, per layer and per decode step, with R² (from three levels on).\n\n")
	head := []string{"category"}
	head = append(head, v.names...)
	head = append(head, "µs / added seq, per layer", "R²", "µs / added seq, per step", "trend")
	var rows, outside [][]string
	for _, c := range v.cats {
		inLayers, inSteps := false, false
		for i := range v.lv {
			inLayers = inLayers || val(c.LayerUS, i) > 0
			inSteps = inSteps || val(c.StepUS, i) > 0
		}
		switch {
		case inLayers:
			r := []string{esc(c.Category)}
			for i := range v.lv {
				r = append(r, orDash(c.LayerUS[i], f1))
			}
			word := trend(c.layerS, c.LayerFit, nil, c.Category, v.names)
			rows = append(rows, append(r, slopeCell(c.LayerFit), r2Cell(c.LayerFit), slopeCell(c.StepFit), word))
		case inSteps:
			r := []string{esc(c.Category)}
			for i := range v.lv {
				r = append(r, orDash(c.StepUS[i], f1))
			}
			outside = append(outside, append(r, slopeCell(c.StepFit), r2Cell(c.StepFit)))
		}
	}
	b.table(head, "l"+strings.Repeat("r", len(v.lv))+"rrrl", rows)
	if len(outside) > 0 {
		b.p("Outside the layers (prologue, epilogue, sampling), per decode step (µs):\n\n")
		head := append(append([]string{"category"}, v.names...), "µs / added seq, per step", "R²")
		b.table(head, "l"+strings.Repeat("r", len(v.lv))+"rr", outside)
	}
}

// breakdownSection writes "Time breakdown per decode step": each
// category's share of the step, with the stacked chart.
func (v *view) breakdownSection(b *md) {
	b.p("## Time breakdown per decode step\n\n")
	if len(v.cats) == 0 {
		b.p("No level has a kernel inventory.\n\n")
		return
	}
	b.p("Share of each category in the kernel time of a decode step (%%), and that time.\n\n")
	head := append([]string{"category"}, v.names...)
	var rows [][]string
	totals := make([]float64, len(v.lv))
	for _, c := range v.cats {
		r := []string{esc(c.Category)}
		any := false
		for i := range v.lv {
			r = append(r, orDash(c.Share[i], f1))
			totals[i] += val(c.StepUS, i)
			any = any || val(c.StepUS, i) > 0
		}
		if any {
			rows = append(rows, r)
		}
	}
	r := []string{"**kernel time per decode step (ms)**"}
	for _, t := range totals {
		r = append(r, "**"+f2(t/1000)+"**")
	}
	rows = append(rows, r)
	b.table(head, "l"+strings.Repeat("r", len(v.lv)), rows)
	b.p("![Per-layer time by category](%s)\n\n", LayerTimeChart)
}

// warningsSection writes "Warnings": the warnings of every level's
// result and trace analysis.
func (v *view) warningsSection(b *md) {
	b.p("## Warnings\n\n")
	var lines []string
	for _, l := range v.r.levels {
		var ws []diag.Warning
		if l.File != nil {
			ws = append(ws, l.File.Warnings...)
		}
		if l.Result != nil {
			ws = append(ws, l.Result.Warnings...)
		}
		seen := map[string]bool{}
		for _, w := range ws {
			if seen[w.Message] {
				continue
			}
			seen[w.Message] = true
			c := ""
			if w.Code != "" {
				c = " (`" + string(w.Code) + "`)"
			}
			lines = append(lines, fmt.Sprintf("%s%s: %s", l.name(), c, v.adviseWarning(l, w)))
		}
		if t := l.decode(); t != nil && t.IrregularLayers > 0 {
			s := fmt.Sprintf("%s (`irregular_layers`): %d decode layers differ from the other layers of their kind", l.name(), t.IrregularLayers)
			if len(t.Irregular) > 0 && len(t.Irregular[0].Diffs) > 0 {
				s += "; e.g. " + describeDiff(t.Irregular[0])
			}
			lines = append(lines, s+" (the layer CSV and `profile-model layers --json` list them)")
		}
	}
	for _, n := range v.r.notes {
		lines = append(lines, "report: "+n)
	}
	if len(lines) == 0 {
		b.p("None.\n\n")
		return
	}
	for _, s := range lines {
		b.p("- %s\n", s)
	}
	b.p("\n")
}

func describeDiff(irr inventory.IrregularLayer) string {
	d := irr.Diffs[0]
	where := fmt.Sprintf("step %d layer %d", irr.Step, irr.Layer)
	switch {
	case d.Op == "extra":
		return fmt.Sprintf("%s runs an extra %s before pos %d", where, code(d.Kernel), d.Pos)
	case d.Op == "missing":
		return fmt.Sprintf("%s lacks %s at pos %d", where, code(d.Want), d.Pos)
	case d.WantFull != "":
		return fmt.Sprintf("%s runs another instance of %s at pos %d", where, code(d.Want), d.Pos)
	}
	return fmt.Sprintf("%s runs %s instead of %s at pos %d", where, code(d.Kernel), code(d.Want), d.Pos)
}
