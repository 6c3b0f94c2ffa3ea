package tracing_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/profile-model/profile-model/tracing"
)

// BenchmarkScanKinds scans 100001 copies of one event of each common kind
// (as the synth generator writes them): the cost per skipped Python frame,
// per kept kernel and per skipped flow.
func BenchmarkScanKinds(b *testing.B) {
	kinds := map[string]string{
		"python": `{
    "ph": "X", "cat": "python_function", "name": "atom/model_engine/model_runner.py(987): prepare_inputs", "pid": 2451, "tid": 2451,
    "ts": 4912346676927.423, "dur": 4.220,
    "args": {
      "Python parent id": 6019, "Python id": 7686, "Python thread": 0
    }
  }`,
		"kernel": `{
    "ph": "X", "cat": "kernel", "name": "triton_poi_fused_embedding_0", "pid": 2, "tid": 0,
    "ts": 4912346589272.000, "dur": 5.275,
    "args": {
      "External id": 1002, "device": 2, "stream": 0, "correlation": 50001, "kind": "Dispatch Kernel", "grid": [64, 1, 1], "block": [256, 1, 1]
    }
  }`,
		"flow": `{
    "ph": "f", "id": 50001, "pid": 2, "tid": 0, "ts": 4912346589272.000,
    "cat": "ac2g", "name": "ac2g", "bp": "e"
  }`,
	}
	for name, ev := range kinds {
		data := []byte(`{"traceEvents": [` + strings.Repeat(ev+",\n  ", 100000) + ev + `]}`)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				sc := tracing.NewScanner(bytes.NewReader(data))
				for sc.Scan() {
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100001, "ns/event")
		})
	}
}
