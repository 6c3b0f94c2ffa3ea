package tracing

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/diag"
)

// kernelSeeds are kernel, flow and other events in and around the layout
// Kineto writes: each one a fast path reads, or one it must leave to the
// general path.
var kernelSeeds = []string{
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 0, "ts": 4912349171061.436, "dur": 5.316, "args": {"device": 2, "stream": 0, "correlation": 51707, "kind": "Dispatch Task"}}`,
	"{\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"_ZN5aiter37dynamic\", \"pid\": 2, \"tid\": 0,\n    \"ts\": 4912346589279.000, \"dur\": 40.306,\n    \"args\": {\n      \"External id\": 1003, \"device\": 2, \"stream\": 0, \"correlation\": 50002, \"kind\": \"Dispatch Kernel\", \"grid\": [320, 1, 1], \"block\": [256, 1, 1]\n    }\n  }",
	`{"ph": "X", "cat": "kernel", "name": "a\"b\\c\u00e9", "pid": 2, "tid": 0, "ts": 1, "dur": 2, "args": {"kind": "Dispatch\u0020Task"}}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": "2", "tid": "stream 7", "ts": 1, "dur": 2, "args": {}}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 7, "ts": 1e3, "dur": 2.00049, "args": {"device": -1, "stream": 1.5, "correlation": 99999999999999999999}}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 7, "ts": 1, "dur": 2, "args": {"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 5, "registers per thread": 32, "shared memory": 0, "grid": [1, 2, 3], "block": [4, 5, 6], "est. achieved occupancy %": 0}}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 7, "ts": 1, "dur": 2, "args": {"grid": [1, 2], "block": [1, 2, 3, 4], "device": "0", "kind": 3}}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 7, "ts": 1, "dur": 2, "args": {"device": 0, "device": 1}, "extra": [1]}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 7, "ts": 1, "args": {"device": 0}}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 7, "ts": 12x, "dur": 1, "args": {"device": 0}}`,
	`{"ph":"X","cat":"kernel","name":"k","pid":2,"tid":7,"ts":1,"dur":2,"args":{"device":0}}`,
	`{"ph": "B", "cat": "kernel", "name": "k", "pid": 2, "tid": 7, "ts": 1, "dur": 2, "args": {"device": 0}}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 7, "ts": 1, "dur": 2, "args": {"device": 0 "stream": 1}}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 7, "ts": 1, "dur": 2, "args": {"device": 0, "stream": [1}}`,
	"{\n    \"ph\": \"f\", \"id\": 51707, \"pid\": 2, \"tid\": 0, \"ts\": 4912349171061.436,\n    \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }",
	`{"ph": "s", "id": 5, "pid": 1, "tid": 1, "ts": 2, "cat": "ac2g", "name": "ac2g"}`,
	`{"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 1}`,
	`{"ph": "M", "name": "process_name", "pid": 2, "cat": "__metadata", "args": {"name": "GPU 2"}}`,
	`{"ph": "B", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1}`,
	`{"ph": "f", "id": 1, "cat": "a", "cat": "b"}`,
	`{"ph": "f", "id": 1, "cat": 5, "cat": "b"}`,
	`{"ph": "f", "id": a\b, "cat": "x"}`,
	`{"ph": "f", "name": "a\"b", "cat": "x"}`,
	`{"ph": "f", "name": "a", "cat": "x\u0041"}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 7, "ts": 1, "dur": 2, "args": {"device": 0, "stream": 1, "device": 2}}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 7, "ts": 1, "dur": 2, "args": {"device": 0, "queued": 1, "device": 2}}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 7, "ts": 1, "dur": 2, "args": {"queued": 1, "correlation": "5"}}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 7, "ts": "1", "dur": -2, "args": {"device": 0}, "ts": 3}`,
	// CPU ops, launches and annotations as Kineto writes them, and ones
	// the fast path must leave to the general path.
	"{\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 2451, \"tid\": 2451,\n    \"ts\": 4912347605620.943, \"dur\": 7.000,\n    \"args\": {\n      \"External id\": 1008, \"Record function id\": 0\n    }\n  }",
	`{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 5, "dur": 9, "args": {"External id": 3}}`,
	`{"ph": "X", "cat": "cpu_op", "name": "model_runner.py(12): run_model", "pid": 1, "tid": 1, "ts": 5, "dur": -9, "args": {"External id": 3}}`,
	`{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 9, "args": {"External id": 3, "External id": 4}}`,
	`{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": x5, "dur": 9, "args": {"External id": 3}}`,
	`{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 9, "args": {"External id": "3", "Input Dims": [[1, 2], []]}}`,
	`{"ph": "X", "cat": "Operator", "name": "a\u0041", "pid": 1, "tid": 1, "ts": 5, "dur": 9, "args": {"External id": 3, "Sequence number": 4}}`,
	"{\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"hipModuleLaunchKernel\", \"pid\": 2451, \"tid\": 2451,\n    \"ts\": 4912347770643.836, \"dur\": 4.000,\n    \"args\": {\n      \"External id\": 3252, \"kernel\": \"triton_poi_fused_embedding_0\", \"cid\": 169, \"correlation\": 52249, \"grid\": [64, 1, 1], \"block\": [256, 1, 1], \"shared memory\": 0\n    }\n  }",
	`{"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1, "ts": 5, "dur": 9, "args": {"correlation": 7}}`,
	`{"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 1, "tid": 1, "ts": 5, "dur": 9, "args": {"correlation": 7}}`,
	`{"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 1, "tid": 1, "ts": 5, "dur": 9, "args": {"correlation": 7}, "more": 1}`,
	`{"ph": "X", "cat": "user_annotation", "name": "prefill[bs=1 tok=887 ctx=887]", "pid": 2451, "tid": 2451, "ts": 4912347605513.943, "dur": 7898.000, "args": {"External id": 1001, "Record function id": 0}}`,
	`{"ph": "X", "cat": "gpu_user_annotation", "name": "decode", "pid": 2, "tid": 0, "ts": 5, "dur": 9, "args": {"External id": 1001}}`,
	`{"ph": "X", "cat": "python_function", "name": "vllm/v1/worker/gpu_model_runner.py(1): execute_model", "pid": 1, "tid": 1, "ts": 5, "dur": 9, "args": {"Python id": 2, "Python parent id": null}}`,
	`{"ph": "X", "cat": "python_function", "name": "x.py(1): f", "pid": 1, "tid": 1, "ts": 5, "dur": 9, "args": {"Python id": 2, "Python parent id": null}}`,
	`{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 9, "args": {"External id": 3 ]}`,
	`{"ph": "f", "a": "0123456789012345678901234567890123456789012345678901234567890123456789", "b": "0123456789012345678901234567890123456789012345678901234567890123456789", "c": "0123456789012345678901234567890123456789012345678901234567890123456789", "d": "0123456789012345678901234567890123456789012345678901234567890123456789", "e": "012345678901234567890123456789012345678901234567890", "f": "012345678901234567890123456789012345678901234567890", "g": "012345678901234567890123456789012345678901234567890", "cat": "x"}`,
}

// seed is the first of kernelSeeds that holds sub.
func seed(t *testing.T, sub string) string {
	for _, s := range kernelSeeds {
		if strings.Contains(s, sub) {
			return s
		}
	}
	t.Fatalf("no seed holds %q", sub)
	return ""
}

// scanResult is everything a Scanner reports about an input.
type scanResult struct {
	Events     []traceEvent
	Err        string
	Entries    int64
	Categories map[string]int64
	Warnings   []diag.Warning
}

func scanWith(data []byte, noFast, ops bool) scanResult {
	s := newScanner(bytes.NewReader(data))
	s.noFast = noFast
	s.KeepOps = ops
	var r scanResult
	for s.Scan() {
		r.Events = append(r.Events, *s.Event())
	}
	if s.Err() != nil {
		r.Err = s.Err().Error()
	}
	r.Entries, r.Categories, r.Warnings = s.Events(), s.Categories(), s.Warnings()
	return r
}

// The fast paths (kernels read, flows skipped) give exactly what the general
// path gives: the same events, counts and errors, on whole inputs and on
// inputs cut short.
func FuzzFastPaths(f *testing.F) {
	for _, ev := range kernelSeeds {
		f.Add([]byte(`{"traceEvents": [` + ev + `, ` + ev + "\n]}"))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, cut := range []int{len(data), len(data) * 2 / 3, len(data) - 7} {
			if cut < 0 {
				continue
			}
			for _, ops := range []bool{false, true} {
				fast, slow := scanWith(data[:cut], false, ops), scanWith(data[:cut], true, ops)
				require.Equal(t, slow, fast, "cut at %d, ops %v", cut, ops)
			}
		}
	})
}

// The seeds themselves: the fast path takes the Kineto layouts (and the
// general path agrees on every seed).
func TestFastPathSeeds(t *testing.T) {
	t.Parallel()
	for i, ev := range kernelSeeds {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			data := []byte(`{"traceEvents": [` + ev + "]}")
			for _, ops := range []bool{false, true} {
				require.Equal(t, scanWith(data, true, ops), scanWith(data, false, ops), "ops %v", ops)
			}
		})
	}
	// The ATOM layouts are read by the fast paths.
	for _, ev := range kernelSeeds[:2] {
		b := []byte(ev)
		s := &scanner{names: map[string]string{}}
		_, j := kinetoCat(b)
		require.Positive(t, j)
		end, kept, ok := s.completeFast(b, j+len("kernel")+1, clKernel)
		require.True(t, ok && kept, ev)
		require.Equal(t, len(b), end)
	}
	// So are the CPU ops, launches and annotations the sim writes; an op
	// that is no step is skipped on its name when ops are not kept.
	for _, c := range []struct {
		ev        string
		cl        class
		ops, kept bool
	}{
		{seed(t, `"aten::mm", "pid": 2451`), clOp, true, true},
		{seed(t, `"aten::mm", "pid": 2451`), clOp, false, false},
		{seed(t, `ProfilerStep#7`), clOp, false, true},
		{seed(t, `hipModuleLaunchKernel`), clRuntime, false, true},
		{seed(t, `cudaStreamSynchronize`), clRuntime, false, false},
		{seed(t, `prefill[bs=1`), clAnnotation, false, true},
	} {
		b := []byte(c.ev)
		s := &scanner{names: map[string]string{}, KeepOps: c.ops}
		_, j := kinetoCat(b)
		require.Positive(t, j)
		j += bytes.IndexByte(b[j:], '"') + 1
		end, kept, ok := s.completeFast(b, j, c.cl)
		require.True(t, ok, c.ev)
		require.Equal(t, c.kept, kept, c.ev)
		if kept {
			require.Equal(t, len(b), end)
		}
	}
	flow := []byte(kernelSeeds[15])
	j := kinetoPhase(flow)
	require.Positive(t, j)
	end, cat, ok := flatEvent(flow, j+2, j+512)
	require.True(t, ok)
	require.Equal(t, len(flow), end)
	require.Equal(t, "ac2g", string(cat))
}
