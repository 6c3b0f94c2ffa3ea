package profiling

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory"
)

// The golden check of a level: its kernel inventory (conc{bs}_kernels.csv)
// and its decode per-layer table (conc{bs}_layer.csv), as Run wrote them,
// against the same files in a golden directory. The structure must match
// exactly — the set of kernels with their short names, categories and
// providers, and the kernel at every position of the layer — and every
// average time must be within the tolerance. Counts, totals, shares and
// spreads are not compared: they follow from how many steps a level ran.

// Mismatch is one way a level differs from its goldens.
type Mismatch struct {
	File string // the golden file's base name, e.g. conc8_layer.csv
	// Pos is the position in the layer (as the golden numbers it, or the
	// measured table's for a kernel the golden lacks); -1 in the inventory.
	Pos       int
	ShortName string
	Kernel    string // the full kernel name
	// What differs: "avg_us", "kernel" (another kernel at this position),
	// "short_name", "category", "provider", "missing" (in the golden, not
	// measured) or "added" (measured, not in the golden).
	What             string
	Golden, Measured string
	Note             string // for times: the difference and what was allowed
}

func (m Mismatch) String() string {
	where := m.File
	if m.Pos >= 0 {
		where += fmt.Sprintf(" pos %d", m.Pos)
	}
	name := fmt.Sprintf("%s [%s]", m.ShortName, abbrev(m.Kernel))
	switch m.What {
	case "missing":
		return fmt.Sprintf("%s: %s: in the golden, not measured", where, name)
	case "added":
		return fmt.Sprintf("%s: %s: measured, not in the golden", where, name)
	case "kernel":
		g, me := nameDiff(m.Golden, m.Measured)
		return fmt.Sprintf("%s: %s: another kernel runs here: golden [%s], measured [%s]", where, m.ShortName, g, me)
	case "avg_us":
		return fmt.Sprintf("%s: %s: avg %s µs, golden %s µs (%s)", where, name, m.Measured, m.Golden, m.Note)
	}
	return fmt.Sprintf("%s: %s: %s %q, golden %q", where, name, m.What, m.Measured, m.Golden)
}

// GoldenFiles are the files of a level that have goldens, in dir.
func GoldenFiles(dir string, bs int) []string {
	f := results.InDir(dir, bs)
	return []string{f.Kernels, f.Layer}
}

var goldenName = regexp.MustCompile(`^conc(\d+)_kernels\.csv$`)

// GoldenBatchSizes lists the decode batch sizes a golden directory holds.
func GoldenBatchSizes(dir string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		if m := goldenName.FindStringSubmatch(e.Name()); m != nil {
			n, _ := strconv.Atoi(m[1])
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// CompareLevel checks the analysis of a level (levelDir, decode batch size
// bs) against the goldens of that batch size in goldenDir. An error means
// a file could not be read (a golden that does not exist wraps
// os.ErrNotExist); differences are returned as mismatches.
func CompareLevel(goldenDir, levelDir string, bs int, tol Tolerance) ([]Mismatch, error) {
	gf, mf := results.InDir(goldenDir, bs), results.InDir(levelDir, bs)
	gk, err := readKernelsCSV(gf.Kernels)
	if err != nil {
		return nil, fmt.Errorf("golden: %w", err)
	}
	gl, err := inventory.ReadLayerCSV(gf.Layer)
	if err != nil {
		return nil, fmt.Errorf("golden: %w", err)
	}
	mk, err := readKernelsCSV(mf.Kernels)
	if err != nil {
		return nil, err
	}
	ml, err := inventory.ReadLayerCSV(mf.Layer)
	if err != nil {
		return nil, err
	}
	out := compareKernels(filepath.Base(gf.Kernels), gk, mk, tol)
	out = append(out, compareLayer(filepath.Base(gf.Layer), gl, ml, tol)...)
	return out, nil
}

// WriteGolden copies a level's compared files into goldenDir, each
// written atomically, and returns their paths.
func WriteGolden(goldenDir, levelDir string, bs int) ([]string, error) {
	if err := os.MkdirAll(goldenDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the golden directory: %w", err)
	}
	var wrote []string
	for i, src := range GoldenFiles(levelDir, bs) {
		data, err := os.ReadFile(src)
		if err != nil {
			return wrote, err
		}
		dst := GoldenFiles(goldenDir, bs)[i]
		if err := atomicfile.Write(dst, data); err != nil {
			return wrote, err
		}
		wrote = append(wrote, dst)
	}
	return wrote, nil
}

// FormatMismatches is a readable report of a level's differences.
func FormatMismatches(w io.Writer, ms []Mismatch) {
	for _, m := range ms {
		fmt.Fprintf(w, "  %s\n", m)
	}
}

// kernelRow is the part of a conc{bs}_kernels.csv row the check reads.
type kernelRow struct {
	Kernel, ShortName, Category, Provider string
	AvgUS                                 float64
}

// kernelColumns are the columns of conc{bs}_kernels.csv the check reads.
var kernelColumns = []string{"kernel", "short_name", "category", "provider", "avg_us"}

// readKernelsCSV reads a kernel inventory in the format inventory writes;
// errors name the file and line.
func readKernelsCSV(path string) ([]kernelRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.FieldsPerRecord = 0 // every row as long as the header
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: line 1: %w", path, err)
	}
	// The columns are found by name, so that goldens written before a
	// column was added still read.
	for _, name := range kernelColumns {
		if !slices.Contains(header, name) {
			return nil, fmt.Errorf("%s: line 1: not a kernel inventory: no %s column (want at least %s)", path, name, strings.Join(kernelColumns, ","))
		}
	}
	col := func(name string) int { return slices.Index(header, name) }
	var rows []kernelRow
	seen := map[string]bool{}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		avg, err := strconv.ParseFloat(rec[col("avg_us")], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: avg_us %q is not a number", path, line, rec[col("avg_us")])
		}
		r := kernelRow{Kernel: rec[col("kernel")], ShortName: rec[col("short_name")], Category: rec[col("category")],
			Provider: rec[col("provider")], AvgUS: avg}
		if seen[r.Kernel] {
			return nil, fmt.Errorf("%s: line %d: kernel %s listed twice", path, line, abbrev(r.Kernel))
		}
		seen[r.Kernel] = true
		rows = append(rows, r)
	}
	return rows, nil
}

func timeMismatch(file string, pos int, short, kernel string, golden, measured float64, tol Tolerance) (Mismatch, bool) {
	if tol.Allows(golden, measured) {
		return Mismatch{}, false
	}
	pct := "new"
	if golden != 0 {
		pct = fmt.Sprintf("%+.1f%%", (measured-golden)/golden*100)
	}
	return Mismatch{File: file, Pos: pos, ShortName: short, Kernel: kernel, What: "avg_us",
		Golden: fmtUS(golden), Measured: fmtUS(measured),
		Note: fmt.Sprintf("%s; allowed ±%s µs: %s", pct, fmtUS(tol.Bound(golden)), tol)}, true
}

// fmtUS prints microseconds to the nanosecond at most.
func fmtUS(v float64) string { return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64) }

// compareKernels compares two inventories as sets of kernels.
func compareKernels(file string, golden, measured []kernelRow, tol Tolerance) []Mismatch {
	var out []Mismatch
	byName := map[string]kernelRow{}
	for _, r := range measured {
		byName[r.Kernel] = r
	}
	inGolden := map[string]bool{}
	for _, g := range golden {
		inGolden[g.Kernel] = true
		m, ok := byName[g.Kernel]
		if !ok {
			out = append(out, Mismatch{File: file, Pos: -1, ShortName: g.ShortName, Kernel: g.Kernel, What: "missing"})
			continue
		}
		for _, f := range []struct{ what, g, m string }{
			{"short_name", g.ShortName, m.ShortName}, {"category", g.Category, m.Category}, {"provider", g.Provider, m.Provider},
		} {
			if f.g != f.m {
				out = append(out, Mismatch{File: file, Pos: -1, ShortName: g.ShortName, Kernel: g.Kernel, What: f.what, Golden: f.g, Measured: f.m})
			}
		}
		if mm, bad := timeMismatch(file, -1, g.ShortName, g.Kernel, g.AvgUS, m.AvgUS, tol); bad {
			out = append(out, mm)
		}
	}
	for _, m := range measured {
		if !inGolden[m.Kernel] {
			out = append(out, Mismatch{File: file, Pos: -1, ShortName: m.ShortName, Kernel: m.Kernel, What: "added"})
		}
	}
	return out
}

// compareLayer compares two per-layer tables position by position, after
// aligning their kernel sequences (longest common subsequence), so that a
// kernel added to or dropped from the layer is reported once rather than
// as a shift of every later position.
func compareLayer(file string, golden, measured []inventory.LayerRow, tol Tolerance) []Mismatch {
	n, m := len(golden), len(measured)
	// lcs[i][j]: longest common subsequence of golden[i:] and measured[j:].
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if golden[i].Kernel == measured[j].Kernel {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []Mismatch
	var gOnly, mOnly []int // unmatched rows since the last match
	flush := func() {
		// Unmatched rows between two matches pair up as "another kernel at
		// this position"; what is left over is missing or added.
		k := min(len(gOnly), len(mOnly))
		for x := range k {
			g, me := golden[gOnly[x]], measured[mOnly[x]]
			out = append(out, Mismatch{File: file, Pos: g.Pos, ShortName: g.ShortName, Kernel: g.Kernel, What: "kernel", Golden: g.Kernel, Measured: me.Kernel})
		}
		for _, i := range gOnly[k:] {
			out = append(out, Mismatch{File: file, Pos: golden[i].Pos, ShortName: golden[i].ShortName, Kernel: golden[i].Kernel, What: "missing"})
		}
		for _, j := range mOnly[k:] {
			out = append(out, Mismatch{File: file, Pos: measured[j].Pos, ShortName: measured[j].ShortName, Kernel: measured[j].Kernel, What: "added"})
		}
		gOnly, mOnly = gOnly[:0], mOnly[:0]
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && golden[i].Kernel == measured[j].Kernel:
			flush()
			g, me := golden[i], measured[j]
			if g.ShortName != me.ShortName {
				out = append(out, Mismatch{File: file, Pos: g.Pos, ShortName: g.ShortName, Kernel: g.Kernel, What: "short_name", Golden: g.ShortName, Measured: me.ShortName})
			}
			if mm, bad := timeMismatch(file, g.Pos, g.ShortName, g.Kernel, g.AvgUS, me.AvgUS, tol); bad {
				out = append(out, mm)
			}
			i++
			j++
		case j >= m || (i < n && lcs[i+1][j] >= lcs[i][j+1]):
			gOnly = append(gOnly, i)
			i++
		default:
			mOnly = append(mOnly, j)
			j++
		}
	}
	flush()
	return out
}

// abbrev shortens a long kernel name (CK template instances run to a
// thousand characters) for a one-line message.
func abbrev(name string) string {
	const keep = 90
	if len(name) <= keep {
		return name
	}
	return name[:60] + "…" + name[len(name)-25:] + fmt.Sprintf(" (%d chars)", len(name))
}

// nameDiff shows where two kernel names differ: their common start and end
// are cut down so that the differing part of each stays visible.
func nameDiff(a, b string) (string, string) {
	if len(a) <= 90 && len(b) <= 90 {
		return a, b
	}
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	const ctx = 20
	cut := func(x string) string {
		lo, hi := max(p-ctx, 0), min(len(x)-s+ctx, len(x))
		out := x[lo:hi]
		if lo > 0 {
			out = "…" + out
		}
		if hi < len(x) {
			out += "…"
		}
		return out
	}
	return cut(a), cut(b)
}
