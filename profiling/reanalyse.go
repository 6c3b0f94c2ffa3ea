package profiling

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/modelconfig"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory/roofline"
)

// Reanalyse redoes the analysis of every level of the run directory dir
// from the traces on disk (a run interrupted before a level's analysis
// was done, or an analysis made by an older version): levels/conc{N}/ and
// run.json's level entries are rewritten. A level without traces on disk
// keeps what it has. It says what it does on log.
func Reanalyse(ctx context.Context, dir string, log io.Writer) error {
	run := results.Run(dir)
	info, err := results.LoadRunInfo(run.RunInfo())
	if err != nil {
		return fmt.Errorf("--reanalyse needs the run's run.json: %w", err)
	}
	numLayers, arch := 0, (*modelconfig.Architecture)(nil)
	if info.ModelConfig != "" {
		mc, err := modelconfig.Load(filepath.Join(dir, info.ModelConfig))
		if err != nil {
			return err
		}
		numLayers = mc.NumHiddenLayers
		a := mc.Architecture()
		arch = &a
	}
	concs := slices.Clone(info.Sweep.Concurrencies)
	for _, l := range info.Levels {
		if !slices.Contains(concs, l.Conc) {
			concs = append(concs, l.Conc)
		}
	}
	slices.Sort(concs)
	done := 0
	for _, c := range concs {
		i := slices.IndexFunc(info.Levels, func(l results.LevelInfo) bool { return l.Conc == c })
		if i < 0 {
			info.Levels = append(info.Levels, results.LevelInfo{Conc: c})
			i = len(info.Levels) - 1
		}
		li := &info.Levels[i]
		traces := li.Traces
		lv, lerr := results.LoadLevel(run.LevelResult(c))
		if lerr == nil {
			li.Result = rel(dir, run.LevelResult(c))
			if len(traces) == 0 {
				for _, f := range lv.TraceFiles {
					traces = append(traces, rel(dir, f))
				}
			}
		}
		var files []string
		for _, t := range traces {
			p := t
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, t)
			}
			if _, err := os.Stat(p); err == nil {
				files = append(files, p)
			}
		}
		if len(files) == 0 || len(files) != len(traces) {
			fmt.Fprintf(log, "conc %d: no traces on disk to analyse: kept as it is\n", c)
			continue
		}
		fmt.Fprintf(log, "conc %d: analysing %s\n", c, rel(dir, files[0]))
		if err := os.RemoveAll(run.Level(c)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		fresh := results.LevelInfo{Conc: c, Result: li.Result, Dir: rel(dir, run.Level(c)), Traces: traces}
		rl := roofline.Level{Arch: arch, TP: max(info.Engine.TP, 1), KVCache: info.Engine.KVCacheDType,
			Context: float64(info.Sweep.ISL) + float64(info.Sweep.OSL)/2}
		if _, _, err := analyseLevel(ctx, run, c, files, numLayers, rl, &fresh); err != nil {
			if ctx.Err() != nil {
				return err
			}
			fresh.Error = err.Error()
			fmt.Fprintf(log, "conc %d: %v\n", c, err)
		}
		switch {
		case fresh.Error != "":
			fresh.Status = cmp.Or(li.Status, "failed")
		case lerr == nil:
			fresh.Status = lv.Status // the client's, as run records it
		default:
			fresh.Status = "ok"
		}
		*li = fresh
		done++
	}
	slices.SortFunc(info.Levels, func(a, b results.LevelInfo) int { return cmp.Compare(a.Conc, b.Conc) })
	if done == 0 {
		return fmt.Errorf("%s: no level has its traces on disk: nothing to analyse", dir)
	}
	return atomicfile.WriteFunc(run.RunInfo(), info.Write)
}
