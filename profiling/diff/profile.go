package diff

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/tracing"
)

// How a profile's per-step times were obtained.
const (
	// stepFromTrace: summed from the kernels of each analysed step, per
	// kernel and per category.
	stepFromTrace = "trace"
	// stepFromCategories: a level's CSV files hold per-step times per
	// category only; kernels are compared per layer.
	stepFromCategories = "categories"
)

// Profile is one side of a comparison: the per-layer table, the kernels
// and their times of one trace or one level's analysis files.
type Profile struct {
	Source   string `json:"source"`
	Device   string `json:"device,omitempty"` // "" when unknown (CSV input)
	DecodeBS int    `json:"decode_bs"`
	// StepKind is what the steps are: "decode", or "profiler_step" for a
	// trace without engine steps. Empty when unknown.
	StepKind        string `json:"step_kind,omitempty"`
	Steps           int    `json:"steps"`           // steps analysed, 0 when unknown
	LayersPerStep   int    `json:"layers_per_step"` // 0 when unknown
	KernelsPerLayer []int  `json:"kernels_per_layer,omitempty"`
	// StepTimes is where the per-step times come from: "trace" (the
	// kernels of each step), "categories" (a level's category table), or
	// "" when they are unknown.
	StepTimes string `json:"step_times,omitempty"`
	// CategoryStepUS is the GPU time per step of each category (when
	// StepTimes is set).
	CategoryStepUS map[string]float64 `json:"-"`
	Positions      []Position         `json:"-"`
	Kernels        []Kernel           `json:"-"`
	Warnings       []diag.Warning     `json:"warnings,omitempty"` // of the analysis
	// Notes say what the profile lacks (files not found beside a table).
	Notes  []string         `json:"notes,omitempty"`
	byName map[string]int32 // kernel name -> index into Kernels
}

// Position is one kernel position of the per-layer table.
type Position struct {
	Pos       int
	LayerKind int
	ShortName string // for tables
	Label     string // the role label, unique in its layer kind ("MoE_GEMM (gate_up)")
	Kernel    string // full name
	Category  string
	Provider  string
	AvgUS     float64
	StdUS     float64 // spread across layers (sample standard deviation)
	Count     int
	// LayerUS is the position's part of the time of an average layer: its
	// mean weighted by how many layers of its kind ran (alternating layers
	// share the per-layer time).
	LayerUS float64
	// PctRoof is the position's % of the roofline (the layer CSV's
	// pct_roofline column), nil when its table has none.
	PctRoof *float64
}

// Kernel is one distinct kernel (or copy) with its times.
type Kernel struct {
	Kernel    string
	ShortName string
	Category  string
	Provider  string
	Count     int     // launches in the whole trace
	TotalUS   float64 // in the whole trace, 0 when unknown
	StepUS    float64 // per step, when Profile.StepTimes is StepFromTrace
	LayerUS   float64 // per layer: sum over its positions
}

// HasSteps reports whether per-step times are known (per category at
// least).
func (p *Profile) HasSteps() bool { return p.StepTimes != "" }

// HasKernelSteps reports whether per-step times are known per kernel.
func (p *Profile) HasKernelSteps() bool { return p.StepTimes == stepFromTrace }

// HasLayers reports whether the profile has a per-layer table.
func (p *Profile) HasLayers() bool { return len(p.Positions) > 0 }

// HasTotals reports whether whole-trace kernel times are known.
func (p *Profile) HasTotals() bool {
	for _, k := range p.Kernels {
		if k.TotalUS > 0 {
			return true
		}
	}
	return false
}

// fromResult makes the profile of an analysed trace. The result must hold
// the robust decode table and the inventory (analysis.Layers|Inventory)
// and the trace itself, from which the per-step kernel times are summed.
func fromResult(r *analysis.Result) (*Profile, error) {
	if r.Inventory == nil {
		return nil, fmt.Errorf("%s: the analysis has no kernel inventory (ask for analysis.Inventory)", r.Path)
	}
	p := &Profile{Source: r.Path, Device: r.Summary.Device, DecodeBS: r.DecodeBS(), Warnings: r.Warnings}
	if lt := r.Decode; lt != nil && len(lt.Positions) > 0 {
		p.StepKind, p.Steps, p.LayersPerStep = lt.StepKind, lt.Steps, lt.Layers
		p.KernelsPerLayer = lt.KernelsPerLayer
		p.Positions = positionsOf(lt.Positions)
	}
	for _, k := range r.Inventory.Kernels.All() {
		p.Kernels = append(p.Kernels, Kernel{Kernel: k.Kernel, ShortName: k.ShortName, Category: k.Category,
			Provider: k.Provider, Count: k.Count, TotalUS: k.Total.US()})
	}
	p.index()
	if r.Trace != nil {
		if p.StepKind == "" {
			p.StepKind = stepKindOf(r.Trace)
		}
		kinds := stepKinds(p.StepKind)
		seen := make([]bool, len(r.Trace.Kernels))
		perName := make([]int64, len(r.Trace.Names)) // by name index
		inStep := make([]bool, len(r.Trace.Names))
		steps := 0
		for i := range r.Trace.Steps {
			st := &r.Trace.Steps[i]
			if !slices.Contains(kinds, st.Kind) || len(st.Kernels) == 0 {
				continue
			}
			steps++
			for _, ki := range st.Kernels {
				if !seen[ki] {
					seen[ki] = true
					k := &r.Trace.Kernels[ki]
					perName[k.NameID] += k.Dur
					inStep[k.NameID] = true
				}
			}
		}
		if steps > 0 {
			p.Steps, p.StepTimes = steps, stepFromTrace
			p.CategoryStepUS = map[string]float64{}
			for id, ns := range perName {
				if i, ok := p.byName[r.Trace.Names[id]]; ok && inStep[id] {
					k := &p.Kernels[i]
					k.StepUS = float64(ns) / 1000 / float64(steps)
					p.CategoryStepUS[k.Category] += k.StepUS
				}
			}
		}
	}
	p.addLayerTimes()
	return p, nil
}

// stepKindOf is the kind of step a trace's per-step times are of when it
// has no layer table to say so: decode steps when it has any, else its
// profiler steps or graph replays.
func stepKindOf(tr *tracing.Trace) string {
	for i := range tr.Steps {
		if tr.Steps[i].Kind == tracing.StepDecode && len(tr.Steps[i].Kernels) > 0 {
			return string(tracing.StepDecode)
		}
	}
	return string(tracing.StepProfiler)
}

// stepKinds are the step kinds a layer table of the given kind was made
// from: a trace without engine steps is broken down by its profiler steps
// or graph replays.
func stepKinds(kind string) []tracing.StepKind {
	if tracing.StepKind(kind) == tracing.StepProfiler {
		return []tracing.StepKind{tracing.StepProfiler, tracing.StepGraph}
	}
	return []tracing.StepKind{tracing.StepKind(kind)}
}

func positionsOf(ps []inventory.Position) []Position {
	out := make([]Position, len(ps))
	layersOfKind := map[int]int{}
	for _, p := range ps {
		layersOfKind[p.LayerKind] = max(layersOfKind[p.LayerKind], p.Count)
	}
	total := 0
	for _, n := range layersOfKind {
		total += n
	}
	// Positions are named by their roles (inferred when the table has
	// none), each name unique within its layer kind.
	t := inventory.LayerTable{Positions: ps}
	if !slices.ContainsFunc(ps, func(p inventory.Position) bool { return p.Role != "" }) {
		t.Positions = slices.Clone(ps)
		t.AssignRoles(nil)
	}
	labels := t.Labels()
	for i, p := range ps {
		out[i] = Position{Pos: p.Pos, LayerKind: p.LayerKind, ShortName: p.ShortName, Label: labels[i], Kernel: p.Kernel,
			Category: p.Category, Provider: p.Provider, AvgUS: p.AvgUS, StdUS: p.StdUS, Count: p.Count}
		if p.Roof != nil {
			pct := p.Roof.PctRoof
			out[i].PctRoof = &pct
		}
		if total > 0 {
			out[i].LayerUS = p.AvgUS * float64(p.Count) / float64(total)
		}
	}
	return out
}

func (p *Profile) index() {
	p.byName = make(map[string]int32, len(p.Kernels))
	for i, k := range p.Kernels {
		p.byName[k.Kernel] = int32(i)
	}
}

// addLayerTimes adds the per-layer time of each kernel, and a kernel entry
// for every position whose kernel the inventory lacks (a level given by
// its layer table alone).
func (p *Profile) addLayerTimes() {
	for _, pos := range p.Positions {
		i, ok := p.byName[pos.Kernel]
		if !ok {
			i = int32(len(p.Kernels))
			p.Kernels = append(p.Kernels, Kernel{Kernel: pos.Kernel, ShortName: pos.ShortName,
				Category: pos.Category, Provider: pos.Provider})
			p.byName[pos.Kernel] = i
		}
		p.Kernels[i].LayerUS += pos.LayerUS
	}
}

// layerCSVName matches the decode table of a level: conc{bs}_layer.csv
// (layer.csv when the batch size is unknown).
var layerCSVName = regexp.MustCompile(`^(?:conc(\d+)_)?layer\.csv$`)

// concPrefix is the conc{bs}_ prefix of a level's file names.
var concPrefix = regexp.MustCompile(`^conc(\d+)_`)

// LoadLevel reads a level's analysis files: a directory holding
// conc{bs}_layer.csv (with conc{bs}_kernels.csv and conc{bs}_categories.csv
// beside it when present), or the path of a per-layer CSV. Categories come
// from rules (nil: the built-in table), so that both sides of a comparison
// are classified alike.
func LoadLevel(path string, rules *inventory.Rules) (*Profile, error) {
	if rules == nil {
		rules = inventory.DefaultRules()
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	layerPath := path
	if st.IsDir() {
		if layerPath, err = findLayerCSV(path, 0); err != nil {
			return nil, err
		}
	}
	dir, base := filepath.Split(layerPath)
	bs := 0
	if m := concPrefix.FindStringSubmatch(base); m != nil {
		bs, _ = strconv.Atoi(m[1])
	}
	files := results.InDir(dir, bs)
	rows, err := inventory.ReadLayerCSV(layerPath)
	if err != nil {
		return nil, err
	}
	p := &Profile{Source: path, DecodeBS: bs}
	ps := make([]inventory.Position, len(rows))
	for i, r := range rows {
		c := rules.Classify(r.Kernel)
		ps[i] = inventory.Position{Pos: r.Pos, ShortName: r.ShortName, Kernel: r.Kernel, Category: c.Category,
			Provider: c.Provider, AvgUS: r.AvgUS, StdUS: r.StdUS, Count: r.Count, Role: r.Role, Roof: r.Roof}
	}
	p.Positions = positionsOf(ps)
	p.KernelsPerLayer = []int{len(rows)}
	p.StepKind = "decode"
	kernels, err := readKernelsCSV(files.Kernels, rules)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.Notes = append(p.Notes, fmt.Sprintf("no %s beside %s: kernels outside the layers and whole-trace times are not compared", filepath.Base(files.Kernels), layerPath))
	case err != nil:
		return nil, err
	default:
		p.Kernels = kernels
	}
	p.index()
	cats, err := readCategoriesCSV(files.Categories)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.Notes = append(p.Notes, fmt.Sprintf("no %s beside %s: per-step times are not compared", filepath.Base(files.Categories), layerPath))
	case err != nil:
		return nil, err
	default:
		for _, step := range cats {
			if step > 0 {
				p.CategoryStepUS, p.StepTimes = cats, stepFromCategories
				break
			}
		}
	}
	p.addLayerTimes()
	return p, nil
}

// findLayerCSV finds the decode table in a level directory: the one
// conc{bs}_layer.csv (that of batch size bs when bs > 0 and it exists), or
// layer.csv.
func findLayerCSV(dir string, bs int) (string, error) {
	if bs > 0 {
		if p := results.InDir(dir, bs).Layer; fileExists(p) {
			return p, nil
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var found []string
	for _, e := range ents {
		if !e.IsDir() && layerCSVName.MatchString(e.Name()) {
			found = append(found, e.Name())
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%s holds no conc{bs}_layer.csv: give a trace, a level's analysis directory (conc{bs}_layer.csv and its siblings) or a run directory", dir)
	case 1:
		return filepath.Join(dir, found[0]), nil
	}
	return "", fmt.Errorf("%s holds the tables of several levels (%s): give the path of one conc{bs}_layer.csv", dir, strings.Join(found, ", "))
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// readKernelsCSV reads conc{bs}_kernels.csv (columns found by name).
func readKernelsCSV(path string, rules *inventory.Rules) ([]Kernel, error) {
	recs, col, err := readCSV(path, []string{"kernel", "category", "count", "total_us"})
	if err != nil {
		return nil, err
	}
	out := make([]Kernel, 0, len(recs))
	for i, rec := range recs {
		n, err1 := strconv.Atoi(rec[col["count"]])
		total, err2 := strconv.ParseFloat(rec[col["total_us"]], 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("%s: line %d: count and total_us must be numbers: %w", path, i+2, err)
		}
		name := rec[col["kernel"]]
		c := rules.Classify(name)
		if c.Category == inventory.Other {
			c.Category = rec[col["category"]] // copies: categorised by kind when written
		}
		out = append(out, Kernel{Kernel: name, ShortName: c.ShortName, Category: c.Category, Provider: c.Provider, Count: n, TotalUS: total})
	}
	return out, nil
}

// readCategoriesCSV reads conc{bs}_categories.csv: category -> GPU time
// per decode step.
func readCategoriesCSV(path string) (map[string]float64, error) {
	recs, col, err := readCSV(path, []string{"category", "decode_step_us"})
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for i, rec := range recs {
		step, err := strconv.ParseFloat(rec[col["decode_step_us"]], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: decode_step_us must be a number: %w", path, i+2, err)
		}
		out[rec[col["category"]]] = step
	}
	return out, nil
}

// readCSV reads a CSV file with a header holding at least want.
func readCSV(path string, want []string) ([][]string, map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	head, err := cr.Read()
	if err != nil {
		if err == io.EOF {
			err = errors.New("empty file")
		}
		return nil, nil, fmt.Errorf("%s: reading the header: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for _, w := range want {
		if _, ok := col[w]; !ok {
			return nil, nil, fmt.Errorf("%s: line 1: no %q column (want %s): not a file profile-model wrote", path, w, strings.Join(want, ","))
		}
	}
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return recs, col, nil
}

// loadTrace analyses a trace and makes its profile.
func loadTrace(ctx context.Context, path string, rules *inventory.Rules) (*Profile, error) {
	r, err := analysis.Load(ctx, path, analysis.Options{Parts: analysis.Layers | analysis.Inventory, Rules: rules})
	if err != nil {
		return nil, err
	}
	return fromResult(r)
}

// round3 rounds to three decimals (nanoseconds, for µs figures).
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// Input kinds.
const (
	Trace = "trace" // a Kineto trace file
	Level = "level" // a level's analysis files (conc{bs}_layer.csv and siblings)
	Run   = "run"   // a run directory (conc{N}.json, summary.csv, levels/)
)

// KindOf tells what path is: a run directory, a level's analysis files (a
// directory holding them, or a .csv file) or a trace.
func KindOf(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	switch {
	case st.IsDir() && IsRun(path):
		return Run, nil
	case st.IsDir():
		return Level, nil
	case strings.HasSuffix(path, ".csv"):
		return Level, nil
	}
	return Trace, nil
}

// LoadProfile reads a trace or a level's analysis files.
func LoadProfile(ctx context.Context, path string, opt Options) (*Profile, error) {
	kind, err := KindOf(path)
	if err != nil {
		return nil, err
	}
	switch kind {
	case Level:
		return LoadLevel(path, opt.Rules)
	case Trace:
		return loadTrace(ctx, path, opt.Rules)
	}
	return nil, fmt.Errorf("%s is a run directory: compare it with another run directory", path)
}
