package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/units"
	"github.com/profile-model/profile-model/profiling/synth"
)

// fakeClock is a clock whose Sleep returns at once and moves time forward,
// so the engine runs as fast as the CPU allows with exact step times.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.Advance(d)
	return ctx.Err()
}

// recBackend prices a step as 1 ms + 10 µs per sequence and remembers every step.
type recBackend struct {
	mu        sync.Mutex
	steps     []synth.Step
	profiling bool
	profiled  []synth.Step
	stops     []bool // the write flag of each stop
}

func (b *recBackend) Run(s synth.Step) units.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.steps = append(b.steps, s)
	if b.profiling {
		b.profiled = append(b.profiled, s)
	}
	return units.FromTime(time.Millisecond + time.Duration(s.BS)*10*time.Microsecond)
}

func (b *recBackend) HostGap() units.Duration   { return units.Micros(150) }
func (b *recBackend) OutputLag() float64        { return 0 }
func (b *recBackend) Intake(int) units.Duration { return 0 }

func (b *recBackend) StartProfile(dir string, at int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.profiling = true
	b.profiled = nil
	return nil
}

func (b *recBackend) StopProfile(at int64, write bool) func(context.Context) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.profiling = false
	b.stops = append(b.stops, write)
	return func(context.Context) ([]string, error) { return []string{"rank_0"}, nil }
}

func (b *recBackend) Steps() []synth.Step {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]synth.Step(nil), b.steps...)
}

// testServer is a running server on a real loopback listener.
type testServer struct {
	*Server
	URL  string
	stop context.CancelFunc
	done chan error
}

// start runs cfg's server until the test ends; cfg.Model defaults to "m".
func start(t *testing.T, cfg Config) *testServer {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "m"
	}
	if cfg.clock == nil {
		cfg.clock = newFakeClock()
	}
	srv, err := New(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{Server: srv, URL: "http://" + ln.Addr().String(), stop: cancel, done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-ts.done
	})
	return ts
}

// post sends a JSON body and returns the status and body.
func post(t *testing.T, url string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(j)
	}
	resp, err := http.Post(url, "application/json", rd)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, out
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, out
}

// sseFrames splits an event stream into the payloads of its data: lines.
func sseFrames(t *testing.T, body []byte) []string {
	t.Helper()
	require.True(t, bytes.HasSuffix(body, []byte("\n\n")), "stream must end with a blank line: %q", body)
	var frames []string
	for _, ev := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		require.True(t, strings.HasPrefix(ev, "data: "), "event %q is not a data: line", ev)
		require.NotContains(t, ev, "\n", "one line per event")
		frames = append(frames, strings.TrimPrefix(ev, "data: "))
	}
	return frames
}

// streamResult reads a streamed completion until the connection ends.
func streamBody(t *testing.T, url string, body any) (*http.Response, []byte, error) {
	t.Helper()
	j, err := json.Marshal(body)
	require.NoError(t, err)
	resp, err := http.Post(url, "application/json", bytes.NewReader(j))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(bufio.NewReader(resp.Body))
	return resp, out, err
}

// errorBody decodes ATOM's error shape, failing when the shape differs.
func errorBody(t *testing.T, b []byte) (msg, typ string, code int) {
	t.Helper()
	var e struct {
		Error *struct {
			Message *string `json:"message"`
			Type    *string `json:"type"`
			Code    *int    `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(b, &e), "error body %s", b)
	require.NotNil(t, e.Error, "no error object in %s", b)
	require.NotNil(t, e.Error.Message, "no error.message in %s", b)
	require.NotNil(t, e.Error.Type, "no error.type in %s", b)
	require.NotNil(t, e.Error.Code, "no error.code in %s", b)
	return *e.Error.Message, *e.Error.Type, *e.Error.Code
}
