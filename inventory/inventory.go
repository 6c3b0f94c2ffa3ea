package inventory

import (
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"io"
	"slices"
	"strconv"

	"github.com/profile-model/profile-model/internal/units"
	"github.com/profile-model/profile-model/tracing"
)

// KernelRow is one distinct kernel (or copy) of a trace.
type KernelRow struct {
	Kernel    string         `json:"kernel"`
	ShortName string         `json:"short_name"`
	Category  string         `json:"category"`
	Source    Source         `json:"category_source"` // which evidence decided Category
	Provider  string         `json:"provider"`
	Kind      string         `json:"kind"` // kernel, memcpy or memset
	Count     int            `json:"count"`
	Total     units.Duration `json:"total_us"`
	AvgUS     float64        `json:"avg_us"`
	MinUS     float64        `json:"min_us"`
	MaxUS     float64        `json:"max_us"`
	StdUS     float64        `json:"std_us"` // sample standard deviation
	Pct       float64        `json:"pct"`    // share of all GPU activity time
}

// CategoryRow is one category's totals.
type CategoryRow struct {
	Category     string         `json:"category"`
	Providers    string         `json:"providers"` // distinct providers, "; "-separated
	Kernels      int            `json:"kernels"`   // distinct kernels
	Count        int            `json:"count"`     // launches
	Total        units.Duration `json:"total_us"`
	Pct          float64        `json:"pct"`
	DecodeStepUS float64        `json:"decode_step_us"` // per decode step
	LayerUS      float64        `json:"layer_us"`       // per decode layer (robust layer table)
}

// Inventory is every distinct kernel of a trace with its category.
type Inventory struct {
	Rules      string         `json:"rules"`
	KernelTime units.Duration `json:"kernel_time_us"` // kernels only, as inspect counts them
	GPUTime    units.Duration `json:"gpu_time_us"`    // kernels, copies and memsets
	OtherPct   float64        `json:"other_pct"`      // share of kernel time in no category
	// BySource is the kernel time each kind of evidence categorised
	// (rule, launch_op, name, position, none), kernels only.
	BySource map[Source]units.Duration `json:"category_sources"`
	// Uncategorised are the largest kernels left in Other (at most
	// uncategorisedMax), so that a rule can be written for them.
	Uncategorised []KernelRow               `json:"uncategorised"`
	Categories    map[string]units.Duration `json:"categories"` // category -> total µs
	DecodeSteps   int                       `json:"decode_steps"`
	Kernels       KernelList                `json:"kernels"`
	ByCategory    []CategoryRow             `json:"by_category"`
}

// kernelAgg is one distinct kernel while it is counted and after: its name
// index into the trace's names and its class index, not their strings, so
// that a million distinct names cost tens of bytes each. A KernelRow is
// made from it only when a row is read (KernelList.At).
type kernelAgg struct {
	name     int32 // index into KernelList.names
	class    int32 // index into KernelList.classes
	kind     tracing.ActivityKind
	n        int
	total    int64
	min, max int64
	mean, m2 float64 // µs, Welford
	decode   int64   // ns inside decode steps
}

// uncategorisedMax is how many of the largest Other kernels an Inventory lists.
const uncategorisedMax = 10

// BuildInventory aggregates the kernels of tr by name and categorises them
// with cl (nil: a Classifier of tr with the built-in rules). layers (the
// robust decode table, may be nil) gives the per-layer column of the
// category totals.
func BuildInventory(ctx context.Context, tr *tracing.Trace, cl *Classifier, layers *LayerTable) (*Inventory, error) {
	if cl == nil {
		cl = NewClassifier(tr, nil)
	}
	inDecode := make([]bool, len(tr.Kernels))
	decodeSteps := 0
	for i := range tr.Steps {
		if st := &tr.Steps[i]; st.Kind == tracing.StepDecode && len(st.Kernels) > 0 {
			decodeSteps++
			for _, k := range st.Kernels {
				inDecode[k] = true
			}
		}
	}
	byName := make([]int32, len(tr.Names)) // by name index: 1 + index into aggs
	aggs := make([]kernelAgg, 0, min(len(tr.Names), len(tr.Kernels)))
	for i := range tr.Kernels {
		if i%(1<<16) == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		k := &tr.Kernels[i]
		ai := byName[k.NameID]
		if ai == 0 {
			aggs = append(aggs, kernelAgg{name: k.NameID, kind: k.Kind, min: k.Dur, max: k.Dur})
			ai = int32(len(aggs))
			byName[k.NameID] = ai
		}
		a := &aggs[ai-1]
		a.n++
		a.total += k.Dur
		a.min, a.max = min(a.min, k.Dur), max(a.max, k.Dur)
		v := float64(k.Dur) / 1000
		d := v - a.mean
		a.mean += d / float64(a.n)
		a.m2 += d * (v - a.mean)
		if inDecode[i] {
			a.decode += k.Dur
		}
	}
	byName, inDecode = nil, nil
	inv := &Inventory{Rules: cl.rules.Source, Categories: map[string]units.Duration{}, BySource: map[Source]units.Duration{}, DecodeSteps: decodeSteps, Uncategorised: []KernelRow{}}
	var kernelNS, gpuNS, otherNS int64
	for _, a := range aggs {
		gpuNS += a.total
		if a.kind == tracing.KindKernel {
			kernelNS += a.total
		}
	}
	list := KernelList{names: tr.Names, gpuNS: gpuNS}
	classIDs := map[rowClass]int32{}
	cats := map[string]*CategoryRow{}
	provs := map[string]map[string]bool{}
	for i := range aggs {
		if i%(1<<16) == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		a := &aggs[i]
		name := tr.Names[a.name]
		var c Class
		if a.kind == tracing.KindKernel {
			c = cl.classifyOnce(name)
			inv.BySource[c.Source] += units.Duration(a.total)
		} else if c = cl.rules.Classify(name); c.Source != SourceRule {
			// A copy or memset is one by what it is, not by its name.
			c = Class{Category: "Memcpy / memset", Provider: "runtime", ShortName: name, Source: SourceRule}
		}
		if a.kind == tracing.KindKernel && c.Category == Other {
			otherNS += a.total
		}
		rc := compactClass(name, c)
		id, ok := classIDs[rc]
		if !ok {
			id = int32(len(list.classes))
			list.classes = append(list.classes, rc)
			classIDs[rc] = id
		}
		a.class = id
		cr := cats[c.Category]
		if cr == nil {
			cr = &CategoryRow{Category: c.Category}
			cats[c.Category] = cr
			provs[c.Category] = map[string]bool{}
		}
		if c.Provider != "" {
			provs[c.Category][c.Provider] = true
		}
		cr.Kernels++
		cr.Count += a.n
		cr.Total += units.Duration(a.total)
		if decodeSteps > 0 {
			cr.DecodeStepUS += float64(a.decode) / 1000 / float64(decodeSteps)
		}
	}
	slices.SortStableFunc(aggs, func(a, b kernelAgg) int {
		return cmp.Or(cmp.Compare(b.total, a.total), cmp.Compare(tr.Names[a.name], tr.Names[b.name]))
	})
	if len(aggs) > 0 {
		list.aggs = slices.Clip(aggs)
		inv.Kernels = list
	}
	for i, a := range list.aggs {
		if list.classes[a.class].Category == Other && len(inv.Uncategorised) < uncategorisedMax {
			inv.Uncategorised = append(inv.Uncategorised, list.At(i))
		}
	}
	inv.KernelTime, inv.GPUTime = units.Duration(kernelNS), units.Duration(gpuNS)
	if kernelNS > 0 {
		inv.OtherPct = float64(otherNS) / float64(kernelNS) * 100
	}
	layerUS := layerTimeByCategory(layers)
	for name, cr := range cats {
		inv.Categories[name] = cr.Total
		if gpuNS > 0 {
			cr.Pct = float64(cr.Total) / float64(gpuNS) * 100
		}
		cr.LayerUS = layerUS[name]
		ps := make([]string, 0, len(provs[name]))
		for p := range provs[name] {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		for i, p := range ps {
			if i > 0 {
				cr.Providers += "; "
			}
			cr.Providers += p
		}
		inv.ByCategory = append(inv.ByCategory, *cr)
	}
	slices.SortFunc(inv.ByCategory, func(a, b CategoryRow) int {
		return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.Category, b.Category))
	})
	return inv, nil
}

// layerTimeByCategory is the time per decode layer of each category: the
// position averages weighted by how many layers of each kind ran.
func layerTimeByCategory(t *LayerTable) map[string]float64 {
	out := map[string]float64{}
	if t == nil || len(t.Positions) == 0 {
		return out
	}
	layersOfKind := map[int]int{}
	for _, p := range t.Positions {
		layersOfKind[p.LayerKind] = max(layersOfKind[p.LayerKind], p.Count)
	}
	total := 0
	for _, n := range layersOfKind {
		total += n
	}
	if total == 0 {
		return out
	}
	for _, p := range t.Positions {
		out[p.Category] += p.AvgUS * float64(p.Count) / float64(total)
	}
	return out
}

// KernelsHeader is the column list of conc{bs}_kernels.csv.
var KernelsHeader = []string{"kernel", "short_name", "category", "provider", "count", "total_us", "avg_us", "min_us", "max_us", "std_us", "pct", "category_source"}

// categoriesHeader is the column list of conc{bs}_categories.csv.
var categoriesHeader = []string{"category", "providers", "kernels", "count", "total_us", "pct", "decode_step_us", "layer_us"}

func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// KernelsCSV renders the inventory (sorted by total time, fixed formats).
func (inv *Inventory) KernelsCSV() []byte {
	var buf bytes.Buffer
	_ = inv.WriteKernelsCSV(&buf)
	return buf.Bytes()
}

// WriteKernelsCSV streams KernelsCSV to out, a row at a time: with a
// million distinct kernels the whole text is 170 MB.
func (inv *Inventory) WriteKernelsCSV(out io.Writer) error {
	w := csv.NewWriter(out)
	_ = w.Write(KernelsHeader)
	rec := make([]string, len(KernelsHeader))
	for _, r := range inv.Kernels.All() {
		rec = append(rec[:0], r.Kernel, r.ShortName, r.Category, r.Provider, strconv.Itoa(r.Count), r.Total.String(),
			f3(r.AvgUS), f3(r.MinUS), f3(r.MaxUS), f3(r.StdUS), f2(r.Pct), string(r.Source))
		if err := w.Write(rec); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}

// CategoriesCSV renders the category totals.
func (inv *Inventory) CategoriesCSV() []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write(categoriesHeader)
	for _, r := range inv.ByCategory {
		_ = w.Write([]string{r.Category, r.Providers, strconv.Itoa(r.Kernels), strconv.Itoa(r.Count), r.Total.String(),
			f2(r.Pct), f3(r.DecodeStepUS), f3(r.LayerUS)})
	}
	w.Flush()
	return buf.Bytes()
}
