package trim_test

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"

	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
	"github.com/profile-model/profile-model/tracing/trim"
)

// benchTrace is a generated ATOM trace of 24 decode steps (and a prefill),
// about 45 MB of JSON with the event mix of a real one (Python frames most
// of it), uncompressed so that the benchmarks measure reading, not
// inflating.
var benchTrace = sync.OnceValue(func() []byte {
	var buf bytes.Buffer
	if _, err := synth.Generate(context.Background(), &buf, synth.GenerateOptions{DecodeSteps: 24, PrefillSteps: 1, BS: 8, Seed: 1}); err != nil {
		panic(err)
	}
	return buf.Bytes()
})

// BenchmarkTrim and BenchmarkLoad read the same bytes, for comparison: the
// reading of a trim and of an analysis. (In a trace this short the lag
// allowance around two steps covers a quarter of the GPU events, which trim
// then holds and reads twice; in the 1 GB one, about 1%.)
func BenchmarkTrim(b *testing.B) {
	data := benchTrace()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := trim.Trim(context.Background(), bytes.NewReader(data), io.Discard, trim.Options{Decode: 2}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoad(b *testing.B) {
	data := benchTrace()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := tracing.Read(context.Background(), bytes.NewReader(data), "bench", tracing.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
