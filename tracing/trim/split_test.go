package trim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

var splitSeeds = []string{
	// Kineto's indented layout, metadata after traceEvents.
	`{
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "GPU"}],
  "traceEvents": [
  {
    "ph": "X", "cat": "user_annotation", "name": "decode[bs=8 tok=8]", "pid": 7, "tid": 7,
    "ts": 4912346589200.000, "dur": 7898.000,
    "args": {
      "External id": 1001, "Record function id": 0
    }
  },
  {
    "ph": "X", "cat": "kernel", "name": "k{}\"[", "pid": 2, "tid": 0,
    "ts": 4912346589272.500, "dur": 5.275,
    "args": {
      "External id": 1002, "device": 2, "stream": 0, "correlation": 50001, "kind": "Dispatch Kernel", "grid": [64, 1, 1], "block": [256, 1, 1]
    }
  },
  {
    "ph": "f", "id": 51123, "pid": 2, "tid": 0, "ts": 4912346589272.500,
    "cat": "ac2g", "name": "ac2g", "bp": "e"
  },
  {
    "name": "process_name", "ph": "M", "ts": 4912346589000.000, "pid": 2, "tid": 0,
    "args": {
      "name": "python3"
    }
  }
  ],
  "traceName": "x",
  "baseTimeNanoseconds": 1768568067000000000
}`,
	// Python frames and kernels as Kineto writes them, one with a brace
	// in its name, one with a nested args value, one with a string pid.
	`{"traceEvents": [
  {
    "ph": "X", "cat": "python_function", "name": "a.py(1): f {x}", "pid": 2451, "tid": 2451,
    "ts": 4912346934909.575, "dur": 4.266,
    "args": {
      "Python parent id": 51139, "Python id": 52871, "Python thread": 0
    }
  },
  {
    "ph": "X", "cat": "kernel", "name": "void k<{lambda()#1}>(int)", "pid": 0, "tid": 7, "ts": 1428625781193.13, "dur": 1.568, "args": {"External id": 22613, "device": 0, "stream": 7, "correlation": 699188, "grid": [18, 1, 1], "block": [128, 1, 1]}
  },
  {
    "ph": "X", "cat": "kernel", "name": "k", "pid": "GPU 0", "tid": 7, "ts": 3, "dur": 1, "args": {}
  }
  ]}`,
	// Compact, string pids, legacy categories, an escaped name, nested args.
	`{"traceEvents": [{"ph": "X", "cat": "Kernel", "name": "a\\b\"c", "pid": 0, "tid": "stream 7", "ts": 1623142623531625, "dur": 2, "args": {"correlation": 34441, "external id": 544, "x": {"y": [1, {"z": "}"}]}}}, {"ph": "s", "id": 34417, "pid": 25738, "tid": 25738, "ts": 1623142623529088, "cat": "async", "name": "launch"}], "schemaVersion": 1}`,
	// Members in another order, exponents, an empty event, odd whitespace.
	"{\"traceEvents\":[{},{\"ts\":1.5e3,\"dur\":2,\"ph\":\"X\",\"name\":\"n\",\"cat\":\"cpu_op\",\"pid\":1,\"tid\":1}\t,\r\n{\"args\":{\"correlation\":-3},\"ph\":\"i\",\"ts\":\"bad\"}]}",
	`{"traceEvents": []}`,
	`{"traceEvents": [{"ph": "X", "ts": 1, }]}`,
	`{"a": [1, 2}`,
}

func FuzzSplit(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		events, err := splitAll(t, bytes.NewReader(data))
		// Valid JSON with a traceEvents array of objects must split into
		// exactly its events, each the same JSON value.
		var doc struct {
			TraceEvents []json.RawMessage `json:"traceEvents"`
		}
		var top map[string]json.RawMessage
		if json.Unmarshal(data, &top) != nil || top["traceEvents"] == nil || json.Unmarshal(data, &doc) != nil || !allObjects(doc.TraceEvents) || !json.Valid(data) {
			return
		}
		require.NoError(t, err)
		require.Len(t, events, len(doc.TraceEvents))
		for i, raw := range events {
			var a, b any
			require.NoError(t, json.Unmarshal(raw, &a), "event %d: %q", i, raw)
			require.NoError(t, json.Unmarshal(doc.TraceEvents[i], &b))
			require.Equal(t, b, a, "event %d", i)
		}
		// The trimmed trace of any valid input is valid JSON.
		var out bytes.Buffer
		if _, err := Trim(context.Background(), bytes.NewReader(data), &out, Options{Window: &Window{StartNS: -1 << 62, EndNS: 1 << 62}}); err == nil {
			require.True(t, json.Valid(out.Bytes()), "jsonscan.Invalid output %q", out.Bytes())
		}
	})
}

func allObjects(evs []json.RawMessage) bool {
	for _, e := range evs {
		if len(e) == 0 || e[0] != '{' {
			return false
		}
	}
	return true
}

// splitAll splits r and checks, for every event, that the fast reader and
// the general one agree wherever the fast one applies.
func splitAll(t testing.TB, r io.Reader) ([][]byte, error) {
	t.Helper()
	sp, err := newSplitter(context.Background(), r)
	if err != nil {
		return nil, err
	}
	defer sp.close()
	var events [][]byte
	for {
		it, _, _, err := sp.next()
		if errors.Is(err, io.EOF) {
			return events, nil
		}
		if err != nil {
			return events, err
		}
		if it != itemEvent {
			continue
		}
		raw := bytes.Clone(sp.ev.raw)
		events = append(events, raw)
		var fast, slow event
		n1, ok := fastEvent(raw, &fast)
		n2, msg := parseEvent(raw, &slow)
		require.Equal(t, len(raw), n2, "general reader on %q: %s", raw, msg)
		if ok {
			require.Equal(t, n2, n1)
			if d := cmp.Diff(view(&slow), view(&fast)); d != "" {
				t.Fatalf("fast and general readers differ on %q (-general +fast):\n%s", raw, d)
			}
		}
	}
}

type eventView struct {
	Ph                      byte
	Cat, Name, Pid, Tid, ID string
	TS, End                 int64
	HasTS                   bool
	Corr, Ext               int64
}

func view(e *event) eventView {
	return eventView{e.ph, string(e.cat), string(e.name), string(e.pid), string(e.tid), string(e.id), e.ts, e.end(), e.hasTS, e.correlation(), e.externalID()}
}

// Events cut anywhere by the read-ahead chunks split the same.
func TestSplitAcrossReads(t *testing.T) {
	t.Parallel()
	for i, s := range splitSeeds[:4] {
		whole, err := splitAll(t, bytes.NewReader([]byte(s)))
		require.NoError(t, err, "seed %d", i)
		bytewise, err := splitAll(t, iotest.OneByteReader(bytes.NewReader([]byte(s))))
		require.NoError(t, err, "seed %d", i)
		require.Equal(t, whole, bytewise, "seed %d", i)
	}
}
