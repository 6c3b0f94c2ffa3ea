package roofline

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/internal/sidefile"
)

// Peak is what one GPU can do at most: dense matrix throughput by input
// type, vector throughput and memory bandwidth.
type Peak struct {
	GPU    string  `json:"gpu"`
	Match  string  `json:"-"`
	BF16   float64 `json:"bf16_tflops"`
	FP8    float64 `json:"fp8_tflops"`
	FP4    float64 `json:"fp4_tflops,omitempty"`
	Vector float64 `json:"vector_tflops"`
	HBM    float64 `json:"hbm_tbs"`
	MemGB  float64 `json:"memory_gb"` // HBM capacity, 10^9 bytes
	Kind   string  `json:"kind"`      // "spec" (vendor) or "measured"
	Source string  `json:"source"`
	// USDPerHour is the price of one GPU-hour in US dollars, from a peaks
	// file's optional last column usd_per_gpu_hour; 0: none (the report's
	// cost per million tokens then needs --gpu-price).
	USDPerHour float64 `json:"usd_per_gpu_hour,omitempty"`
	// Link is the GPU's peer bandwidth in one direction, GB/s (10^9 B/s),
	// what a tensor-parallel all-reduce can use; 0 when the file does not
	// say (the optional link_gbs column).
	Link float64 `json:"link_gbs,omitempty"`
}

// Matrix is the matrix peak for a weight dtype ("fp8", "fp4", else BF16),
// falling back to the next wider type the GPU has.
func (p Peak) Matrix(dtype string) float64 {
	switch {
	case dtype == "fp4" && p.FP4 > 0:
		return p.FP4
	case (dtype == "fp4" || dtype == "fp8") && p.FP8 > 0:
		return p.FP8
	}
	return p.BF16
}

//go:embed peaks.csv
var builtinPeaks string

var peakHeader = []string{"gpu", "match", "bf16_tflops", "fp8_tflops", "fp4_tflops", "vector_tflops", "hbm_tbs", "memory_gb", "kind", "source"}

// priceColumn is a peaks file's optional last column.
const priceColumn = "usd_per_gpu_hour"

// Peaks is a table of GPU peaks.
type Peaks []Peak

// DefaultPeaks is the built-in table (peaks.csv).
func DefaultPeaks() Peaks {
	p, err := ParsePeaks(strings.NewReader(builtinPeaks), "peaks.csv")
	if err != nil {
		panic(err) // the embedded table is tested
	}
	return p
}

// LoadPeaks reads a peaks file in the built-in table's format (a GPU
// benchmark writes one with measured figures).
func LoadPeaks(path string) (Peaks, error) {
	data, err := sidefile.Read(context.Background(), path, "the peaks table", sidefile.Small)
	if err != nil {
		return nil, err
	}
	return ParsePeaks(bytes.NewReader(data), path)
}

// ParsePeaks parses a peaks table; errors name the line and the column.
func ParsePeaks(r io.Reader, name string) (Peaks, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// Optional last columns, in either order: link_gbs (files written
	// before it, and the GPU benchmark's, which does not measure links,
	// lack it) and usd_per_gpu_hour.
	if !slices.Equal(head[:min(len(head), len(peakHeader))], peakHeader) || !optionalColumns(head[len(peakHeader):]) {
		return nil, fmt.Errorf("%s: header %q, want %s (optionally ,%s and ,link_gbs, in either order)", name, strings.Join(head, ","), strings.Join(peakHeader, ","), priceColumn)
	}
	var out Peaks
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			// A csv.ParseError names its line; FieldPos must not be asked
			// after a failed Read (it panics on an unterminated quote).
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(head) {
			return nil, fmt.Errorf("%s:%d: %d fields, want %d (%s)", name, line, len(rec), len(head), strings.Join(head, ","))
		}
		p := Peak{GPU: rec[0], Match: rec[1], Kind: rec[8], Source: rec[9]}
		for i, dst := range []*float64{&p.BF16, &p.FP8, &p.FP4, &p.Vector, &p.HBM, &p.MemGB} {
			v, err := strconv.ParseFloat(rec[2+i], 64)
			if err != nil || !(v >= 0) || math.IsInf(v, 1) {
				return nil, fmt.Errorf("%s:%d: column %s: %q is not a finite non-negative number", name, line, peakHeader[2+i], rec[2+i])
			}
			*dst = v
		}
		for i, col := range head[len(peakHeader):] {
			cell := rec[len(peakHeader)+i]
			if cell == "" {
				continue
			}
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil || v < 0 || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s:%d: column %s: %q is not a non-negative number", name, line, col, cell)
			}
			if col == priceColumn {
				p.USDPerHour = v
			} else {
				p.Link = v
			}
		}
		if p.BF16 <= 0 || p.HBM <= 0 {
			return nil, fmt.Errorf("%s:%d: %s needs bf16_tflops and hbm_tbs above 0", name, line, p.GPU)
		}
		if p.Kind != "spec" && p.Kind != "measured" {
			return nil, fmt.Errorf("%s:%d: kind %q, want spec or measured", name, line, p.Kind)
		}
		out = append(out, p)
	}
	return out, nil
}

// Find is the peak of the GPU a trace names (its device name), false when
// no line matches.
func (ps Peaks) Find(device string) (Peak, bool) {
	d := strings.ToLower(device)
	for _, p := range ps {
		if p.Match != "" && strings.Contains(d, strings.ToLower(p.Match)) {
			return p, true
		}
	}
	return Peak{}, false
}

// optionalColumns reports whether cols are peaks files' optional columns,
// each at most once.
func optionalColumns(cols []string) bool {
	seen := map[string]bool{}
	for _, c := range cols {
		if c != "link_gbs" && c != priceColumn || seen[c] {
			return false
		}
		seen[c] = true
	}
	return true
}
