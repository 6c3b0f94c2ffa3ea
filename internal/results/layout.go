package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Run is the layout of a run directory: every file a profiling run writes,
// named once here.
//
//	server.log               the engine's output
//	run.json                 the run's parameters, engine command line, times
//	conc{N}.json             level results (N = client concurrency)
//	summary.csv, bench.txt   the sweep summary and its benchmark file
//	traces/                  the traces, as the engine wrote them
//	levels/conc{N}/          the analysis of each level's trace (TraceFiles)
//	readme.md, *.svg         the report
type Run string

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// NewRunDir makes a new run directory under out, named after the model's
// base name and the UTC time (MiniMax-M2.5-20261129T180000Z), with a
// suffix -2, -3, … when that exists: a run never writes into an earlier
// one. Both `run` and `bench` name their directories with it.
func NewRunDir(out, model string, now time.Time) (string, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", out, err)
	}
	name := unsafeName.ReplaceAllString(filepath.Base(strings.TrimRight(model, "/")), "_")
	base := filepath.Join(out, name+"-"+now.UTC().Format("20060102T150405Z"))
	for i := 1; i < 1000; i++ {
		dir := base
		if i > 1 {
			dir = fmt.Sprintf("%s-%d", base, i)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("creating the run directory: %w", err)
		}
	}
	return "", fmt.Errorf("creating the run directory: %s-* all exist", base)
}

func (r Run) path(name string) string { return filepath.Join(string(r), name) }

// Dir is the run directory itself.
func (r Run) Dir() string { return string(r) }

// LevelResult is conc{N}.json.
func (r Run) LevelResult(conc int) string { return r.path(fmt.Sprintf("conc%d.json", conc)) }

// Summary is summary.csv.
func (r Run) Summary() string { return r.path("summary.csv") }

// Bench is bench.txt.
func (r Run) Bench() string { return r.path("bench.txt") }

// ServerLog is the engine's captured output.
func (r Run) ServerLog() string { return r.path("server.log") }

// RunInfo is run.json.
func (r Run) RunInfo() string { return r.path("run.json") }

// Readme is the report.
func (r Run) Readme() string { return r.path("readme.md") }

// ReportSums lists the SHA-256 of each file the report wrote, in
// sha256sum's format: a later report replaces only files unchanged since.
func (r Run) ReportSums() string { return r.path("report.sha256") }

// Traces is the engine's profiler directory.
func (r Run) Traces() string { return r.path("traces") }

// Level is the analysis directory of the level run at concurrency conc.
func (r Run) Level(conc int) string {
	return r.path(filepath.Join("levels", fmt.Sprintf("conc%d", conc)))
}

// LevelAnalysis is the analysis file of a level (levels/conc{N}/analysis.json,
// written by analysis.LevelFile): everything the report needs of the trace.
func (r Run) LevelAnalysis(conc int) string { return filepath.Join(r.Level(conc), "analysis.json") }

// concPrefix is the prefix a trace's analysis files carry: conc{bs}_, bs
// being the decode batch size read from the trace (not the client's
// concurrency). Empty when the batch size is unknown.
func concPrefix(bs int) string {
	if bs <= 0 {
		return ""
	}
	return fmt.Sprintf("conc%d_", bs)
}

// TraceFiles names the analysis files of one trace: the per-layer tables,
// the kernel inventory and the category totals, each prefixed conc{bs}_.
// Built from an output directory (InDir) or from a file name the user gave
// (FromCSV).
type TraceFiles struct {
	Layer        string // conc{bs}_layer.csv: robust decode table
	PrefillLayer string // conc{bs}_prefill_layer.csv
	CompatLayer  string // conc{bs}_compat_layer.csv (in a directory) or the --csv name in compat mode
	Kernels      string // conc{bs}_kernels.csv
	Categories   string // conc{bs}_categories.csv
}

// InDir names the analysis files of a trace with decode batch size bs in dir.
func InDir(dir string, bs int) TraceFiles {
	p := concPrefix(bs)
	f := func(base string) string { return filepath.Join(dir, p+base) }
	return TraceFiles{
		Layer: f("layer.csv"), PrefillLayer: f("prefill_layer.csv"), CompatLayer: f("compat_layer.csv"),
		Kernels: f("kernels.csv"), Categories: f("categories.csv"),
	}
}

// WithPrefix puts the conc{bs}_ prefix in front of the file name of a path
// the user gave (kept as it is when it already has it, or bs is unknown).
func WithPrefix(path string, bs int) string {
	p := concPrefix(bs)
	dir, base := filepath.Split(path)
	if p == "" || strings.HasPrefix(base, p) {
		return path
	}
	return filepath.Join(dir, p+base)
}

// PrefillOf names the prefill table after a decode table's file:
// conc8_layer.csv → conc8_prefill_layer.csv (the conc{bs}_ prefix stays
// first so a directory listing groups a level's files).
func PrefillOf(decodePath string, bs int) string {
	dir, base := filepath.Split(decodePath)
	if p := concPrefix(bs); p != "" && strings.HasPrefix(base, p) {
		return filepath.Join(dir, p+"prefill_"+strings.TrimPrefix(base, p))
	}
	return filepath.Join(dir, "prefill_"+base)
}

// CategoriesOf names the category totals after an inventory file:
// conc8_kernels.csv → conc8_categories.csv, x.csv → x_categories.csv.
func CategoriesOf(kernelsPath string) string {
	dir, base := filepath.Split(kernelsPath)
	if strings.Contains(base, "kernels") {
		return filepath.Join(dir, strings.Replace(base, "kernels", "categories", 1))
	}
	return filepath.Join(dir, strings.TrimSuffix(base, filepath.Ext(base))+"_categories.csv")
}

// TraceStem is a trace's file name without its directory and trace
// extensions: rank_0/m_ts_20260101_120000_1.pt.trace.json.gz →
// m_ts_20260101_120000_1.
func TraceStem(path string) string {
	base := filepath.Base(path)
	for _, ext := range []string{".gz", ".json", ".trace", ".pt"} {
		base = strings.TrimSuffix(base, ext)
	}
	return base
}
