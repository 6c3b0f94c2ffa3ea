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
// what it is (SPEC §8).
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
					if len(tr.Warnings) > 0 && strings.Contains(tr.Warnings[0], "truncated") {
						partial++
						assert.Contains(t, tr.Warnings[0], fmt.Sprintf(in.what, cut), "cut %d names the offset", cut)
						assert.LessOrEqual(t, len(tr.Kernels), len(full.Kernels))
						assert.NotEmpty(t, tr.Kernels)
						continue
					}
					// Only the gzip trailer was cut: the JSON itself is whole.
					assert.Equal(t, len(full.Kernels), len(tr.Kernels), "cut %d: no warning, so the result must be complete", cut)
				}
			}
			t.Logf("%s: %d cuts: %d partial results with a warning, %d errors", in.name, len(cuts), partial/2, failed/2)
			assert.Positive(t, partial)
			assert.Positive(t, failed)
		})
	}
}
