package report

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/inventory/roofline"
)

// Options control a report.
type Options struct {
	// ModelConfig is a config.json to describe the model from, instead of
	// the copy the run directory keeps (run.json's model_config, else
	// config.json).
	ModelConfig string
	// Peaks is a GPU peaks file for the roofline instead of the built-in
	// table (the format of inventory/roofline/peaks.csv).
	Peaks string
	// Force replaces the report's files even when they were edited since
	// the last report wrote them, or were not written by it.
	Force bool
	// GPUPrice is the price of a GPU-hour in US dollars for the cost per
	// million tokens, instead of the one run.json records; 0: run.json's.
	GPUPrice float64
}

// Report is what Build wrote.
type Report struct {
	Files []string // readme.md and the charts, in the order written
	// Notes say what could not be read from the run directory (also in the
	// readme's warnings).
	Notes []string
}

// Chart file names, in the run directory.
const (
	LatencyChart        = "latency.svg"
	ThroughputChart     = "throughput.svg"
	LayerTimeChart      = "layer_time.svg"
	ThroughputTPOTChart = "throughput_tpot.svg"
)

// Build writes readme.md and its SVG charts into the run directory dir,
// from the files of the run alone. Missing parts of the run (no run.json,
// no model config, a level without its analysis) are said in the report;
// only a directory with no level at all is an error.
func Build(dir string, opt Options) (rep *Report, err error) {
	r, err := loadRun(dir, opt)
	if err != nil {
		return nil, err
	}
	v := newView(r)
	rep = &Report{Notes: r.notes}
	charts := v.charts()
	readme := results.Run(dir).Readme()
	paths := []string{readme}
	for _, c := range charts {
		paths = append(paths, filepath.Join(dir, c.file))
	}
	owned, err := readSums(dir)
	if err != nil {
		return rep, err
	}
	if !opt.Force {
		for _, p := range paths {
			if err := owned.unchanged(p); err != nil {
				return rep, err
			}
		}
	}
	write := func(path string, data []byte) error {
		if err := atomicfile.Write(path, data); err != nil {
			return err
		}
		owned[filepath.Base(path)] = sha256.Sum256(data)
		rep.Files = append(rep.Files, path)
		return nil
	}
	defer func() {
		if len(rep.Files) > 0 {
			if werr := owned.write(dir); err == nil {
				err = werr
			}
		}
	}()
	for _, c := range charts {
		data, err := c.draw()
		if err != nil {
			return rep, fmt.Errorf("drawing %s: %w", c.file, err)
		}
		if err := write(filepath.Join(dir, c.file), data); err != nil {
			return rep, err
		}
	}
	if err := write(readme, v.markdown()); err != nil {
		return rep, err
	}
	return rep, nil
}

// view is a run digested for the report: the analysed levels, the decode
// layer's positions aligned across them, the category figures.
type view struct {
	r       *run
	lv      []*level // levels with a trace analysis
	names   []string // their names, "conc N"
	rows    []*row
	changes []change
	cats    []*catRow
	// roofs is each analysed level's roofline (nil where none), roofNote
	// why there is none.
	roofs    []*roofline.Table
	roofNote string
}

// catRow is one category across the analysed levels.
type catRow struct {
	Category  string
	Providers []string
	Kernels   int       // distinct kernels, most at any level
	LayerUS   []float64 // per layer; NaN where the level has no such kernels
	StepUS    []float64 // per decode step
	Share     []float64 // percent of the decode step's kernel time
	LayerFit  fit
	StepFit   fit
	layerS    series
}

func newView(r *run) *view {
	v := &view{r: r, lv: r.analysed()}
	var tables [][]inventory.Position
	for _, l := range v.lv {
		v.names = append(v.names, l.name())
		if t := l.decode(); t != nil {
			tables = append(tables, t.Positions)
		} else {
			tables = append(tables, nil)
		}
	}
	v.rows, v.changes = alignLevels(tables)
	nameRows(v.rows)
	for _, rw := range v.rows {
		s, changes := v.rowSeries(rw)
		rw.Fit = fitLine(s.xs, s.ys)
		cat := ""
		if p := rw.first(); p != nil {
			cat = p.Category
		}
		rw.Trend = trend(s, rw.Fit, changes, cat, v.names)
	}
	v.categories()
	v.roofs, v.roofNote = v.rooflines()
	return v
}

// rowSeries is a row's average time against decode batch size, and the
// indices of the points whose kernel differs from the one before.
func (v *view) rowSeries(rw *row) (series, []int) {
	var s series
	var changes []int
	var prev string
	for i, p := range rw.Cells {
		if p == nil {
			continue
		}
		if len(s.ys) > 0 && p.Kernel != prev {
			changes = append(changes, len(s.ys))
		}
		prev = p.Kernel
		s.add(float64(v.lv[i].BS()), p.AvgUS, i)
	}
	return s, changes
}

// categories collects the category totals of every analysed level.
func (v *view) categories() {
	byName := map[string]*catRow{}
	n := len(v.lv)
	for i, l := range v.lv {
		inv := l.File.Inventory
		if inv == nil {
			continue
		}
		total := 0.0
		for _, c := range inv.ByCategory {
			total += c.DecodeStepUS
		}
		for _, c := range inv.ByCategory {
			cr := byName[c.Category]
			if cr == nil {
				cr = &catRow{Category: c.Category, LayerUS: nanSlice(n), StepUS: nanSlice(n), Share: nanSlice(n)}
				byName[c.Category] = cr
				v.cats = append(v.cats, cr)
			}
			for _, p := range strings.Split(c.Providers, "; ") {
				if p != "" && !slices.Contains(cr.Providers, p) {
					cr.Providers = append(cr.Providers, p)
				}
			}
			cr.Kernels = max(cr.Kernels, c.Kernels)
			cr.StepUS[i] = c.DecodeStepUS
			if t := l.decode(); t != nil {
				cr.LayerUS[i] = layerByCategory(&t.LayerTable)[c.Category]
			}
			if total > 0 {
				cr.Share[i] = 100 * c.DecodeStepUS / total
			}
		}
	}
	for _, cr := range v.cats {
		slices.Sort(cr.Providers)
		var ls, ss series
		for i := range v.lv {
			x := float64(v.lv[i].BS())
			if !math.IsNaN(cr.LayerUS[i]) {
				ls.add(x, cr.LayerUS[i], i)
				ss.add(x, cr.StepUS[i], i)
			}
		}
		cr.LayerFit, cr.StepFit, cr.layerS = fitLine(ls.xs, ls.ys), fitLine(ss.xs, ss.ys), ls
	}
	// Largest first at the highest level, then by name.
	last := n - 1
	slices.SortStableFunc(v.cats, func(a, b *catRow) int {
		return cmp.Or(cmp.Compare(val(b.StepUS, last), val(a.StepUS, last)), cmp.Compare(a.Category, b.Category))
	})
}

// layerByCategory is one layer's time of each category: the positions'
// averages, each layer kind weighted by its share of the layers, so that
// the categories add up to analysis.LayerTime.
func layerByCategory(t *inventory.LayerTable) map[string]float64 {
	layersOfKind := map[int]int{}
	for _, p := range t.Positions {
		layersOfKind[p.LayerKind] = max(layersOfKind[p.LayerKind], p.Count)
	}
	total := 0
	for _, n := range layersOfKind {
		total += n
	}
	out := map[string]float64{}
	if total == 0 {
		return out
	}
	for _, p := range t.Positions {
		out[p.Category] += p.AvgUS * float64(layersOfKind[p.LayerKind]) / float64(total)
	}
	return out
}

func nanSlice(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}

// val is s[i], 0 when absent.
func val(s []float64, i int) float64 {
	if i < 0 || i >= len(s) || math.IsNaN(s[i]) {
		return 0
	}
	return s[i]
}

// md is a markdown buffer.
type md struct{ bytes.Buffer }

func (b *md) p(format string, a ...any) { fmt.Fprintf(b, format, a...) }

// table writes a markdown table; align is one of "l" or "r" per column.
func (b *md) table(head []string, align string, rows [][]string) {
	b.p("| %s |\n|", strings.Join(head, " | "))
	for i := range head {
		if i < len(align) && align[i] == 'r' {
			b.p("---:|")
		} else {
			b.p("---|")
		}
	}
	b.p("\n")
	for _, r := range rows {
		b.p("| %s |\n", strings.Join(r, " | "))
	}
	b.p("\n")
}

// esc makes text safe in a table cell.
func esc(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// code puts a kernel name in backticks.
func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(s, "`", "'") + "`"
}
