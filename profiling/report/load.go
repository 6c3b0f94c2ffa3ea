package report

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/internal/modelconfig"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/inventory/roofline"
)

// level is one concurrency level of a run, from whatever files it left.
type level struct {
	Conc    int
	Result  *results.Level     // conc{N}.json; nil when missing
	Row     results.SummaryRow // from Result, else from summary.csv
	HaveRow bool
	File    *analysis.LevelFile // levels/conc{N}/analysis.json; nil when missing
}

// BS is the level's decode batch size as the GPU saw it (from the trace),
// else the client's concurrency.
func (l *level) BS() int {
	switch {
	case l.File != nil && l.File.DecodeBS() > 0:
		return l.File.DecodeBS()
	case l.Row.DecodeBS > 0:
		return l.Row.DecodeBS
	}
	return l.Conc
}

func (l *level) name() string { return fmt.Sprintf("conc %d", l.Conc) }

// decode is the level's decode table, nil when it has no positions.
func (l *level) decode() *analysis.LevelTable {
	if l.File == nil || l.File.Decode == nil || len(l.File.Decode.Positions) == 0 {
		return nil
	}
	return l.File.Decode
}

// run is everything the report reads from a run directory.
type run struct {
	dir    string
	info   *results.RunInfo
	arch   *modelconfig.Architecture // nil when no model config was found
	levels []*level                  // by concurrency
	peaks  roofline.Peaks            // the GPU peaks file given, nil: the built-in table
	price  float64                   // US dollars per GPU-hour; 0: none
	notes  []string                  // what could not be read, for the warnings section
	// overhead is the run's profiler-overhead check (overhead.json); nil
	// when it made none.
	overhead *results.Overhead
}

// loadRun reads a run directory. Only a directory that cannot be listed, or
// that holds no level at all, is an error; every missing or damaged file
// becomes a note.
func loadRun(dir string, opt Options) (*run, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the run directory: %w (give the directory a profiling run wrote)", err)
	}
	rd := results.Run(dir)
	r := &run{dir: dir}
	r.info, r.notes = loadRunInfo(rd.RunInfo())
	r.price = cmp.Or(opt.GPUPrice, r.info.GPUPrice)
	byConc := map[int]*level{}
	get := func(conc int) *level {
		if byConc[conc] == nil {
			byConc[conc] = &level{Conc: conc}
		}
		return byConc[conc]
	}
	for _, e := range entries {
		if conc, ok := concOf(e.Name(), ".json"); ok && !e.IsDir() {
			l, err := results.LoadLevel(filepath.Join(dir, e.Name()))
			if err != nil {
				r.notes = append(r.notes, fmt.Sprintf("%s could not be read (%v): its throughput figures are missing", e.Name(), err))
				continue
			}
			lv := get(conc)
			lv.Result, lv.Row, lv.HaveRow = l, results.SummaryRowOf(l), true
		}
	}
	if rows, err := results.LoadSummary(rd.Summary()); err == nil {
		for _, row := range rows {
			if lv := get(row.Conc); !lv.HaveRow {
				lv.Row, lv.HaveRow = row, true
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		r.notes = append(r.notes, fmt.Sprintf("summary.csv could not be read: %v", err))
	}
	damaged := map[int]bool{}
	levelDirs, _ := os.ReadDir(filepath.Join(dir, "levels"))
	for _, e := range levelDirs {
		conc, ok := concOf(e.Name(), "")
		if !ok || !e.IsDir() {
			continue
		}
		path := filepath.Join(rd.Level(conc), analysis.LevelFileName)
		f, err := analysis.LoadLevelFile(path)
		if err != nil {
			rel, _ := filepath.Rel(dir, path)
			if errors.Is(err, os.ErrNotExist) {
				err = errors.New("missing")
			}
			r.notes = append(r.notes, fmt.Sprintf("%s: %v: the trace analysis of concurrency %d is not shown", filepath.ToSlash(rel), err, conc))
			get(conc)
			damaged[conc] = true
			continue
		}
		get(conc).File = f
	}
	for _, l := range byConc {
		r.levels = append(r.levels, l)
	}
	slices.SortFunc(r.levels, func(a, b *level) int { return cmp.Compare(a.Conc, b.Conc) })
	if len(r.levels) == 0 {
		return nil, fmt.Errorf("%s holds no level results (conc{N}.json, summary.csv or levels/conc{N}/%s): is it a run directory?", dir, analysis.LevelFileName)
	}
	for _, l := range r.levels {
		if l.File == nil && !damaged[l.Conc] {
			r.notes = append(r.notes, fmt.Sprintf("concurrency %d has no trace analysis (levels/conc%d/%s): its kernels and step times are not shown", l.Conc, l.Conc, analysis.LevelFileName))
		}
	}
	r.loadConfig(opt)
	if o, oerr := results.ReadOverhead(rd.Overhead()); oerr != nil {
		r.notes = append(r.notes, oerr.Error())
	} else {
		r.overhead = o
	}
	if opt.Peaks != "" {
		if r.peaks, err = roofline.LoadPeaks(opt.Peaks); err != nil {
			return nil, fmt.Errorf("reading the peaks file: %w", err)
		}
	}
	r.ensureRoles()
	r.engineClock()
	return r, nil
}

// loadConfig reads the model's config.json: the one the options name, else
// the copy the run keeps.
func (r *run) loadConfig(opt Options) {
	path := opt.ModelConfig
	if path == "" {
		path = results.Run(r.dir).ModelConfig()
		if name := r.info.ModelConfig; name != "" {
			path = filepath.Join(r.dir, name)
		}
	}
	c, err := modelconfig.Load(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			r.notes = append(r.notes, fmt.Sprintf("no model config (%s): the architecture comes from the traces alone", filepath.Base(path)))
		} else {
			r.notes = append(r.notes, fmt.Sprintf("the model config could not be read (%v): the architecture comes from the traces alone", err))
		}
		return
	}
	for _, n := range c.Notes {
		r.notes = append(r.notes, "model config: "+n)
	}
	a := c.Architecture()
	r.arch = &a
}

// concOf reads N from conc{N}{suffix}.
func concOf(name, suffix string) (int, bool) {
	s, ok := strings.CutPrefix(name, "conc")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, suffix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0
}

// analysed is the levels that have a trace analysis.
func (r *run) analysed() []*level {
	var out []*level
	for _, l := range r.levels {
		if l.File != nil {
			out = append(out, l)
		}
	}
	return out
}
