package inventory

import (
	"bytes"
	"encoding/json"
	"iter"
	"math"

	"github.com/profile-model/profile-model/internal/units"
)

// KernelList is the rows of an inventory, largest total time first. Built
// from a trace it holds compact aggregates that point into the trace's
// name table and a table of the distinct classes, and makes each
// KernelRow (short name included) when it is read: a million distinct
// names then cost tens of bytes each, not a 200-byte row and its strings.
// Read from JSON (a run's level file), it holds the rows themselves.
type KernelList struct {
	rows    []KernelRow // read from JSON, or given to KernelRows
	aggs    []kernelAgg
	names   []string // the trace's names, by index
	classes []rowClass
	gpuNS   int64 // share of all GPU activity time: the Pct column
}

// KernelRows is a list of the given rows.
func KernelRows(rows []KernelRow) KernelList { return KernelList{rows: rows} }

// rowClass is a class as the rows share it: a short name made from the
// kernel's own name is made again when the row is read.
type rowClass struct {
	Class
	short shortFrom
}

type shortFrom uint8

const (
	shortAsIs   shortFrom = iota // Class.ShortName
	shortOfName                  // ShortName(kernel name)
	shortIsName                  // the kernel name itself (copies)
)

// compactClass is c without the part of its short name that is the
// kernel's own: what distinct names share.
func compactClass(name string, c Class) rowClass {
	switch c.ShortName {
	case name:
		c.ShortName = ""
		return rowClass{c, shortIsName}
	case ShortName(name):
		c.ShortName = ""
		return rowClass{c, shortOfName}
	}
	return rowClass{c, shortAsIs}
}

// Len is the number of rows.
func (l KernelList) Len() int {
	if l.rows != nil {
		return len(l.rows)
	}
	return len(l.aggs)
}

// Kind is row i's kind (kernel, memcpy or memset), without making the row.
func (l KernelList) Kind(i int) string {
	if l.rows != nil {
		return l.rows[i].Kind
	}
	return l.aggs[i].kind.String()
}

// At makes row i.
func (l KernelList) At(i int) KernelRow {
	if l.rows != nil {
		return l.rows[i]
	}
	a := &l.aggs[i]
	name, c := l.names[a.name], l.classes[a.class]
	short := c.ShortName
	switch c.short {
	case shortOfName:
		short = ShortName(name)
	case shortIsName:
		short = name
	}
	row := KernelRow{Kernel: name, ShortName: short, Category: c.Category, Source: c.Source, Provider: c.Provider,
		Kind: a.kind.String(), Count: a.n, Total: units.Duration(a.total), AvgUS: a.mean,
		MinUS: float64(a.min) / 1000, MaxUS: float64(a.max) / 1000}
	if a.n > 1 {
		row.StdUS = math.Sqrt(a.m2 / float64(a.n-1))
	}
	if l.gpuNS > 0 {
		row.Pct = float64(a.total) / float64(l.gpuNS) * 100
	}
	return row
}

// All yields the rows in order, each made as it is reached.
func (l KernelList) All() iter.Seq2[int, KernelRow] {
	return func(yield func(int, KernelRow) bool) {
		for i := range l.Len() {
			if !yield(i, l.At(i)) {
				return
			}
		}
	}
}

// MarshalJSON writes the rows as a JSON array (null when the trace had no
// kernels), as a []KernelRow is written.
func (l KernelList) MarshalJSON() ([]byte, error) {
	if l.rows == nil && l.aggs == nil {
		return []byte("null"), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the caller's encoder escapes, if it does
	buf.WriteByte('[')
	for i, r := range l.All() {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := enc.Encode(&r); err != nil {
			return nil, err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads the rows of a JSON array.
func (l *KernelList) UnmarshalJSON(data []byte) error {
	*l = KernelList{}
	return json.Unmarshal(data, &l.rows)
}

// Equal reports whether l and m hold the same rows, however each keeps
// them (a list built from a trace and the same list read back from JSON).
func (l KernelList) Equal(m KernelList) bool {
	if l.Len() != m.Len() || (l.rows == nil && l.aggs == nil) != (m.rows == nil && m.aggs == nil) {
		return false
	}
	for i := range l.Len() {
		if l.At(i) != m.At(i) {
			return false
		}
	}
	return true
}
