package tracing

import (
	"bytes"
	"fmt"
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
	`{"ph": "f", "a": "0123456789012345678901234567890123456789012345678901234567890123456789", "b": "0123456789012345678901234567890123456789012345678901234567890123456789", "c": "0123456789012345678901234567890123456789012345678901234567890123456789", "d": "0123456789012345678901234567890123456789012345678901234567890123456789", "e": "012345678901234567890123456789012345678901234567890", "f": "012345678901234567890123456789012345678901234567890", "g": "012345678901234567890123456789012345678901234567890", "cat": "x"}`,
}

// scanResult is everything a Scanner reports about an input.
type scanResult struct {
	Events     []traceEvent
	Err        string
	Entries    int64
	Categories map[string]int64
	Warnings   []diag.Warning
}

func scanAll(data []byte, noFast bool) scanResult {
	s := newScanner(bytes.NewReader(data))
	s.noFast = noFast
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
			fast, slow := scanAll(data[:cut], false), scanAll(data[:cut], true)
			require.Equal(t, slow, fast, "cut at %d", cut)
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
			require.Equal(t, scanAll(data, true), scanAll(data, false))
		})
	}
	// The ATOM layouts are read by the fast paths.
	for _, ev := range kernelSeeds[:2] {
		b := []byte(ev)
		s := &scanner{names: map[string]string{}}
		_, j := kinetoCat(b)
		require.Positive(t, j)
		end, ok := s.kernelFast(b, j+len("kernel")+1)
		require.True(t, ok, ev)
		require.Equal(t, len(b), end)
	}
	flow := []byte(kernelSeeds[15])
	j := kinetoPhase(flow)
	require.Positive(t, j)
	end, cat, ok := flatEvent(flow, j+2, j+512)
	require.True(t, ok)
	require.Equal(t, len(flow), end)
	require.Equal(t, "ac2g", string(cat))
}
