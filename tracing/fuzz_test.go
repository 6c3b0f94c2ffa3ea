package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/tracing"
)

// fuzzSeeds are small hand-written traces covering each format feature.
var fuzzSeeds = []string{
	`{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.5, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": 3, "grid": [1, 2, 3], "block": [4, 5, 6]}}]}`,
	`{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "AMD Instinct MI300X"}], "traceEvents": [
	 {"ph": "X", "cat": "user_annotation", "name": "decode[bs=4 tok=4]", "pid": 1, "tid": 1, "ts": 100.000, "dur": 50, "args": {"External id": 9}},
	 {"ph": "X", "cat": "cuda_runtime", "name": "hipGraphLaunch", "pid": 1, "tid": 1, "ts": 110, "dur": 5, "args": {"correlation": 77}},
	 {"ph": "X", "cat": "kernel", "name": "a\"b\\c\u00e9", "pid": 2, "tid": 0, "ts": 120.5, "dur": 1.25, "args": {"correlation": 77, "kind": "Dispatch Task"}},
	 {"ph": "X", "cat": "gpu_user_annotation", "name": "decode[bs=4 tok=4]", "pid": 2, "tid": 0, "ts": 119, "dur": 30, "args": {"External id": 9}},
	 {"ph": "f", "id": 77, "pid": 2, "tid": 0, "ts": 120.5, "cat": "ac2g", "name": "ac2g", "bp": "e"},
	 {"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "GPU 2"}}
	], "baseTimeNanoseconds": 1700000000000000000, "traceName": "x"}`,
	`{"traceEvents": [{"ph": "X", "cat": "Kernel", "name": "legacy", "pid": 0, "tid": "stream 7", "ts": 1623142623531625, "dur": 605, "args": {"stream": 7, "correlation": 1, "external id": 2}},
	 {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": "5", "ts": 1623142623531600, "dur": 3, "args": {"correlation": 1}},
	 {"ph": "X", "cat": "Operator", "name": "ProfilerStep#5", "pid": 5, "tid": 5, "ts": 1623142623531000, "dur": 9000}]}`,
	`{"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "execute_32_context_0(sq0)_generation_32(sq32)", "pid": 1, "tid": 1, "ts": 1712195495505582.988, "dur": 4.928},
	 {"ph": "X", "cat": "user_annotation", "name": "step[EXTEND bs=15 toks=15360]", "pid": 1, "tid": 1, "ts": 1712195495505583.000, "dur": 1},
	 {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 1, "tid": 1, "ts": 1712195495505583.5, "dur": 1, "args": {"correlation": 5}},
	 {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 1712195495505590, "dur": 1e1, "args": {"correlation": 5}},
	 {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 1712195495505599}]}`,
	`{"traceEvents":[{"ph": "0"cat": "`, // the ph value's quote begins a cat key
	`[{"ph": "X", "name": "k"}]`,
	`{"traceEvents": []}`,
	`{"other": {"traceEvents": 1}}`,
	"\xff\xfe{\x00\"\x00",
	"\xef\xbb\xbf{\"traceEvents\": []}",
	"",
}

// FuzzRead: Read never panics, the read-ahead and serial paths agree, and a
// successful result is self-consistent (sorted kernels, valid indices,
// categories adding up to the event count, which matches encoding/json
// whenever the input is valid JSON).
func FuzzRead(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	if dir := corpus.Find(); dir != "" {
		if b, err := os.ReadFile(dir + "/traces/triton-example-cuda.json.gz"); err == nil {
			if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
				if plain, err := io.ReadAll(zr); err == nil {
					f.Add(plain)
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		tr, err := tracing.Read(ctx, bytes.NewReader(data), "fuzz", tracing.Options{NoReadAhead: true})
		tr2, err2 := tracing.Read(ctx, bytes.NewReader(data), "fuzz", tracing.Options{})
		if (err == nil) != (err2 == nil) {
			t.Fatalf("serial err %v, read-ahead err %v", err, err2)
		}
		if err != nil {
			require.Equal(t, err.Error(), err2.Error())
			return
		}
		s, s2 := tr.Summarize(), tr2.Summarize()
		require.Equal(t, s, s2)
		// Keeping the CPU ops changes nothing else; a kernel's op is one
		// of the names kept, and none without them.
		tr3, err3 := tracing.Read(ctx, bytes.NewReader(data), "fuzz", tracing.Options{Ops: true})
		require.NoError(t, err3)
		require.Equal(t, s, tr3.Summarize())
		for i := range tr3.Kernels {
			id := tr3.LaunchOpID(i)
			require.True(t, id >= -1 && int(id) < len(tr3.OpNames()), "kernel %d: op id %d of %d names", i, id, len(tr3.OpNames()))
			require.Equal(t, int32(-1), tr.LaunchOpID(i), "no ops kept without Options.Ops")
		}
		var sum int64
		for _, n := range tr.ByCat {
			sum += n
		}
		require.Equal(t, tr.Events, sum)
		// Names: each once, every kernel's in range, the distinct count
		// as a map of the names counts it.
		distinct := map[string]bool{}
		for _, name := range tr.Names {
			require.False(t, distinct[name], "name %q twice in Names", name)
			distinct[name] = true
		}
		kernelNames := map[string]bool{}
		for i := range tr.Kernels {
			k := &tr.Kernels[i]
			require.Less(t, int(k.NameID), len(tr.Names))
			if k.Kind == tracing.KindKernel {
				kernelNames[tr.NameOf(k)] = true
			}
			if i > 0 {
				require.LessOrEqual(t, tr.Kernels[i-1].Start, k.Start)
			}
			require.Less(t, int(k.Graph), len(tr.Graphs))
			require.Less(t, int(k.Step), len(tr.Steps))
		}
		require.Equal(t, len(kernelNames), s.DistinctKernels)
		for _, st := range tr.Steps {
			for _, k := range st.Kernels {
				require.Less(t, int(k), len(tr.Kernels))
			}
		}
		if json.Valid(data) {
			var doc struct {
				TraceEvents []json.RawMessage `json:"traceEvents"`
			}
			if json.Unmarshal(data, &doc) == nil {
				require.Equal(t, int64(len(doc.TraceEvents)), tr.Events, "entries of traceEvents")
			}
		}
	})
}
