package inventory

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/internal/sidefile"
)

// layerHeader is the exact column list of the compatible per-layer CSV.
var layerHeader = []string{"pos", "short_name", "kernel", "avg_us", "std_us", "min_us", "max_us", "pct", "count"}

// LayerRow is one kernel position of a per-layer table.
type LayerRow struct {
	Pos       int
	ShortName string
	Kernel    string
	AvgUS     float64
	StdUS     float64
	MinUS     float64
	MaxUS     float64
	Pct       float64
	Count     int
	Role      string // the position's role (robust tables; the optional role column)
	Roof      *Roof  // the roofline columns, nil when the table has none or the position no point
}

// Roof is a position against the GPU's roofline, as the robust layer CSV
// carries it: achieved TB/s and TFLOP/s, FLOPs per byte, the bound
// ("memory" or "compute") and the share of the roofline reached, in %.
type Roof struct {
	TBS, TFLOPS, Intensity float64
	Bound                  string
	PctRoof                float64
}

// RoofColumns are the robust layer CSV's last columns when the model's
// config was known (docs/roofline.md); a position without a point leaves
// them empty.
var RoofColumns = []string{"achieved_tbs", "achieved_tflops", "intensity", "bound", "pct_roofline"}

func (r *Roof) fields() []string {
	if r == nil {
		return make([]string, len(RoofColumns))
	}
	return []string{fmtFloat(r.TBS, 3), fmtFloat(r.TFLOPS, 3), fmtFloat(r.Intensity, 2), r.Bound, f1(r.PctRoof)}
}

func fmtFloat(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

// hasRoof reports whether any row carries the roofline columns.
func hasRoof(rows []LayerRow) bool {
	return slices.ContainsFunc(rows, func(r LayerRow) bool { return r.Roof != nil })
}

// parseRoof reads the roofline columns of a record (cols: their indices in
// the header, all present), nil when the position has no point.
func parseRoof(rec []string, cols []int, line int) (*Roof, error) {
	if rec[cols[4]] == "" {
		return nil, nil
	}
	r := &Roof{Bound: rec[cols[3]]}
	for i, dst := range []*float64{&r.TBS, &r.TFLOPS, &r.Intensity, nil, &r.PctRoof} {
		if dst == nil {
			continue
		}
		v, err := strconv.ParseFloat(rec[cols[i]], 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: column %s: %q is not a number", line, RoofColumns[i], rec[cols[i]])
		}
		*dst = v
	}
	return r, nil
}

// ReadLayerCSV reads a per-layer table in the compatible format.
func ReadLayerCSV(path string) ([]LayerRow, error) {
	data, err := sidefile.Read(context.Background(), path, "the layer table", sidefile.Large)
	if err != nil {
		return nil, err
	}
	rows, err := ParseLayerCSV(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}

// ParseLayerCSV parses a per-layer table; errors name the line.
func ParseLayerCSV(r io.Reader) ([]LayerRow, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // checked below, with a clearer message
	header, err := cr.Read()
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("line 1: %w", err)
	}
	// Columns after the compatible ones (a robust table's module and
	// shapes from a capture trace) are read past.
	if len(header) < len(layerHeader) || !slices.Equal(header[:len(layerHeader)], layerHeader) {
		return nil, fmt.Errorf("line 1: not a per-layer CSV: want the header %s", strings.Join(layerHeader, ","))
	}
	roleCol := slices.Index(header, RoleColumn)
	var roofCols []int
	for _, c := range RoofColumns {
		if i := slices.Index(header, c); i >= 0 {
			roofCols = append(roofCols, i)
		}
	}
	if len(roofCols) != 0 && len(roofCols) != len(RoofColumns) {
		return nil, fmt.Errorf("line 1: the roofline columns are %s, all or none", strings.Join(RoofColumns, ","))
	}
	var rows []LayerRow
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(header) {
			return nil, fmt.Errorf("line %d: %d fields, want %d (%s)", line, len(rec), len(header), strings.Join(header, ","))
		}
		var row LayerRow
		var perr error
		num := func(i int) float64 {
			v, err := strconv.ParseFloat(rec[i], 64)
			if err != nil && perr == nil {
				perr = fmt.Errorf("line %d: column %s: %q is not a number", line, layerHeader[i], rec[i])
			}
			return v
		}
		row.Pos = int(num(0))
		row.ShortName, row.Kernel = rec[1], rec[2]
		row.AvgUS, row.StdUS, row.MinUS, row.MaxUS, row.Pct = num(3), num(4), num(5), num(6), num(7)
		row.Count = int(num(8))
		if roleCol >= 0 {
			row.Role = rec[roleCol]
		}
		if perr != nil {
			return nil, perr
		}
		if len(roofCols) > 0 {
			if row.Roof, err = parseRoof(rec, roofCols, line); err != nil {
				return nil, err
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no rows after the header")
	}
	return rows, nil
}

// CSV renders the table: a compatible-mode table byte for byte as the
// compat script (package doc) writes it (formatCompatLayerCSV), a robust
// one in the project's own convention (FormatLayerCSV).
func (t *LayerTable) CSV() []byte {
	if t.Mode == ModeCompat {
		return formatCompatLayerCSV(t.Rows())
	}
	if t.HasCapture() {
		return t.captureCSV()
	}
	return FormatLayerCSV(t.Rows())
}

// formatCompatLayerCSV renders rows as the compat script (package doc)
// does with Python's csv module: CRLF line ends, a field quoted only when
// it holds a comma, a quote or a line break (quotes doubled), one decimal.
func formatCompatLayerCSV(rows []LayerRow) []byte {
	var b bytes.Buffer
	line := func(fields ...string) {
		for i, f := range fields {
			if i > 0 {
				b.WriteByte(',')
			}
			if strings.ContainsAny(f, ",\"\r\n") {
				b.WriteByte('"')
				b.WriteString(strings.ReplaceAll(f, `"`, `""`))
				b.WriteByte('"')
			} else {
				b.WriteString(f)
			}
		}
		b.WriteString("\r\n")
	}
	line(layerHeader...)
	for _, r := range rows {
		line(strconv.Itoa(r.Pos), r.ShortName, r.Kernel, f1(r.AvgUS), f1(r.StdUS), f1(r.MinUS), f1(r.MaxUS), f1(r.Pct), strconv.Itoa(r.Count))
	}
	return b.Bytes()
}

// f1 prints one decimal, correctly rounded as Python's round(x, 1) prints.
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// RoleColumn is the robust per-layer CSV's last column when the
// positions have roles.
const RoleColumn = "role"

// FormatLayerCSV renders rows in the robust tables' convention: the
// compatible columns and one decimal, written by Go's encoding/csv (LF line
// ends; kernel names as the trace writes them), then the role column when
// any row has a role and the roofline columns when any row has them.
func FormatLayerCSV(rows []LayerRow) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	withRole := slices.ContainsFunc(rows, func(r LayerRow) bool { return r.Role != "" })
	withRoof := hasRoof(rows)
	head := slices.Clone(layerHeader)
	if withRole {
		head = append(head, RoleColumn)
	}
	if withRoof {
		head = append(head, RoofColumns...)
	}
	_ = w.Write(head)
	for _, r := range rows {
		rec := []string{strconv.Itoa(r.Pos), r.ShortName, r.Kernel, f1(r.AvgUS), f1(r.StdUS), f1(r.MinUS), f1(r.MaxUS), f1(r.Pct), strconv.Itoa(r.Count)}
		if withRole {
			rec = append(rec, r.Role)
		}
		if withRoof {
			rec = append(rec, r.Roof.fields()...)
		}
		_ = w.Write(rec)
	}
	w.Flush()
	return buf.Bytes()
}
