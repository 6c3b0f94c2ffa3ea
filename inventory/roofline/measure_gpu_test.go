//go:build gpu

package roofline

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkGPUPeaks measures the achievable BF16 and FP8 GEMM throughput
// and copy bandwidth of the GPU it runs on (MeasureScript, with PyTorch)
// and writes them as a peaks file for --peaks: PROFILE_MODEL_PEAKS_OUT,
// else measured-peaks.csv in the temporary directory. It skips, saying
// why, without python3, PyTorch or a GPU; PROFILE_MODEL_REQUIRE_GPU=1
// makes that a failure.
//
//	go test -tags gpu -run '^$' -bench GPUPeaks -benchtime 1x ./inventory/roofline
func BenchmarkGPUPeaks(b *testing.B) {
	var m Measurement
	for range b.N {
		out, skip, err := measure(b)
		if err != nil {
			b.Fatal(err)
		}
		if skip != "" {
			if os.Getenv("PROFILE_MODEL_REQUIRE_GPU") == "1" {
				b.Fatalf("%s (failing: PROFILE_MODEL_REQUIRE_GPU=1)", skip)
			}
			b.Skip(skip)
		}
		if m, err = ParseMeasurement(bytes.NewReader(out), MeasureScript); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(m.BF16, "bf16-TFLOP/s")
	b.ReportMetric(m.FP8, "fp8-TFLOP/s")
	b.ReportMetric(m.HBM, "copy-TB/s")
	path := os.Getenv("PROFILE_MODEL_PEAKS_OUT")
	if path == "" {
		path = filepath.Join(os.TempDir(), "measured-peaks.csv")
	}
	var buf bytes.Buffer
	if err := WritePeaks(&buf, Peaks{m.Peak(DefaultPeaks(), time.Now().UTC().Format("2006-01-02"))}); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: bf16 %.1f TFLOP/s, fp8 %.1f TFLOP/s %s, copy %.3f TB/s; wrote %s (report --peaks %s)", m.Device, m.BF16, m.FP8, m.FP8Note, m.HBM, path, path)
}
