package tracing_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/tracing"
)

// valueTrace is a small valid trace: one decode step, its launch and its
// kernel (traceEvents[2]), whose fields the cases below replace.
func valueTrace(kernel string) string {
	if kernel == "" {
		kernel = `"ts": 1020, "dur": 10, "args": {"device": 0, "stream": 7, "correlation": 1}`
	}
	return `{"traceEvents": [
{"ph": "X", "cat": "user_annotation", "name": "decode[bs=2 tok=2]", "pid": 1, "tid": 1, "ts": 1000, "dur": 100},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1010, "dur": 5, "args": {"correlation": 1}},
{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, ` + kernel + `},
{"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 1060, "dur": 40, "args": {"device": 0, "stream": 7, "correlation": 2}}
]}`
}

// Impossible or odd values are read on, and warned about with the event
// they are in, a stable code, and what was made of them.
func TestImpossibleValues(t *testing.T) {
	t.Parallel()
	many := strings.Repeat(`{"ph": "X", "cat": "kernel", "name": "neg", "pid": 0, "tid": 7, "ts": 1050, "dur": -1}, `, 5)
	cases := []struct {
		name  string
		input string
		codes []diag.Code
		want  []string // substrings of the warnings, in order
		check func(t *testing.T, tr *tracing.Trace)
	}{
		{name: "valid", input: valueTrace("")},
		{name: "trailing whitespace", input: valueTrace("") + "\n \n"},
		{
			name: "negative duration", input: valueTrace(`"ts": 1020, "dur": -10, "args": {"correlation": 1}`),
			codes: []diag.Code{diag.ImpossibleValue}, want: []string{"traceEvents[2] (byte ", `kernel "k" has a negative duration (-10.000 µs): counted as 0`},
			check: func(t *testing.T, tr *tracing.Trace) { require.Zero(t, tr.Kernels[0].Dur) },
		},
		{
			name: "many negative durations", input: strings.Replace(valueTrace(""), `{"ph": "X", "cat": "kernel", "name": "k2"`, many+`{"ph": "X", "cat": "kernel", "name": "k2"`, 1),
			codes: []diag.Code{diag.ImpossibleValue}, want: []string{"traceEvents[3] ", "(and 4 more events like it)"},
		},
		{
			name: "negative timestamp", input: valueTrace(`"ts": -20, "dur": 10, "args": {"correlation": 1}`),
			codes: []diag.Code{diag.ImpossibleValue}, want: []string{"traceEvents[2]: the timestamp -20.000 µs is negative"},
		},
		{
			name: "timestamp far after the window", input: valueTrace(`"ts": 99000000000, "dur": 10, "args": {"correlation": 1}`),
			codes: []diag.Code{diag.ImpossibleValue}, want: []string{"traceEvents[2] starts 99000.0 s after the profile window (1 kernel starts that late)"},
		},
		{
			name: "kernel longer than the trace", input: valueTrace(`"ts": 1020, "dur": 5000000000, "args": {"correlation": 1}`),
			codes: []diag.Code{diag.ImpossibleValue}, want: []string{"traceEvents[2]: a kernel lasts 5000.0 s, longer than the whole trace"},
		},
		{
			name: "duplicate dur", input: valueTrace(`"ts": 1020, "dur": 10, "args": {"correlation": 1}, "dur": 20`),
			codes: []diag.Code{diag.DuplicateKey}, want: []string{`traceEvents[2] (byte `, `the event gives "dur" more than once: the last value (20) was used`},
			check: func(t *testing.T, tr *tracing.Trace) { require.Equal(t, int64(20000), tr.Kernels[0].Dur) },
		},
		{
			name: "duplicate args key", input: valueTrace(`"ts": 1020, "dur": 10, "args": {"correlation": 5, "correlation": 1}`),
			codes: []diag.Code{diag.DuplicateKey}, want: []string{`traceEvents[2] (byte `, `args gives "correlation" more than once: the last value was used`},
			check: func(t *testing.T, tr *tracing.Trace) { require.Equal(t, int64(1), tr.Kernels[0].Correlation) },
		},
		{
			name: "duplicate args key after another key", input: valueTrace(`"ts": 1020, "dur": 10, "args": {"correlation": 5, "queued": 0, "correlation": 1}`),
			codes: []diag.Code{diag.DuplicateKey}, want: []string{`args gives "correlation" more than once`},
		},
		{
			name: "ts as a string", input: valueTrace(`"ts": "1020", "dur": 10, "args": {"correlation": 1}`),
			codes: []diag.Code{diag.QuotedNumber}, want: []string{`traceEvents[2] (byte `, `ts is written as a string ("1020"): it was read as a number`},
			check: func(t *testing.T, tr *tracing.Trace) { require.Equal(t, int64(1020000), tr.Kernels[0].Start) },
		},
		{
			name: "correlation as a string", input: valueTrace(`"ts": 1020, "dur": 10, "args": {"correlation": "1"}`),
			codes: []diag.Code{diag.QuotedNumber}, want: []string{`args.correlation is written as a string ("1"): it was read as a number`},
			check: func(t *testing.T, tr *tracing.Trace) { require.Equal(t, int64(1), tr.Kernels[0].Correlation) },
		},
		{
			name: "data after the document", input: valueTrace("") + "\n{\"traceEvents\": []}",
			codes: []diag.Code{diag.TrailingData}, want: []string{"data follows the JSON document"},
		},
	}
	for _, c := range cases {
		for _, zipped := range []bool{false, true} {
			in := []byte(c.input)
			name := c.name
			if zipped {
				in, name = gz(t, in), name+" (gzip)"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				for _, opts := range []tracing.Options{{}, {NoReadAhead: true}} {
					tr, err := tracing.Read(context.Background(), bytes.NewReader(in), "v.json", opts)
					require.NoError(t, err)
					var codes []diag.Code
					for _, w := range tr.Warnings {
						codes = append(codes, w.Code)
					}
					require.Empty(t, cmp.Diff(c.codes, codes), "warnings: %q", diag.Messages(tr.Warnings))
					all := strings.Join(diag.Messages(tr.Warnings), "\n")
					for _, w := range c.want {
						require.Contains(t, all, w)
					}
					if c.check != nil {
						c.check(t, tr)
					}
				}
			})
		}
	}
}

// A second gzip member after the document is said, not read silently; one
// that continues the document is the normal multi-member gzip.
func TestSecondGzipMember(t *testing.T) {
	t.Parallel()
	doc := []byte(valueTrace(""))
	half := len(doc) / 2
	cases := []struct {
		name string
		data []byte
		want string // "" for no warning
	}{
		{"document split over two members", append(gz(t, doc[:half]), gz(t, doc[half:])...), ""},
		{"two traces joined", append(gz(t, doc), gz(t, doc)...), "a second gzip member begins at compressed byte "},
		{"an empty member after", append(gz(t, doc), gz(t, nil)...), "a second gzip member begins"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, opts := range []tracing.Options{{}, {NoReadAhead: true}} {
				tr, err := tracing.Read(context.Background(), bytes.NewReader(c.data), "m.json.gz", opts)
				require.NoError(t, err)
				if c.want == "" {
					require.Empty(t, tr.Warnings)
					continue
				}
				require.Len(t, tr.Warnings, 1)
				require.Equal(t, diag.TrailingData, tr.Warnings[0].Code)
				require.Contains(t, tr.Warnings[0].Message, c.want)
				require.Contains(t, tr.Warnings[0].Message, fmt.Sprintf("compressed byte %d,", len(gz(t, doc))))
			}
		})
	}
}

// A trace cut before the kernels of its last steps were written is
// truncated, not a profiler buffer drop: one warning says both.
func TestTruncatedIsNotCoverage(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"traceEvents": [`)
	const steps = 10
	for i := range steps {
		ts := 1000 + 100*i
		fmt.Fprintf(&b, `{"ph": "X", "cat": "user_annotation", "name": "decode[bs=2 tok=2]", "pid": 1, "tid": 1, "ts": %d, "dur": 90},`+"\n", ts)
		fmt.Fprintf(&b, `{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": %d, "dur": 5, "args": {"correlation": %d}},`+"\n", ts+10, i+1)
	}
	var cut int
	for i := range steps {
		if i == 3 {
			cut = b.Len()
		}
		fmt.Fprintf(&b, `{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": %d, "dur": 50, "args": {"correlation": %d}},`+"\n", 1000+100*i+20, i+1)
	}
	whole := strings.TrimSuffix(b.String(), ",\n") + "]}"

	tr, err := tracing.Read(context.Background(), strings.NewReader(whole), "t.json", tracing.Options{})
	require.NoError(t, err)
	require.Empty(t, tr.Warnings)

	tr, err = tracing.Read(context.Background(), strings.NewReader(whole[:cut+10]), "t.json", tracing.Options{})
	require.NoError(t, err)
	require.Len(t, tr.Warnings, 1, "%q", diag.Messages(tr.Warnings))
	require.Equal(t, diag.Truncated, tr.Warnings[0].Code)
	require.Contains(t, tr.Warnings[0].Message, "7 of 10 steps have no kernels, probably because their GPU events were past the cut (not a profiler buffer drop)")
	require.Equal(t, 7, tr.Coverage.StepsWithoutKernels)
}

// Text in another encoding than UTF-8 (or with a byte-order mark) is named
// in the error, with how to convert it.
func TestEncodings(t *testing.T) {
	t.Parallel()
	doc := valueTrace("")
	utf16 := func(bigEndian bool) []byte {
		var b []byte
		for _, r := range doc {
			if bigEndian {
				b = append(b, 0, byte(r))
			} else {
				b = append(b, byte(r), 0)
			}
		}
		return b
	}
	utf32 := func(bigEndian bool) []byte {
		var b []byte
		for _, r := range doc {
			if bigEndian {
				b = append(b, 0, 0, 0, byte(r))
			} else {
				b = append(b, byte(r), 0, 0, 0)
			}
		}
		return b
	}
	cat := func(a []byte, b []byte) []byte { return append(append([]byte{}, a...), b...) }
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"UTF-8 BOM", cat([]byte{0xEF, 0xBB, 0xBF}, []byte(doc)), "UTF-8 with a byte-order mark"},
		{"UTF-16 LE BOM", cat([]byte{0xFF, 0xFE}, utf16(false)), "UTF-16 little-endian (byte-order mark FF FE)"},
		{"UTF-16 BE BOM", cat([]byte{0xFE, 0xFF}, utf16(true)), "UTF-16 big-endian (byte-order mark FE FF)"},
		{"UTF-16 LE", utf16(false), "UTF-16 little-endian (zero bytes around the text)"},
		{"UTF-16 BE", utf16(true), "UTF-16 big-endian (zero bytes around the text)"},
		{"UTF-32 LE BOM", cat([]byte{0xFF, 0xFE, 0, 0}, utf32(false)), "UTF-32 little-endian (byte-order mark FF FE 00 00)"},
		{"UTF-32 BE BOM", cat([]byte{0, 0, 0xFE, 0xFF}, utf32(true)), "UTF-32 big-endian (byte-order mark 00 00 FE FF)"},
		{"UTF-32 LE", utf32(false), "UTF-32 little-endian (zero bytes around the text)"},
		{"UTF-32 BE", utf32(true), "UTF-32 big-endian (zero bytes around the text)"},
	}
	for _, c := range cases {
		for _, zipped := range []bool{false, true} {
			in, name := c.data, c.name
			if zipped {
				in, name = gz(t, in), name+" (gzip)"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				for _, opts := range []tracing.Options{{}, {NoReadAhead: true}} {
					_, err := tracing.Read(context.Background(), bytes.NewReader(in), "e.json", opts)
					require.Error(t, err)
					require.Contains(t, err.Error(), "e.json: byte 0: the input is "+c.want)
					require.Contains(t, err.Error(), "UTF-8")
				}
			})
		}
	}
}
