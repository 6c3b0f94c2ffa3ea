package kernelmodel

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/internal/units"
	"github.com/profile-model/profile-model/inventory"
)

// Section says where in a step a kernel runs and how it is launched.
type Section uint8

const (
	// SectionPrep: eager launches before the forward pass, inside the step
	// annotation (input copies, KV index generation).
	SectionPrep Section = iota
	// SectionForward: the forward pass. In a decode step it is replayed from
	// one graph; in a prefill (or eager decode) step every kernel is launched
	// eagerly.
	SectionForward
	// SectionSample: the sampler, launched eagerly after the forward pass,
	// outside the step annotation, with its own correlation.
	SectionSample
	// SectionAttention: the attention of a forward pass replayed piecewise
	// (vLLM's piecewise graphs): launched eagerly between the graph pieces
	// that hold the rest of each layer.
	SectionAttention
)

// KernelRun is one kernel a step runs.
type KernelRun struct {
	Name      string // full kernel name as a trace shows it
	ShortName string // the short name of the per-layer tables (inventory.CompatShortName)
	Dur       units.Duration
	Gap       units.Duration // the stream idles this long before the kernel (launch latency)
	Section   Section
	Layer     int    // transformer layer, -1 outside the layers
	Pos       int    // position within the layer, -1 outside the layers
	LayerKind int    // 0, or 1 for the second kind of alternating layers
	Launch    string // runtime call when launched eagerly (hipLaunchKernel, ...)
	Stream    int    // 0 main stream, 1 side stream (overlaps the main one)
}

// StepTime is how long a step's kernels keep the GPU busy: the sum of gaps
// and durations of main-stream kernels. The simulated engine should use it
// as the step time so that its clock and the trace agree.
func StepTime(runs []KernelRun) units.Duration {
	var d units.Duration
	for i := range runs {
		if runs[i].Stream == 0 {
			d += runs[i].Gap + runs[i].Dur
		}
	}
	return d
}

// Model is a kernel model of one engine: which kernels a decode or prefill
// step runs and how long each takes. It is safe for concurrent use; every
// random draw comes from the rng passed in.
type Model struct {
	// Name is a short description (the data file or the CSV paths).
	Name string
	// Layers is the number of transformer layers per step (62 for MiniMax-M2.5).
	Layers int
	// RefCtx is the mean per-sequence context (tokens) at which the layer
	// timings were measured; paged attention grows with context beyond it.
	RefCtx float64
	// GraphGapUS is the mean idle time (µs) of the GPU before each kernel of
	// a replayed graph: gaps are drawn uniformly in [0.5, 1.5]×GraphGapUS.
	GraphGapUS float64
	// StepGap is the host time between two steps (scheduling, input
	// preparation, output processing) that no kernel covers.
	StepGap units.Duration
	// OutputLag is how far into the next step (0 to 1) a step's sampled
	// tokens reach their clients: the engine streams them while the next
	// step runs.
	OutputLag float64
	// IntakeUSPerToken is the front end's time per prompt token (µs) from a
	// request's arrival to the scheduler seeing it: ATOM's API process
	// tokenizes the prompt and hands it over ZMQ to the engine core. Each
	// request pays it on its own, in parallel with the others.
	IntakeUSPerToken float64

	specs  []spec       // built-in data (all sections)
	tables []layerTable // compatible CSV tables, sorted by bs; nil for the built-in model
}

// spec is one row of the built-in data file.
type spec struct {
	section      string // prep, prologue, layer, epilogue, sample, prefill_prologue, prefill_layer, prefill_epilogue, prefill_sample
	bsMin, bsMax int
	short, name  string
	launch       string
	basis        string // const, bs, experts, tokens, attn
	a, b, ctx    float64
	stdFrac      float64
	minFrac      float64
	maxFrac      float64
}

// layerRow is one row of a compatible per-layer CSV.
type layerRow = inventory.LayerRow

// readLayerCSV reads a per-layer table in the compatible format.
func readLayerCSV(path string) ([]layerRow, error) { return inventory.ReadLayerCSV(path) }

type layerTable struct {
	bs   int
	path string
	rows []layerRow
}

//go:embed data/atom_minimax_m25.csv
var defaultData []byte

// Default is the project's own model of an ATOM MiniMax-M2.5 (MoE,
// 62 layers) decode and prefill step on one MI355X, from the embedded data
// file data/atom_minimax_m25.csv (see its header for how it was derived).
func Default() *Model {
	m, err := parseModelData(defaultData)
	if err != nil {
		// The embedded file is checked by the package tests; a broken build
		// would fail there first.
		return &Model{Name: "invalid built-in data: " + err.Error()}
	}
	return m
}

// Intake is the front end's time for a request of promptTokens tokens
// before the scheduler sees it (see IntakeUSPerToken).
func (m *Model) Intake(promptTokens int) units.Duration {
	return units.Micros(m.IntakeUSPerToken * float64(promptTokens))
}

// setParam reads a "# key=value" line of the data file's header; other
// comment lines are ignored.
func (m *Model) setParam(line string) error {
	key, val, ok := strings.Cut(strings.TrimPrefix(line, "# "), "=")
	if !ok || strings.ContainsAny(key, " ,") {
		return nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
	if err != nil {
		return fmt.Errorf("model data: %s: %q is not a number", key, val)
	}
	switch key {
	case "layers":
		m.Layers = int(f)
	case "ref_ctx":
		m.RefCtx = f
	case "graph_gap_us":
		m.GraphGapUS = f
	case "step_gap_us":
		m.StepGap = units.Micros(f)
	case "output_lag":
		m.OutputLag = f
	case "intake_us_per_token":
		m.IntakeUSPerToken = f
	}
	return nil
}

func parseModelData(data []byte) (*Model, error) {
	m := &Model{Name: "built-in ATOM MiniMax-M2.5 model", Layers: 62, GraphGapUS: 1.1, StepGap: units.Micros(150)}
	var body bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			if err := m.setParam(line); err != nil {
				return nil, err
			}
			continue
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	cr := csv.NewReader(&body)
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("model data: %w", err)
	}
	if len(recs) < 2 {
		return nil, fmt.Errorf("model data: no rows")
	}
	for i, r := range recs[1:] {
		if len(r) != 14 {
			return nil, fmt.Errorf("model data: row %d has %d fields, want 14", i+2, len(r))
		}
		var perr error
		num := func(s string) float64 {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil && perr == nil {
				perr = fmt.Errorf("model data: row %d: %q is not a number", i+2, s)
			}
			return v
		}
		s := spec{
			section: r[0], bsMin: int(num(r[1])), bsMax: int(num(r[2])),
			short: r[3], name: r[4], launch: r[5], basis: r[6],
			a: num(r[7]), b: num(r[8]), ctx: num(r[9]),
			stdFrac: num(r[10]), minFrac: num(r[11]), maxFrac: num(r[12]),
		}
		_ = r[13] // source note
		if perr != nil {
			return nil, perr
		}
		m.specs = append(m.specs, s)
	}
	return m, nil
}

var concPrefix = regexp.MustCompile(`^conc(\d+)_`)

// FromLayerCSV builds a model whose decode layer comes from per-layer
// tables (pos,short_name,kernel,avg_us,std_us,min_us,max_us,pct,count, as
// `profile-model layers` writes them), e.g. conc8_layer.csv. Each file's
// batch size is read from its conc{N}_ name prefix. With several tables, a
// step's timings are interpolated linearly in batch size between the two
// nearest tables (when they have the same
// positions; otherwise the nearest table is used as is, and outside the
// tables' range the nearest one). With one table, every batch size gets that
// table. Durations are drawn around each position's avg with its std,
// clipped to the table's [min, max]. Steps' prologue, epilogue, sampling and
// prefill kernels come from the built-in model.
func FromLayerCSV(paths ...string) (*Model, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("kernel model: no layer CSV given")
	}
	m := Default()
	m.Name = strings.Join(paths, ",")
	m.tables = nil
	for _, p := range paths {
		mm := concPrefix.FindStringSubmatch(filepath.Base(p))
		bs := 0
		if mm != nil {
			bs, _ = strconv.Atoi(mm[1])
		}
		if bs <= 0 && len(paths) > 1 {
			return nil, fmt.Errorf("kernel model: %s: cannot tell its batch size: name it conc{N}_... (e.g. conc8_layer.csv)", p)
		}
		rows, err := readLayerCSV(p)
		if err != nil {
			return nil, fmt.Errorf("kernel model: %w", err)
		}
		for i, r := range rows {
			if r.AvgUS <= 0 || r.MinUS > r.MaxUS || r.StdUS < 0 {
				return nil, fmt.Errorf("kernel model: %s: row %d (pos %d): need avg > 0, std >= 0 and min <= max", p, i+2, r.Pos)
			}
		}
		m.tables = append(m.tables, layerTable{bs: bs, path: p, rows: rows})
	}
	slices.SortStableFunc(m.tables, func(a, b layerTable) int { return a.bs - b.bs })
	for i := 1; i < len(m.tables); i++ {
		if m.tables[i].bs == m.tables[i-1].bs {
			return nil, fmt.Errorf("kernel model: %s and %s have the same batch size %d", m.tables[i-1].path, m.tables[i].path, m.tables[i].bs)
		}
	}
	return m, nil
}

// LayerPosition is one kernel position of a decode layer as the model sees it
// at a given batch size: its expected timings in µs.
type LayerPosition struct {
	Pos                        int
	ShortName, Kernel          string
	AvgUS, StdUS, MinUS, MaxUS float64
}

// DecodeLayer returns the decode layer's positions at batch size bs and mean
// context ctxTokens/bs (ctxTokens 0: the reference context).
func (m *Model) DecodeLayer(bs, ctxTokens int) []LayerPosition {
	if len(m.tables) > 0 {
		return m.tableLayer(bs)
	}
	var out []LayerPosition
	for _, s := range m.specs {
		if s.section != "layer" || bs < s.bsMin || bs > s.bsMax {
			continue
		}
		avg := m.specAvg(s, bs, ctxTokens, 0)
		out = append(out, LayerPosition{
			Pos: len(out), ShortName: s.short, Kernel: s.name,
			AvgUS: avg, StdUS: avg * s.stdFrac, MinUS: avg * s.minFrac, MaxUS: avg * s.maxFrac,
		})
	}
	return out
}

func (m *Model) tableLayer(bs int) []LayerPosition {
	conv := func(rows []layerRow) []LayerPosition {
		out := make([]LayerPosition, len(rows))
		for i, r := range rows {
			out[i] = LayerPosition{Pos: i, ShortName: r.ShortName, Kernel: r.Kernel, AvgUS: r.AvgUS, StdUS: r.StdUS, MinUS: r.MinUS, MaxUS: r.MaxUS}
		}
		return out
	}
	t := m.tables
	if len(t) == 1 || bs <= t[0].bs {
		return conv(t[0].rows)
	}
	if bs >= t[len(t)-1].bs {
		return conv(t[len(t)-1].rows)
	}
	hi := 1
	for t[hi].bs < bs {
		hi++
	}
	lo := hi - 1
	if t[hi].bs == bs {
		return conv(t[hi].rows)
	}
	near := lo
	if bs-t[lo].bs > t[hi].bs-bs {
		near = hi
	}
	a, b := t[lo].rows, t[hi].rows
	if len(a) != len(b) {
		return conv(t[near].rows)
	}
	for i := range a {
		if a[i].ShortName != b[i].ShortName {
			return conv(t[near].rows)
		}
	}
	f := float64(bs-t[lo].bs) / float64(t[hi].bs-t[lo].bs)
	lerp := func(x, y float64) float64 { return x + (y-x)*f }
	out := conv(t[near].rows)
	for i := range out {
		out[i].AvgUS = lerp(a[i].AvgUS, b[i].AvgUS)
		out[i].StdUS = lerp(a[i].StdUS, b[i].StdUS)
		out[i].MinUS = lerp(a[i].MinUS, b[i].MinUS)
		out[i].MaxUS = lerp(a[i].MaxUS, b[i].MaxUS)
	}
	return out
}

// activeExperts is the expected number of distinct experts that bs tokens
// route to with top-8 of 256 experts: the work of a MoE GEMM grows with it.
func activeExperts(bs float64) float64 {
	return 256 * (1 - math.Pow(1-8.0/256, bs))
}

// specAvg is a spec's expected duration in µs.
func (m *Model) specAvg(s spec, bs, ctxTokens, tokens int) float64 {
	var avg float64
	switch s.basis {
	case "bs":
		avg = s.a + s.b*float64(bs)
	case "experts":
		avg = s.a + s.b*activeExperts(float64(bs))
	case "tokens":
		avg = s.a + s.b*float64(tokens)
	case "attn": // causal attention: tokens × mean sequence length
		seqs := max(bs, 1)
		avg = s.a + s.b*float64(tokens)*float64(tokens)/float64(seqs)
	default:
		avg = s.a
	}
	if s.ctx != 0 && ctxTokens > 0 && bs > 0 {
		avg += s.ctx * (float64(ctxTokens)/float64(bs) - m.RefCtx)
	}
	return max(avg, 1.0)
}

func draw(rng *rand.Rand, avg, std, lo, hi float64) units.Duration {
	v := avg
	if std > 0 && rng != nil {
		v = avg + std*rng.NormFloat64()
	}
	if hi > 0 && v > hi {
		v = hi
	}
	if v < lo {
		v = lo
	}
	ns := units.Duration(math.Round(v * 1000))
	return max(ns, 1000)
}

func gap(rng *rand.Rand, lo, hi float64) units.Duration {
	if rng == nil {
		return units.Duration((lo + hi) / 2 * 1000)
	}
	return units.Duration((lo + (hi-lo)*rng.Float64()) * 1000)
}

// DrawKernel draws one forward-pass kernel that the model's data does not
// hold (the generator's dense-MLP layers): its duration within 5% of avgUS,
// clipped to [0.85, 1.3]×avgUS as the prefill layer kernels are, after the
// launch gap of a replayed graph. Layer and Pos are -1 for the caller to set.
func DrawKernel(rng *rand.Rand, short, name string, avgUS float64) KernelRun {
	return KernelRun{
		Name: name, ShortName: short, Dur: draw(rng, avgUS, avgUS*0.05, avgUS*0.85, avgUS*1.3),
		Gap: gap(rng, 0.6, 1.6), Section: SectionForward, Layer: -1, Pos: -1, Launch: launchFor(name),
	}
}

func (m *Model) runSpec(rng *rand.Rand, s spec, sec Section, bs, ctxTokens, tokens int) KernelRun {
	avg := m.specAvg(s, bs, ctxTokens, tokens)
	d := draw(rng, avg, avg*s.stdFrac, avg*s.minFrac, avg*s.maxFrac)
	g := gap(rng, 0.6, 1.6)
	if sec != SectionForward {
		g = gap(rng, 4, 9)
	}
	return KernelRun{Name: s.name, ShortName: s.short, Dur: d, Gap: g, Section: sec, Layer: -1, Pos: -1, Launch: s.launch}
}

// DecodeStep returns the kernels of one decode step in GPU order: the eager
// input preparation, the forward pass (embedding, Layers layers, final norm,
// lm_head) that the engine replays from one graph, and the eager sampler.
// ctxTokens is the total context (KV tokens) over the batch; 0 means the
// reference context of the model's timings.
func (m *Model) DecodeStep(bs, ctxTokens int, rng *rand.Rand) []KernelRun {
	bs = max(bs, 1)
	layer := m.DecodeLayer(bs, ctxTokens)
	runs := make([]KernelRun, 0, 8+m.Layers*len(layer))
	for _, s := range m.specs {
		if s.section == "prep" {
			runs = append(runs, m.runSpec(rng, s, SectionPrep, bs, ctxTokens, bs))
		}
	}
	for _, s := range m.specs {
		if s.section == "prologue" {
			runs = append(runs, m.runSpec(rng, s, SectionForward, bs, ctxTokens, bs))
		}
	}
	for l := 0; l < m.Layers; l++ {
		for p, lp := range layer {
			runs = append(runs, KernelRun{
				Name: lp.Kernel, ShortName: lp.ShortName,
				Dur:     draw(rng, lp.AvgUS, lp.StdUS, lp.MinUS, lp.MaxUS),
				Gap:     gap(rng, 0.5*m.GraphGapUS, 1.5*m.GraphGapUS),
				Section: SectionForward, Layer: l, Pos: p, Launch: launchFor(lp.Kernel),
			})
		}
	}
	for _, s := range m.specs {
		if s.section == "epilogue" {
			runs = append(runs, m.runSpec(rng, s, SectionForward, bs, ctxTokens, bs))
		}
	}
	for _, s := range m.specs {
		if s.section == "sample" {
			runs = append(runs, m.runSpec(rng, s, SectionSample, bs, ctxTokens, bs))
		}
	}
	return runs
}

// PrefillStep returns the kernels of one prefill step of seqs sequences and
// tokens prompt tokens in total, all launched eagerly: flash attention
// instead of paged attention, the fused ASM MoE kernel instead of the two CK
// MoE GEMMs, multi-phase MoE sorting, then the sampler.
func (m *Model) PrefillStep(seqs, tokens int, rng *rand.Rand) []KernelRun {
	seqs = max(seqs, 1)
	tokens = max(tokens, seqs)
	var layer []spec
	runs := make([]KernelRun, 0, 8+m.Layers*20)
	for _, s := range m.specs {
		switch s.section {
		case "prefill_prologue":
			runs = append(runs, m.runSpec(rng, s, SectionForward, seqs, 0, tokens))
		case "prefill_layer":
			layer = append(layer, s)
		}
	}
	for l := 0; l < m.Layers; l++ {
		for p, s := range layer {
			r := m.runSpec(rng, s, SectionForward, seqs, 0, tokens)
			r.Layer, r.Pos = l, p
			runs = append(runs, r)
		}
	}
	for _, s := range m.specs {
		if s.section == "prefill_epilogue" {
			runs = append(runs, m.runSpec(rng, s, SectionForward, seqs, 0, tokens))
		}
	}
	for _, s := range m.specs {
		if s.section == "prefill_sample" {
			runs = append(runs, m.runSpec(rng, s, SectionSample, seqs, 0, tokens))
		}
	}
	return runs
}

// launchFor guesses the HIP runtime call that launches a kernel eagerly:
// Tensile GEMMs go through hipExtModuleLaunchKernel, code objects (ASM,
// Triton) through hipModuleLaunchKernel, the rest through hipLaunchKernel.
func launchFor(name string) string {
	switch {
	case strings.HasPrefix(name, "Cijk_"):
		return "hipExtModuleLaunchKernel"
	case strings.HasPrefix(name, "triton_"), strings.Contains(name, "pa_bf16"),
		strings.Contains(name, "fmha_fwd"), strings.Contains(name, "fmoe_"):
		return "hipModuleLaunchKernel"
	}
	return "hipLaunchKernel"
}

// writeModelData renders specs in the data file's format (used by the
// derivation test to regenerate the embedded file).
func writeModelData(w io.Writer, header string, m *Model, specs []spec, notes []string) error {
	var b bytes.Buffer
	b.WriteString(header)
	fmt.Fprintf(&b, "# layers=%d\n# ref_ctx=%.2f\n# graph_gap_us=%.3f\n# step_gap_us=%.1f\n# output_lag=%.2f\n# intake_us_per_token=%.2f\n",
		m.Layers, m.RefCtx, m.GraphGapUS, float64(m.StepGap)/1000, m.OutputLag, m.IntakeUSPerToken)
	cw := csv.NewWriter(&b)
	_ = cw.Write([]string{"section", "bs_min", "bs_max", "short_name", "kernel", "launch", "basis", "a_us", "b_us", "ctx_us_per_token", "std_frac", "min_frac", "max_frac", "source"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for i, s := range specs {
		_ = cw.Write([]string{s.section, strconv.Itoa(s.bsMin), strconv.Itoa(s.bsMax), s.short, s.name, s.launch, s.basis,
			f(s.a), f(s.b), f(s.ctx), f(s.stdFrac), f(s.minFrac), f(s.maxFrac), notes[i]})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// LayerTable returns the rows of the model's compatible per-layer table when
// it was made from exactly one (FromLayerCSV with one path), else nil.
func (m *Model) LayerTable() []inventory.LayerRow {
	if len(m.tables) != 1 {
		return nil
	}
	return slices.Clone(m.tables[0].rows)
}
