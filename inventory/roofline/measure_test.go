package roofline

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sampleMeasurement is hand-written in the shape the script prints (it
// was never run on a GPU here): the figures are made up, not measured.
const sampleMeasurement = `{"device": "NVIDIA H200", "bf16_tflops": 612.5, "fp8_tflops": 1180.2, "fp8_note": "", "hbm_tbs": 4.312, "memory_gb": 150.0, "torch": "2.5.1", "gemm_size": 8192, "copy_mib": 2048}`

func TestMeasurementPeak(t *testing.T) {
	m, err := ParseMeasurement(strings.NewReader(sampleMeasurement), "sample")
	if err != nil {
		t.Fatal(err)
	}
	spec := DefaultPeaks()
	h200, _ := spec.Find("NVIDIA H200")
	p := m.Peak(spec, "2026-12-02")
	if p.GPU != "H200" || p.Match != "NVIDIA H200" || p.Kind != "measured" || p.BF16 != 612.5 || p.FP8 != 1180.2 || p.HBM != 4.312 || p.MemGB != 150 {
		t.Errorf("peak %+v", p)
	}
	if p.Vector != h200.Vector || p.FP4 != h200.FP4 || !strings.Contains(p.Source, "vector and fp4 from the spec line for H200") ||
		!strings.Contains(p.Source, "measured 2026-12-02 by "+MeasureScript+" (PyTorch 2.5.1; 8192×8192×8192 GEMMs; 2048 MiB copies)") {
		t.Errorf("vector %v fp4 %v, source %q", p.Vector, p.FP4, p.Source)
	}
	// The file written is one --peaks reads back as it was.
	var buf bytes.Buffer
	if err := WritePeaks(&buf, Peaks{p}); err != nil {
		t.Fatal(err)
	}
	back, err := ParsePeaks(&buf, "measured.csv")
	if err != nil || len(back) != 1 || back[0] != p {
		t.Fatalf("read back %+v, %v; want %+v", back, err, p)
	}
	if got, ok := back.Find("NVIDIA H200"); !ok || got.BF16 != 612.5 {
		t.Errorf("find %+v %v", got, ok)
	}
	// A GPU the table does not know keeps its own name and no vector peak.
	m.Device = "Some Future GPU"
	if p := m.Peak(spec, "d"); p.GPU != "Some Future GPU" || p.Vector != 0 || strings.Contains(p.Source, "spec line") {
		t.Errorf("unknown GPU %+v", p)
	}
	for _, bad := range []string{`{"device": ""}`, `{"device": "X", "bf16_tflops": 0, "hbm_tbs": 1}`, `{"device": "X", "bf16_tflops": 1, "hbm_tbs": 1, "extra": 1}`, `not json`} {
		if _, err := ParseMeasurement(strings.NewReader(bad), "bad"); err == nil || !strings.HasPrefix(err.Error(), "bad: ") {
			t.Errorf("%s: error %v", bad, err)
		}
	}
}

// measure runs the measuring script with args: its stdout, or the reason
// it gives for measuring nothing (skip), or an error.
func measure(t testing.TB, args ...string) (out []byte, skip string, err error) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		return nil, "no python3 on PATH: the peaks are measured by " + MeasureScript + " with PyTorch", nil
	}
	cmd := exec.Command(py, append([]string{filepath.Join("..", "..", MeasureScript)}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == MeasureSkip {
		return nil, strings.TrimSpace(stderr.String()), nil
	}
	if err != nil {
		return nil, "", errors.New(err.Error() + ": " + stderr.String())
	}
	return out, "", nil
}

// TestMeasureScript checks the script's syntax and that it either names
// the GPU it would measure or says why there is nothing to measure.
func TestMeasureScript(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH: the script cannot be checked")
	}
	cmd := exec.Command(py, "-m", "py_compile", filepath.Join("..", "..", MeasureScript))
	cmd.Env = append(os.Environ(), "PYTHONPYCACHEPREFIX="+t.TempDir()) // no __pycache__ in the repository
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("py_compile: %v\n%s", err, out)
	}
	out, skip, err := measure(t, "--check")
	switch {
	case err != nil:
		t.Fatal(err)
	case skip != "":
		if !strings.HasPrefix(skip, "skip: ") || !(strings.Contains(skip, "PyTorch") || strings.Contains(skip, "GPU")) {
			t.Errorf("skip reason %q does not say what is missing", skip)
		}
	default:
		if !strings.Contains(string(out), `"device": "`) {
			t.Errorf("--check printed %q", out)
		}
	}
}
