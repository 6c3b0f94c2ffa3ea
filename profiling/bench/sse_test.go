package bench

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"
)

func readAll(t testing.TB, r io.Reader) ([]string, error) {
	t.Helper()
	s := newSSEReader(r)
	var got []string
	for {
		d, err := s.Next()
		if err != nil {
			if err == io.EOF {
				return got, nil
			}
			return got, err
		}
		got = append(got, string(d))
	}
}

func TestSSEReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     []string
		cut      bool
	}{
		{"atom frames", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []string{`{"a":1}`, "[DONE]"}, false},
		{"no space after colon", "data:x\n\n", []string{"x"}, false},
		{"only one leading space is stripped", "data:  x\n\n", []string{" x"}, false},
		{"multi-line data joined with LF", "data: a\ndata: b\n\n", []string{"a\nb"}, false},
		{"comments and other fields ignored", ": ping\nevent: message\nid: 7\nretry: 10\ndata: x\n\n", []string{"x"}, false},
		{"comment-only events are not dispatched", ": keep-alive\n\n: again\n\ndata: y\n\n", []string{"y"}, false},
		{"CRLF line ends", "data: a\r\n\r\ndata: b\r\n\r\n", []string{"a", "b"}, false},
		{"lone CR line ends", "data: a\r\rdata: b\r\r", []string{"a", "b"}, false},
		{"field without colon is an empty value", "data\n\n", []string{""}, false},
		{"extra blank lines", "\n\n\ndata: a\n\n\n\n", []string{"a"}, false},
		{"cut inside an event", "data: a\n\ndata: {\"choi", []string{"a"}, true},
		{"cut after a data line without its blank line", "data: a\n\ndata: b\n", []string{"a"}, true},
		{"empty stream", "", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				got, err := readAll(t, r)
				require.Equal(t, tc.want, got)
				if tc.cut {
					require.ErrorIs(t, err, errCutMidEvent)
				} else {
					require.NoError(t, err)
				}
			}
		})
	}
}

func TestSSEReaderLongLine(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100_000) // longer than the bufio buffer
	got, err := readAll(t, strings.NewReader("data: "+long+"\n\ndata: y\n\n"))
	require.NoError(t, err)
	require.Equal(t, []string{long, "y"}, got)
}

func TestSSEReaderReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom))
	got, err := readAll(t, r)
	require.Equal(t, []string{"a"}, got)
	require.ErrorIs(t, err, boom)
}

// refSSE is a simple reference parser (whole input, spec algorithm) for the fuzz test.
func refSSE(in string) (events []string, cut bool) {
	in = strings.ReplaceAll(in, "\r\n", "\n")
	in = strings.ReplaceAll(in, "\r", "\n")
	lines := strings.Split(in, "\n")
	complete := lines[:len(lines)-1] // the last element follows the last terminator
	tail := lines[len(lines)-1]
	var data []string
	has := false
	pending := false
	for _, l := range complete {
		if l == "" {
			if has {
				events = append(events, strings.Join(data, "\n"))
			}
			data, has, pending = nil, false, false
			continue
		}
		pending = true
		if l[0] == ':' {
			continue
		}
		f, v, ok := strings.Cut(l, ":")
		if ok {
			v = strings.TrimPrefix(v, " ")
		}
		if f == "data" {
			data = append(data, v)
			has = true
		}
	}
	return events, pending || has || tail != ""
}

func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"data: {\"choices\":[{\"text\":\" the\"}]}\n\ndata: [DONE]\n\n",
		"data: a\r\ndata: b\r\n\r\n: c\n\n",
		"data: a\r\rdata\r\r",
		"data: x\n\ndata: {\"cut",
		"event: e\nid: 1\n\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := readAll(t, bytes.NewReader(in))
		want, cut := refSSE(string(in))
		if cut {
			if !errors.Is(err, errCutMidEvent) {
				t.Fatalf("input %q: err = %v, want ErrCutMidEvent", in, err)
			}
		} else if err != nil {
			t.Fatalf("input %q: unexpected error %v", in, err)
		}
		if len(want) != len(got) {
			t.Fatalf("input %q: got %q, want %q", in, got, want)
		}
		for i := range want {
			if want[i] != got[i] {
				t.Fatalf("input %q: event %d = %q, want %q", in, i, got[i], want[i])
			}
		}
	})
}

// FuzzClientStream feeds arbitrary bodies to the client's stream reader: it
// never panics, a success has tokens and one gap fewer than tokens, and a
// failure has one of the stream kinds.
func FuzzClientStream(f *testing.F) {
	f.Add([]byte(atomFrames(3, 5)))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"error\":{\"message\":\"x\"}}\n\n"))
	f.Add([]byte("data: {\"choices\":[],\"usage\":{\"completion_tokens\":0}}\n\ndata: [DONE]\n\n"))
	c := &client{}
	f.Fuzz(func(t *testing.T, body []byte) {
		out := output{Start: time.Now()}
		c.readStream(context.Background(), &out, newSSEReader(bytes.NewReader(body)))
		if out.OK() {
			// A gap per token after the first frame: at least one per
			// later frame, at most one per token but the first.
			if out.TokenEvents == 0 || out.OutputTokens == 0 || out.ITL.Len() < out.TokenEvents-1 || out.ITL.Len() > out.FrameTokens-1 {
				t.Fatalf("success with %d token events, %d frame tokens, %d output tokens, %d gaps", out.TokenEvents, out.FrameTokens, out.OutputTokens, out.ITL.Len())
			}
			return
		}
		if out.Failure != failStream && out.Failure != failNoTokens {
			t.Fatalf("failure kind %q for a body (%s)", out.Failure, out.Error)
		}
	})
}

// BenchmarkReadStream measures the client's per-token parsing cost (SSE
// framing and JSON decoding of ATOM-style frames) without the network.
func BenchmarkReadStream(b *testing.B) {
	const n = 1000
	body := []byte(atomFrames(n, 1024))
	c := &client{}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		out := output{Start: time.Now()}
		c.readStream(context.Background(), &out, newSSEReader(bytes.NewReader(body)))
		if !out.OK() || out.TokenEvents != n {
			b.Fatalf("%s: %s", out.Failure, out.Error)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/token")
}
