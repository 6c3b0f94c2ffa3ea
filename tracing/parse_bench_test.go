package tracing

import (
	"bytes"
	"testing"

	"github.com/profile-model/profile-model/internal/jsonscan"
)

// One event of each kind that makes up most of an ATOM trace, as its
// profiler writes them (indented): a kernel, its flow, a Python frame.
var microKernel = []byte(`{
    "ph": "X", "cat": "kernel", "name": "_ZN5aiter37dynamic_per_group_scaled_quant_kernelIDF16bDB8_Li32EEEvPT0_PfPKT_PKfiliibPKii", "pid": 2, "tid": 0,
    "ts": 4912346589279.000, "dur": 40.306,
    "args": {
      "External id": 1003, "device": 2, "stream": 0, "correlation": 50002, "kind": "Dispatch Kernel", "grid": [320, 1, 1], "block": [256, 1, 1]
    }
  },
  {`)
var microFlow = []byte(`{
    "ph": "f", "id": 50002, "pid": 2, "tid": 0, "ts": 4912346589279.000,
    "cat": "ac2g", "name": "ac2g", "bp": "e"
  },
  {`)
var microPy = []byte(`{
    "ph": "X", "cat": "python_function", "name": "atom/model_engine/model_runner.py(987): prepare_inputs", "pid": 2451, "tid": 2451,
    "ts": 4912346589181.000, "dur": 15.296,
    "args": {
      "Python parent id": 3, "Python id": 4, "Python thread": 0
    }
  },
  {`)

func init() {
	// As in a real buffer, more events follow.
	tail := bytes.Repeat(microPy[1:], 4)
	microKernel = append(microKernel, tail...)
	microFlow = append(microFlow, tail...)
	microPy = append(microPy, tail...)
}

// BenchmarkParseEvent times the parsing of one event, and the fast paths
// and the skip on their own.
func BenchmarkParseEvent(b *testing.B) {
	for _, c := range []struct {
		name string
		data []byte
	}{{"kernel", microKernel}, {"flow", microFlow}, {"python", microPy}} {
		b.Run("parseEvent/"+c.name, func(b *testing.B) {
			s := newScanner(bytes.NewReader(nil))
			for b.Loop() {
				s.parseEvent(c.data)
			}
		})
	}
	b.Run("completeFast", func(b *testing.B) {
		s := newScanner(bytes.NewReader(nil))
		_, j := kinetoCat(microKernel)
		for b.Loop() {
			s.completeFast(microKernel, j+len("kernel")+1, clKernel)
		}
	})
	b.Run("flowFast", func(b *testing.B) {
		j := kinetoPhase(microFlow)
		for b.Loop() {
			flowFast(microFlow, j+2)
		}
	})
	b.Run("flatEvent", func(b *testing.B) {
		j := kinetoPhase(microFlow)
		for b.Loop() {
			flatEvent(microFlow, j+2, j+512)
		}
	})
	b.Run("objectRest/python", func(b *testing.B) {
		_, j := kinetoCat(microPy)
		for b.Loop() {
			jsonscan.ObjectRest(microPy, j+16)
		}
	})
}
