package roofline

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MeasureScript is the script, relative to the repository's root, that
// measures a GPU's achievable peaks with PyTorch; its output is a
// Measurement. The -tags gpu benchmark BenchmarkGPUPeaks runs it.
const MeasureScript = "scripts/measure_peaks.py"

// MeasureSkip is the script's exit status when there is nothing to
// measure (no PyTorch, no GPU); its stderr says which.
const MeasureSkip = 3

// Measurement is what MeasureScript prints: the best achieved dense GEMM
// throughput (TFLOP/s; FP8 0 when it could not run, FP8Note says why),
// the device-to-device copy bandwidth (TB/s, bytes read plus written) and
// the memory capacity.
type Measurement struct {
	Device   string  `json:"device"`
	BF16     float64 `json:"bf16_tflops"`
	FP8      float64 `json:"fp8_tflops"`
	FP8Note  string  `json:"fp8_note"`
	HBM      float64 `json:"hbm_tbs"`
	MemGB    float64 `json:"memory_gb"`
	Torch    string  `json:"torch"`
	GEMMSize int     `json:"gemm_size"`
	CopyMiB  int     `json:"copy_mib"`
}

// ParseMeasurement reads the script's JSON output; name says where it
// came from in errors.
func ParseMeasurement(r io.Reader, name string) (Measurement, error) {
	var m Measurement
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%s: not the output of %s: %w", name, MeasureScript, err)
	}
	switch {
	case m.Device == "":
		return m, fmt.Errorf("%s: no device name", name)
	case m.BF16 <= 0 || m.HBM <= 0:
		return m, fmt.Errorf("%s: bf16_tflops %v and hbm_tbs %v must be above 0", name, m.BF16, m.HBM)
	case m.FP8 < 0 || m.MemGB < 0:
		return m, fmt.Errorf("%s: negative fp8_tflops or memory_gb", name)
	}
	return m, nil
}

// Peak is the measurement as a peaks line of kind "measured", matched on
// the device's own name. What the script does not measure (vector and FP4
// throughput) comes from the line of spec that matches the device, and
// the source says so; without one it stays 0 (vector work then counts as
// memory-bound, FP4 falls back to FP8).
func (m Measurement) Peak(spec Peaks, date string) Peak {
	p := Peak{GPU: m.Device, Match: m.Device, BF16: m.BF16, FP8: m.FP8, HBM: m.HBM, MemGB: m.MemGB, Kind: "measured"}
	src := fmt.Sprintf("measured %s by %s (PyTorch %s; %d×%d×%d GEMMs; %d MiB copies)", date, MeasureScript, m.Torch, m.GEMMSize, m.GEMMSize, m.GEMMSize, m.CopyMiB)
	if m.FP8Note != "" {
		src += "; fp8: " + m.FP8Note
	}
	if s, ok := spec.Find(m.Device); ok {
		p.GPU = s.GPU
		p.Vector, p.FP4 = s.Vector, s.FP4
		if p.MemGB == 0 {
			p.MemGB = s.MemGB
		}
		src += "; vector and fp4 from the " + s.Kind + " line for " + s.GPU
	}
	p.Source = src
	return p
}

// WritePeaks writes a peaks file that ParsePeaks reads back.
func WritePeaks(w io.Writer, ps Peaks) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(peakHeader)
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, p := range ps {
		if strings.HasPrefix(p.GPU, "#") {
			return fmt.Errorf("GPU name %q starts with #, which a peaks file reads as a comment", p.GPU)
		}
		_ = cw.Write([]string{p.GPU, p.Match, num(p.BF16), num(p.FP8), num(p.FP4), num(p.Vector), num(p.HBM), num(p.MemGB), p.Kind, p.Source})
	}
	cw.Flush()
	return cw.Error()
}
