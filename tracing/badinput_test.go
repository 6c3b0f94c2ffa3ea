package tracing_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/tracing"
)

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// Each kind of bad input gets one clear message naming the input and saying
// what it is.
func TestBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, input string
		want        []string // substrings of the error
	}{
		{"not JSON", "hello, world", []string{"bad.json", "byte 0", "not JSON"}},
		{"binary", "\x00\x01\x02", []string{"byte 0", "not JSON"}},
		{"empty file", "", []string{"empty input"}},
		{"whitespace", " \n\t ", []string{"only whitespace"}},
		{"top-level array", `[{"ph": "X", "name": "k", "ts": 1, "dur": 2}]`, []string{"byte 0", "JSON array", "old Chrome trace format", "traceEvents"}},
		{"empty traceEvents", `{"schemaVersion": 1, "traceEvents": []}`, []string{"traceEvents is empty"}},
		{"non-Kineto object", `{"name": "my-app", "version": [1, 2], "config": {"a": true}}`, []string{"no traceEvents key", "not a PyTorch profiler (Kineto) trace"}},
		{"traceEvents not an array", `{"traceEvents": {"a": 1}}`, []string{"traceEvents is not an array"}},
		{"garbage between events", `{"traceEvents": [{"ph": "X"} {"ph": "X"}]}`, []string{"byte 29", "traceEvents[1]", "expected ',' or ']'"}},
		{"bad ts on a kernel", `{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 12x, "dur": 1}]}`, []string{"traceEvents[0]", "bad ts"}},
		{"mismatched brackets", `{"traceEvents": [{"args": [}]}`, []string{"byte 17", "brackets do not match"}},
		{"truncated before any kernel", `{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1}, {"ph": "X", "cat": "ker`, []string{"truncated", "no GPU kernel was read"}},
	}
	for _, c := range cases {
		for _, zipped := range []bool{false, true} {
			name := c.name
			in := []byte(c.input)
			if zipped {
				name += " (gzip)"
				in = gz(t, in)
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				_, err := tracing.Read(context.Background(), bytes.NewReader(in), "bad.json", tracing.Options{})
				require.Error(t, err)
				for _, w := range c.want {
					assert.Contains(t, err.Error(), w)
				}
				assert.True(t, strings.HasPrefix(err.Error(), "bad.json: "), "message names the file: %v", err)
			})
		}
	}
}

func TestReadCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var buf bytes.Buffer
	require.NoError(t, bigTrace(&buf, 3, 2, 4))
	for _, opts := range []tracing.Options{{}, {NoReadAhead: true}} {
		_, err := tracing.Read(ctx, bytes.NewReader(buf.Bytes()), "big", opts)
		require.ErrorIs(t, err, context.Canceled)
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := tracing.Load(context.Background(), t.TempDir()+"/none.json.gz", tracing.Options{})
	require.ErrorIs(t, err, os.ErrNotExist)
}

// Cutting a real trace anywhere gives either a partial analysis with a
// warning that names the offset, or a clear error — never a panic.
func TestTruncatedTrace(t *testing.T) {
	t.Parallel()
	path := corpus.Path(t, "traces/sglang-qwen3-8b-decode-mi300x.json.gz")
	zipped, err := os.ReadFile(path)
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(zipped))
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	full, err := tracing.Read(context.Background(), bytes.NewReader(plain), "full", tracing.Options{})
	require.NoError(t, err)

	for _, in := range []struct {
		name string
		data []byte
		what string // how the offset is named in the warning
	}{
		{"json", plain, "at byte %d "},
		{"gzip", zipped, "(compressed byte %d)"},
	} {
		t.Run(in.name, func(t *testing.T) {
			t.Parallel()
			var cuts []int
			for i := 0; i < 97; i++ {
				cuts = append(cuts, len(in.data)*i/97)
			}
			for i := 1; i <= 40; i++ { // the tail: closing keys, gzip trailer
				cuts = append(cuts, len(in.data)-i)
			}
			partial, failed := 0, 0
			for _, cut := range cuts {
				for _, ra := range []bool{false, true} {
					tr, err := tracing.Read(context.Background(), bytes.NewReader(in.data[:cut]), "cut.json", tracing.Options{NoReadAhead: ra})
					if err != nil {
						failed++
						assert.True(t, strings.HasPrefix(err.Error(), "cut.json: "), "cut %d: %v", cut, err)
						assert.Regexp(t, "truncated|empty input|gzip", err.Error(), "cut %d", cut)
						continue
					}
					if len(tr.Warnings) > 0 && strings.Contains(tr.Warnings[0].Message, "truncated") {
						partial++
						assert.Contains(t, tr.Warnings[0].Message, fmt.Sprintf(in.what, cut), "cut %d names the offset", cut)
						assert.LessOrEqual(t, len(tr.Kernels), len(full.Kernels))
						assert.NotEmpty(t, tr.Kernels)
						continue
					}
					// Only the gzip trailer was cut: the JSON itself is whole,
					// and the missing checksum is reported.
					assert.Equal(t, len(full.Kernels), len(tr.Kernels), "cut %d: not truncated, so the result must be complete", cut)
					if in.name == "gzip" && assert.NotEmpty(t, tr.Warnings, "cut %d", cut) {
						assert.Contains(t, tr.Warnings[0].Message, "checksum is missing", "cut %d", cut)
					}
				}
			}
			t.Logf("%s: %d cuts: %d partial results with a warning, %d errors", in.name, len(cuts), partial/2, failed/2)
			assert.Positive(t, partial)
			assert.Positive(t, failed)
		})
	}
}

// The gzip trailer (CRC-32 and size of each member) is checked even when
// the JSON ends cleanly before it: a corrupt file whose JSON parses is
// analysed with a warning naming the file, a bad member in the middle of
// the JSON is an error, and concatenated members read as one stream.
func TestGzipTrailer(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	require.NoError(t, bigTrace(&buf, 3, 2, 4))
	plain := buf.Bytes()
	want, err := tracing.Read(context.Background(), bytes.NewReader(plain), "plain", tracing.Options{})
	require.NoError(t, err)
	require.NotEmpty(t, want.Kernels)

	whole := gz(t, plain)
	flip := func(b []byte, at int) []byte { // at counts from the end
		c := bytes.Clone(b)
		c[len(c)-at] ^= 0x5a
		return c
	}
	half := len(plain) / 2
	first, second := gz(t, plain[:half]), gz(t, plain[half:])
	members := append(bytes.Clone(first), second...)
	var many []byte
	for i := 0; i < len(plain); i += 1000 {
		many = append(many, gz(t, plain[i:min(i+1000, len(plain))])...)
	}
	cases := []struct {
		name    string
		data    []byte
		warning string // "" for none
		err     string // "" for a result
	}{
		{"intact", whole, "", ""},
		// A checksum that fails is an error: an event may be wrong.
		{"crc flipped", flip(whole, 8), "", "gzip checksum mismatch: the file is corrupt; copy or export it again"},
		{"last crc byte flipped", flip(whole, 5), "", "gzip checksum mismatch"},
		{"size flipped", flip(whole, 1), "", "gzip checksum mismatch"},
		// A trailer cut short is a warning: the JSON is whole, unverified.
		{"trailer cut", whole[:len(whole)-8], "checksum is missing", ""},
		{"half the trailer cut", whole[:len(whole)-3], "checksum is missing", ""},
		{"a few stray bytes after the stream", append(bytes.Clone(whole), 1, 2), "stray bytes", ""},
		{"garbage after the stream", append(bytes.Clone(whole), "these bytes are not gzip"...), "not gzip", ""},
		// Zero padding is skipped, as Python's gzip module skips it.
		{"two zeros after the stream", append(bytes.Clone(whole), 0, 0), "", ""},
		{"ten zeros after the stream", append(bytes.Clone(whole), make([]byte, 10)...), "", ""},
		{"a block of zeros after the stream", append(bytes.Clone(whole), make([]byte, 4096)...), "", ""},
		{"zeros between members", append(append(bytes.Clone(first), make([]byte, 512)...), second...), "", ""},
		{"two members", members, "", ""},
		{"many members", many, "", ""},
		{"two members, last crc flipped", flip(members, 8), "", "gzip checksum mismatch"},
		{"two members, first crc flipped", append(flip(first, 8), second...), "", "gzip checksum mismatch"},
	}
	for _, c := range cases {
		for _, serial := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/serial=%v", c.name, serial), func(t *testing.T) {
				t.Parallel()
				path := t.TempDir() + "/trace.json.gz"
				require.NoError(t, os.WriteFile(path, c.data, 0o644))
				tr, err := tracing.Load(context.Background(), path, tracing.Options{NoReadAhead: serial})
				if c.err != "" {
					require.Error(t, err)
					assert.Contains(t, err.Error(), c.err)
					assert.True(t, strings.HasPrefix(err.Error(), path+": "), "names the file: %v", err)
					return
				}
				require.NoError(t, err)
				if c.warning == "" {
					assert.Empty(t, tr.Warnings)
				} else if assert.Len(t, tr.Warnings, 1) {
					assert.Contains(t, tr.Warnings[0].Message, c.warning)
					assert.True(t, strings.HasPrefix(tr.Warnings[0].Message, path+": "), "names the file: %v", tr.Warnings[0].Message)
				}
				got, exp := tr.Summarize(), want.Summarize()
				got.Path, got.Warnings, exp.Path, exp.Warnings = "", nil, "", nil
				assert.Equal(t, exp, got)
			})
		}
	}
}
