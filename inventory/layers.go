package inventory

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/tracing"
)

// Layer table modes: robust finds the repeating layer itself; compat
// reproduces the compat script (see the package doc).
const (
	ModeRobust    = "robust"
	ModeCompat    = "compat"
	DefaultAnchor = "pa_bf16"
)

// LayerOptions control the per-layer breakdown.
type LayerOptions struct {
	Mode      string // ModeRobust (default) or ModeCompat
	Anchor    string // compat: substring of the kernel that starts a layer (DefaultAnchor when empty)
	NumLayers int    // robust: num_hidden_layers of the model config, 0 when unknown
	// LayerKinds names each layer's kind from the model config
	// (modelconfig.Architecture.LayerKinds), nil when unknown or all alike;
	// MTPLayers are the config's multi-token-prediction layers (a step
	// that runs them has that many layers more).
	LayerKinds []string
	MTPLayers  int
	Rules      *Rules // categories of the positions; DefaultRules when nil
	// Classes categorises the positions; nil: a Classifier of the trace
	// with Rules. Pass one to share what it learns (analysis does).
	Classes *Classifier
}

func (o *LayerOptions) classes(tr *tracing.Trace) *Classifier {
	if o.Classes == nil {
		o.Classes = NewClassifier(tr, o.Rules)
	}
	return o.Classes
}

// Position is one kernel position of a layer (one row of the table).
type Position struct {
	Pos       int     `json:"pos"`
	LayerKind int     `json:"layer_kind"` // which of the alternating layer kinds (0 when layers do not alternate)
	ShortName string  `json:"short_name"`
	Kernel    string  `json:"kernel"`
	Stream    int32   `json:"stream"`
	Category  string  `json:"category"`
	Source    Source  `json:"category_source"` // which evidence decided Category
	Provider  string  `json:"provider"`
	AvgUS     float64 `json:"avg_us"`
	StdUS     float64 `json:"std_us"` // sample standard deviation
	MinUS     float64 `json:"min_us"`
	MaxUS     float64 `json:"max_us"`
	Pct       float64 `json:"pct"` // share of the summed averages of its layer kind
	Count     int     `json:"count"`
	// Role is what the position does in the layer ("QKV", "gate_up",
	// "before O-proj"; AssignRoles), RoleSource where that comes from
	// (RoleFromCapture or RoleFromInferred); empty when unknown.
	Role       string `json:"role,omitempty"`
	RoleSource string `json:"role_source,omitempty"`
	// Where the position's kernel comes from, read from a capture trace
	// (AddCapture): the module path (layer indices that differ between
	// layers as *), the op that launched it and that op's input shapes and
	// dtypes as compact JSON. Empty without a capture trace.
	Module     string `json:"module,omitempty"`
	Op         string `json:"op,omitempty"`
	InputDims  string `json:"input_dims,omitempty"`
	InputTypes string `json:"input_types,omitempty"`
	// Roof is the position against the GPU's roofline when the model's
	// config is known (the robust CSV's last columns); the analysis file
	// holds it in its roofline table, so JSON leaves it out here.
	Roof *Roof `json:"-"`
}

// LayerDiff is one way an irregular layer differs from the other layers of
// its kind.
type LayerDiff struct {
	Op     string `json:"op"`  // "extra", "missing" or "differs"
	Pos    int    `json:"pos"` // position in the layer kind (where an extra kernel ran: before this position)
	Kernel string `json:"kernel,omitempty"`
	Want   string `json:"want,omitempty"` // the kernel the other layers run there
	// When Kernel and Want share a short name (another instance of the same
	// kernel, e.g. tuned for another batch size), their full names.
	KernelFull string `json:"kernel_full,omitempty"`
	WantFull   string `json:"want_full,omitempty"`
	Stream     int32  `json:"stream"`
}

// IrregularLayer is a layer whose kernel sequence differs from its kind's.
type IrregularLayer struct {
	Step    int         `json:"step"`  // index into the trace's steps (-1 in compat mode)
	Layer   int         `json:"layer"` // layer index within the step
	Kind    int         `json:"layer_kind"`
	Kernels int         `json:"kernels"`
	Diffs   []LayerDiff `json:"diffs"`
}

// LayerTable is the per-layer breakdown of a trace's decode (or prefill) steps.
type LayerTable struct {
	Mode     string `json:"mode"`
	StepKind string `json:"step_kind"` // "decode" or "prefill"
	Steps    int    `json:"steps"`     // steps analysed
	// Layers is the number of layers per step (the most common); in compat
	// mode, the number of layer slices averaged.
	Layers          int         `json:"layers"`
	LayersHist      map[int]int `json:"layers_hist,omitempty"` // layers per step -> steps
	KernelsPerLayer []int       `json:"kernels_per_layer"`     // one entry per layer kind
	// KindNames says what each layer kind is ("linear_attention",
	// "full_attention"), from the model config or, for a hybrid model's
	// linear-attention layers, from their kernels; KindLayers is how many
	// layers of each kind a step runs. Both nil when the kinds are not named.
	KindNames  []string `json:"kind_names,omitempty"`
	KindLayers []int    `json:"layers_per_kind,omitempty"`
	// WallUS is, per layer kind, the GPU time one layer takes with the
	// kernels that overlap on other streams counted once (the union of
	// their intervals over the kind's layers, divided by their number), as
	// ATOM's trace parser totals a layer; nil when no streams overlap (the
	// positions' averages then sum to it).
	WallUS    []float64        `json:"wall_us,omitempty"`
	Positions []Position       `json:"positions"`
	Irregular []IrregularLayer `json:"irregular"`
	Prologue  []string         `json:"prologue,omitempty"` // kernels before the first layer (first step)
	Epilogue  []string         `json:"epilogue,omitempty"` // kernels after the last layer (first step)
	Anchor    string           `json:"anchor,omitempty"`
	Warnings  []diag.Warning   `json:"warnings,omitempty"`
}

// Rows returns the table in the compatible CSV's row type.
func (t *LayerTable) Rows() []LayerRow {
	rows := make([]LayerRow, len(t.Positions))
	for i, p := range t.Positions {
		rows[i] = LayerRow{Pos: p.Pos, ShortName: p.ShortName, Kernel: p.Kernel, AvgUS: p.AvgUS, StdUS: p.StdUS,
			MinUS: p.MinUS, MaxUS: p.MaxUS, Pct: p.Pct, Count: p.Count, Role: p.Role, Roof: p.Roof}
	}
	return rows
}

// DecodeLayers breaks the decode steps of tr into layers.
func DecodeLayers(ctx context.Context, tr *tracing.Trace, opt LayerOptions) (*LayerTable, error) {
	if opt.Rules == nil {
		opt.Rules = DefaultRules()
	}
	switch opt.Mode {
	case ModeCompat:
		return compatLayers(ctx, tr, opt)
	case ModeRobust, "":
		return robustLayers(ctx, tr, []tracing.StepKind{tracing.StepDecode}, opt)
	}
	return nil, fmt.Errorf("unknown layer mode %q (want %s or %s)", opt.Mode, ModeRobust, ModeCompat)
}

// PrefillLayers is the robust breakdown of the prefill (and mixed) steps.
func PrefillLayers(ctx context.Context, tr *tracing.Trace, opt LayerOptions) (*LayerTable, error) {
	return StepLayers(ctx, tr, []tracing.StepKind{tracing.StepPrefill, tracing.StepMixed}, opt)
}

// StepLayers is the robust breakdown of the steps of the given kinds (for
// traces without engine steps: tracing.StepProfiler or tracing.StepGraph).
func StepLayers(ctx context.Context, tr *tracing.Trace, kinds []tracing.StepKind, opt LayerOptions) (*LayerTable, error) {
	if opt.Rules == nil {
		opt.Rules = DefaultRules()
	}
	if len(kinds) == 0 {
		return nil, fmt.Errorf("no step kinds given")
	}
	return robustLayers(ctx, tr, kinds, opt)
}

// stepKernels returns the kernel indices (kernels only, no copies) of the
// steps of the given kinds, deduplicated, in trace (start) order, and how
// many steps contributed.
func stepKernels(tr *tracing.Trace, kinds []tracing.StepKind) ([]int32, int) {
	// Steps may share kernels: mark them in a bitset, then list the marked
	// ones in index order (Kernels are sorted by start, so index order is
	// start order), at their exact count.
	marked := make([]uint64, (len(tr.Kernels)+63)/64)
	steps, n := 0, 0
	for i := range tr.Steps {
		st := &tr.Steps[i]
		if !slices.Contains(kinds, st.Kind) || len(st.Kernels) == 0 {
			continue
		}
		steps++
		for _, k := range st.Kernels {
			w, bit := &marked[k>>6], uint64(1)<<(k&63)
			if *w&bit == 0 && tr.Kernels[k].Kind == tracing.KindKernel {
				*w |= bit
				n++
			}
		}
	}
	out := make([]int32, 0, n)
	for wi, w := range marked {
		for w != 0 {
			out = append(out, int32(wi*64+bits.TrailingZeros64(w)))
			w &= w - 1
		}
	}
	return out, steps
}

// stats accumulates durations (Welford) in µs.
type stats struct {
	n        int
	mean, m2 float64
	min, max float64
	name     string
	stream   int32
}

func (s *stats) add(durNS int64) {
	v := float64(durNS) / 1000
	if s.n == 0 || v < s.min {
		s.min = v
	}
	if s.n == 0 || v > s.max {
		s.max = v
	}
	s.n++
	d := v - s.mean
	s.mean += d / float64(s.n)
	s.m2 += d * (v - s.mean)
}

func (s *stats) std() float64 {
	if s.n < 2 {
		return 0
	}
	return math.Sqrt(s.m2 / float64(s.n-1))
}

// positions turns per-kind position stats into rows with pct per kind.
func positions(kinds [][]stats, classify func(string) Class, short func(string) string) []Position {
	var out []Position
	pos := 0
	for kind, ps := range kinds {
		sum := 0.0
		for i := range ps {
			sum += ps[i].mean
		}
		for i := range ps {
			s := &ps[i]
			c := classify(s.name)
			p := Position{Pos: pos, LayerKind: kind, ShortName: short(s.name), Kernel: s.name, Stream: s.stream,
				Category: c.Category, Provider: c.Provider, Source: c.Source,
				AvgUS: s.mean, StdUS: s.std(), MinUS: s.min, MaxUS: s.max, Count: s.n}
			if sum > 0 {
				p.Pct = s.mean / sum * 100
			}
			out = append(out, p)
			pos++
		}
	}
	return out
}

// compatLayers reproduces the compat script (package doc): kernels of the
// decode steps in start order, a layer from one anchor kernel to the next,
// the most common anchor distance is the layer length, and only slices whose
// next anchor is exactly that far are layers.
func compatLayers(ctx context.Context, tr *tracing.Trace, opt LayerOptions) (*LayerTable, error) {
	anchor := opt.Anchor
	if anchor == "" {
		anchor = DefaultAnchor
	}
	t := &LayerTable{Mode: ModeCompat, StepKind: "decode", Anchor: anchor, Irregular: []IrregularLayer{}}
	ks, steps := stepKernels(tr, []tracing.StepKind{tracing.StepDecode})
	t.Steps = steps
	if steps == 0 {
		t.Warnings = append(t.Warnings, diag.New(diag.NoSteps, "no decode steps found: using every kernel of the trace"))
		for i := range tr.Kernels {
			if tr.Kernels[i].Kind == tracing.KindKernel {
				ks = append(ks, int32(i))
			}
		}
	}
	isAnchor := make([]bool, len(tr.Names)) // by name index: each name searched once
	for id, name := range tr.Names {
		isAnchor[id] = strings.Contains(name, anchor)
	}
	var anchors []int
	for i, k := range ks {
		if isAnchor[tr.Kernels[k].NameID] {
			anchors = append(anchors, i)
		}
	}
	if len(anchors) < 2 {
		return nil, fmt.Errorf("compat mode: the anchor %q occurs %d times in the decode kernels; need at least two (pick another with --anchor, or use --mode robust)", anchor, len(anchors))
	}
	// Most common distance; ties go to the distance seen first (Python's
	// Counter.most_common keeps insertion order).
	count := map[int]int{}
	var order []int
	for i := 1; i < len(anchors); i++ {
		d := anchors[i] - anchors[i-1]
		if count[d] == 0 {
			order = append(order, d)
		}
		count[d]++
	}
	n := order[0]
	for _, d := range order {
		if count[d] > count[n] {
			n = d
		}
	}
	t.Warnings = append(t.Warnings, anchorDoubts(anchor, n, order, count)...)
	var ps []stats
	layers := 0
	for i := 0; i+1 < len(anchors); i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if anchors[i+1]-anchors[i] != n {
			continue
		}
		if ps == nil {
			ps = make([]stats, n)
			for p := range ps {
				k := &tr.Kernels[ks[anchors[i]+p]]
				ps[p].name, ps[p].stream = tr.NameOf(k), k.Stream
			}
		}
		for p := 0; p < n; p++ {
			ps[p].add(tr.Kernels[ks[anchors[i]+p]].Dur)
		}
		layers++
	}
	t.Layers = layers
	t.KernelsPerLayer = []int{n}
	// The script strips "void " from names before it names and prints them.
	short := func(name string) string { return compatShortName(strings.TrimPrefix(name, "void ")) }
	t.Positions = positions([][]stats{ps}, opt.classes(tr).Classify, short)
	for i := range t.Positions {
		t.Positions[i].Kernel = strings.TrimPrefix(t.Positions[i].Kernel, "void ")
	}
	return t, nil
}

// anchorDoubts warns when the compatible-mode anchor cannot be starting one
// layer each: distance n (the layer length) of 1 means it matches
// consecutive kernels; a second distance about as common as n means it
// matches more than one kernel per layer (distances alternate), and each
// "layer" is then a piece of a real one. With one match per layer, only
// the step boundaries give another distance, once per step.
func anchorDoubts(anchor string, n int, order []int, count map[int]int) []diag.Warning {
	var ws []diag.Warning
	if n == 1 {
		ws = append(ws, diag.New(diag.CompatAmbiguous, fmt.Sprintf("compat mode: the anchor %q matches consecutive kernels, so its layers have one kernel each; give a more specific --anchor, or use --mode robust", anchor)))
	}
	for _, d := range order {
		if d != n && 2*count[d] >= count[n] {
			ws = append(ws, diag.New(diag.CompatAmbiguous, fmt.Sprintf("compat mode: the anchor %q matches more than one kernel per layer (its matches are %d and %d kernels apart, %d and %d times): each table layer is only part of a real one; give a more specific --anchor, or use --mode robust", anchor, n, d, count[n], count[d])))
			break
		}
	}
	return ws
}
