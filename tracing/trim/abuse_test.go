package trim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing/trim"
)

// withEvents returns the trace doc with its traceEvents replaced by evs.
func withEvents(t *testing.T, doc []byte, evs []json.RawMessage) []byte {
	t.Helper()
	var top map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(doc, &top))
	b, err := json.Marshal(evs)
	require.NoError(t, err)
	top["traceEvents"] = b
	out, err := json.Marshal(top)
	require.NoError(t, err)
	return out
}

// keptEvents trims data to w and returns the kept events, sorted.
func keptEvents(t *testing.T, data []byte, w trim.Window) []string {
	t.Helper()
	out, _ := doTrim(t, data, trim.Options{Window: &w})
	var doc struct{ TraceEvents []json.RawMessage }
	require.NoError(t, json.Unmarshal(out, &doc))
	var evs []string
	for _, e := range doc.TraceEvents {
		evs = append(evs, string(e))
	}
	slices.Sort(evs)
	return evs
}

// A window keeps the same events whatever their order in the file.
func TestTrimWindowIndependentOfEventOrder(t *testing.T) {
	t.Parallel()
	src := generate(t, synth.GenerateOptions{DecodeSteps: 8})
	full := read(t, src)
	st := full.Steps[4]
	w := trim.Window{StartNS: st.Start - full.BaseNS, EndNS: st.End - full.BaseNS}
	var doc struct{ TraceEvents []json.RawMessage }
	require.NoError(t, json.Unmarshal(src, &doc))
	inOrder := withEvents(t, src, doc.TraceEvents)
	reversed := slices.Clone(doc.TraceEvents)
	slices.Reverse(reversed)
	want := keptEvents(t, inOrder, w)
	require.NotEmpty(t, want)
	require.Equal(t, want, keptEvents(t, withEvents(t, src, reversed), w), "reversed events")

	// A graph launch made long before the window (past the GPU lag) whose
	// kernel runs in it: kept or dropped the same in either order.
	launch := `{"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1, "ts": 0, "dur": 5, "args": {"correlation": 7}}`
	kernel := `{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20100, "dur": 50, "args": {"device": 0, "stream": 7, "correlation": 7}}`
	ann := `{"ph": "X", "cat": "user_annotation", "name": "work", "pid": 1, "tid": 1, "ts": 20000, "dur": 900}`
	gw := trim.Window{StartNS: 20_000_000, EndNS: 21_000_000}
	a := keptEvents(t, []byte(`{"traceEvents": [`+ann+`, `+launch+`, `+kernel+`]}`), gw)
	b := keptEvents(t, []byte(`{"traceEvents": [`+ann+`, `+kernel+`, `+launch+`]}`), gw)
	require.Equal(t, a, b, "launch before or after its kernel")
	require.Contains(t, a, kernel)
}

// A gzip file whose checksum fails is refused, and nothing is written.
func TestTrimBadChecksum(t *testing.T) {
	t.Parallel()
	src := generate(t, synth.GenerateOptions{DecodeSteps: 4})
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	_, err := zw.Write(src)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	bad := z.Bytes()
	bad[len(bad)-8] ^= 0xff // the CRC-32 in the trailer
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.json.gz"), filepath.Join(dir, "out.json")
	require.NoError(t, os.WriteFile(in, bad, 0o644))
	_, err = trim.File(context.Background(), in, out, false, trim.Options{Decode: 1})
	require.ErrorContains(t, err, "checksum")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the input: no output, no temporary file")
}

// Invalid UTF-8 and raw control bytes in strings are refused with their
// offset: trim never writes invalid JSON.
func TestTrimInvalidText(t *testing.T) {
	t.Parallel()
	ev := func(name string) string {
		return `{"ph": "X", "cat": "user_annotation", "name": "` + name + `", "pid": 1, "tid": 1, "ts": 10, "dur": 5}`
	}
	for _, c := range []struct{ name, doc, want string }{
		{"invalid UTF-8", `{"traceEvents": [` + ev("ok") + `, ` + ev("a\xffb") + `]}`, "not UTF-8"},
		{"control byte", `{"traceEvents": [` + ev("a\x01b") + `]}`, "raw control byte 0x01"},
		{"newline in a string", `{"traceEvents": [` + ev("a\nb") + `]}`, "raw control byte 0x0a"},
		{"in a top-level value", `{"meta": "a` + "\x7f\xfe" + `", "traceEvents": [` + ev("ok") + `]}`, "not UTF-8"},
		{"ts with a leading zero", `{"traceEvents": [` + strings.Replace(ev("ok"), `"ts": 10`, `"ts": 010`, 1) + `]}`, `bad ts "010"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			_, err := trim.Trim(context.Background(), strings.NewReader(c.doc), &out, trim.Options{Window: &trim.Window{StartNS: 0, EndNS: 100_000}})
			require.ErrorContains(t, err, c.want)
			require.ErrorContains(t, err, "byte ")
		})
	}
	// Escaped, the same text is valid and kept.
	var out bytes.Buffer
	_, err := trim.Trim(context.Background(), strings.NewReader(`{"traceEvents": [`+ev(`a\u0001b\n`)+`]}`), &out, trim.Options{Window: &trim.Window{StartNS: 0, EndNS: 100_000}})
	require.NoError(t, err)
	require.True(t, json.Valid(out.Bytes()))
}

// Numbers too large for the flags say so, rather than "want t0 < t1".
func TestParseFlagsOutOfRange(t *testing.T) {
	t.Parallel()
	_, err := trim.ParseWindow("0:9999999999999999")
	require.ErrorContains(t, err, "out of range")
	_, err = trim.ParseStepRange("0:99999999999999999999")
	require.ErrorContains(t, err, "out of range")
	_, err = trim.ParseWindow("5:1")
	require.ErrorContains(t, err, "t0 < t1")
	w, err := trim.ParseWindow("1.5:9223372036854769.999")
	require.NoError(t, err)
	require.Equal(t, trim.Window{StartNS: 1500, EndNS: 9223372036854769999}, w)
}
