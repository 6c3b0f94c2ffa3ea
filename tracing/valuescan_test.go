package tracing

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/jsonscan"
)

// oneShotEnd is what the one-shot helpers say of the value at b[0].
func oneShotEnd(b []byte, eof bool) int {
	switch b[0] {
	case '"':
		if e := jsonscan.StringEnd(b, 0); e >= 0 {
			return e
		}
		return jsonscan.Incomplete
	case '{', '[':
		return jsonscan.CompositeEnd(b, 0)
	}
	e := jsonscan.ScalarEnd(b, 0)
	if e == jsonscan.Incomplete && eof {
		return len(b)
	}
	return e
}

// valueScan fed in pieces finds the same end as the one-shot helpers given
// the whole input.
func FuzzValueScan(f *testing.F) {
	for _, s := range []string{`"a\"b"x`, `{"a": [1, {"b": "]"}]}, `, `[[[]]]]`, `[}`, `123, `, `"\\"`, `{"a\\": "\\\""}`, `tru`, strings.Repeat("[", 100) + strings.Repeat("]", 100)} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		if len(data) == 0 {
			return
		}
		n := int(step%16) + 1
		var v valueScan
		got := jsonscan.Incomplete
		for end := min(n, len(data)); ; end = min(end+n, len(data)) {
			got = v.scan(data[:end], end == len(data))
			if got != jsonscan.Incomplete || end == len(data) {
				break
			}
		}
		require.Equal(t, oneShotEnd(data, true), got)
	})
}

// endless is a reader of a prefix followed by one byte repeated forever.
type endless struct {
	prefix []byte
	fill   byte
	n      int64
}

func (r *endless) Read(p []byte) (int, error) {
	k := copy(p, r.prefix)
	r.prefix = r.prefix[k:]
	for i := k; i < len(p); i++ {
		p[i] = r.fill
	}
	r.n += int64(len(p))
	return len(p), nil
}

// One giant value (a name, nesting) in an endless stream is rejected once
// it passes maxValue: the input read and the memory allocated stay within
// a small multiple of the cap, and each refill does not rescan the value.
// Not parallel: it measures the allocations of the read alone.
func TestGiantValue(t *testing.T) {
	for _, c := range []struct {
		name, prefix string
		fill         byte
		want         string
	}{
		{"name", `{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "`, 'A', `byte 17 (traceEvents[0]): a single value is larger than 64 MB`},
		{"nested event", `{"traceEvents": [`, '[', `byte 17 (traceEvents[0]): a single value is larger than 64 MB`},
		{"nested top-level value", `{"x": `, '[', `byte 6: a single value is larger than 64 MB`},
		{"top-level string", `{"x": "`, 'x', `byte 6: a single value is larger than 64 MB`},
	} {
		for _, serial := range []bool{false, true} {
			r := &endless{prefix: []byte(c.prefix), fill: c.fill}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var err error
			if serial {
				s := newScanner(r)
				for s.Scan() {
				}
				err = s.Err()
			} else {
				_, err = Read(context.Background(), r, "x", Options{})
			}
			runtime.ReadMemStats(&after)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want, "%s serial=%v", c.name, serial)
			require.Less(t, r.n, int64(maxValue+8<<20), "%s serial=%v: input read", c.name, serial)
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4*maxValue), "%s serial=%v: bytes allocated", c.name, serial)
		}
	}
}

// Deep nesting inside a skipped event is read (and counted) like shallow
// nesting; a mismatch deep inside is an error at the event.
func TestDeepNesting(t *testing.T) {
	t.Parallel()
	const depth = 1 << 20
	deep := strings.Repeat("[", depth) + strings.Repeat("]", depth)
	good := `{"traceEvents": [{"ph": "X", "cat": "python_function", "name": "f", "args": {"x": ` + deep + `}}, {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 1, "ts": 1, "dur": 1}]}`
	s := newScanner(strings.NewReader(good))
	n := 0
	for s.Scan() {
		n++
	}
	require.NoError(t, s.Err())
	require.Equal(t, 1, n)
	require.Equal(t, int64(2), s.Events())

	bad := strings.Replace(good, "[]", "[}", 1)
	s = newScanner(strings.NewReader(bad))
	for s.Scan() {
	}
	var se *jsonscan.SyntaxError
	require.True(t, errors.As(s.Err(), &se), "%v", s.Err())
	require.Equal(t, int64(0), se.Event)
	require.Contains(t, se.Msg, "brackets do not match")
}
