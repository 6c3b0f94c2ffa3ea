package sim

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/units"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
)

// promMetrics parses Prometheus text into name -> value, checking that
// every sample has its TYPE line.
func promMetrics(t *testing.T, body string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	typed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(f, " ")
			if typ == "counter" {
				name += "_total"
			}
			typed[name] = true
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, v, ok := strings.Cut(line, " ")
		require.True(t, ok, "sample line %q", line)
		require.True(t, typed[name], "sample %q without a TYPE line", name)
		f, err := strconv.ParseFloat(v, 64)
		require.NoError(t, err, line)
		out[name] = f
	}
	return out
}

func TestMetricsAndServerInfo(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{backend: &recBackend{}})
	code, body := get(t, ts.URL+"/metrics")
	require.Equal(t, http.StatusOK, code)
	before := promMetrics(t, string(body))
	require.Zero(t, before["atom:requests_finished_total"])
	runRequests(t, ts.URL, 3, 7)
	code, body = get(t, ts.URL+"/metrics")
	require.Equal(t, http.StatusOK, code)
	after := promMetrics(t, string(body))
	require.Equal(t, 3.0, after["atom:requests_finished_total"])
	require.Equal(t, 21.0, after["atom:generation_tokens_total"])
	require.Equal(t, 3.0*float64(CountTokens("a b c d")), after["atom:prompt_tokens_total"])
	require.Equal(t, 3.0, after["atom:prefix_cache_requests_total"])
	require.Zero(t, after["atom:requests_running"])
	require.Zero(t, after["atom:requests_waiting"])
	require.Zero(t, after["atom:kv_cache_blocks_used"], "nothing runs, nothing is cached")
	require.Equal(t, 65536.0, after["atom:kv_cache_blocks_total"])

	code, body = get(t, ts.URL+"/server_info")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), `"atom_release":"current"`)
	require.Contains(t, string(body), `"max_num_seqs":512`)
}

// blockingStop is a backend whose export never ends until its context does.
type blockingStop struct{ recBackend }

func (b *blockingStop) StopProfile(at int64, write bool) func(context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
}

func TestStopProfileTimeout(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{backend: &blockingStop{}, ProfilerDir: t.TempDir(), ProfilerTimeout: 50 * time.Millisecond})
	code, _ := post(t, ts.URL+"/start_profile", nil)
	require.Equal(t, http.StatusOK, code)
	code, body := post(t, ts.URL+"/stop_profile", nil)
	require.Equal(t, http.StatusInternalServerError, code)
	msg, _, _ := errorBody(t, body)
	require.Contains(t, msg, "ATOM_PROFILER_TIMEOUT")
}

// TestIdleConnectionClosed: a kept-alive connection is closed by the server
// once idle for KeepAlive, as ATOM's server does after 5 s.
func TestIdleConnectionClosed(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{backend: &recBackend{}, KeepAlive: 100 * time.Millisecond})
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second))) // a failsafe, not a wait
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the server closes the idle connection")
}

// TestMixedSteps: with MixedSteps, a prompt that arrives while others
// decode joins their step; the trace labels it decode[... p=1 d=N], reads
// it back as mixed, and leaves it out of the decode batch size and the
// decode layer table.
func TestMixedSteps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg, err := Config{Model: "m", Layers: 2, PythonPerStep: -1, MixedSteps: true, ProfilerDir: dir, clock: newFakeClock()}.withDefaults()
	require.NoError(t, err)
	b, err := newSynthBackend(&cfg)
	require.NoError(t, err)
	e := newEngine(&cfg, b)
	e.virt = cfg.clock.Now().UnixNano()
	e.wallNext = cfg.clock.Now()
	ctx := context.Background()
	req := func(seq uint64, prompt int) *request {
		return newRequest(seq, prompt, 6, "length", 0, cfg.clock.Now())
	}
	e.handle(profileCmd{start: true, reply: make(chan profileReply, 1)})
	e.waiting = []*request{req(1, 100), req(2, 100)}
	require.NoError(t, e.step(ctx)) // prefill of both
	require.NoError(t, e.step(ctx)) // decode
	e.waiting = append(e.waiting, req(3, 300))
	require.NoError(t, e.step(ctx)) // mixed: 2 decode + 1 prefill
	for len(e.running) > 0 {
		require.NoError(t, e.step(ctx))
	}
	reply := make(chan profileReply, 1)
	e.handle(profileCmd{start: false, write: true, ctx: ctx, reply: reply})
	require.NoError(t, (<-reply).err)
	c := e.stepCounts()
	require.Equal(t, int64(1), c.ProfiledMixed)

	files, _ := filepath.Glob(filepath.Join(dir, "rank_0", "*.pt.trace.json.gz"))
	require.Len(t, files, 1)
	tr, err := tracing.Load(ctx, files[0], tracing.Options{})
	require.NoError(t, err)
	var mixed []tracing.Step
	for _, st := range tr.Steps {
		if st.Kind == tracing.StepMixed {
			mixed = append(mixed, st)
		}
	}
	require.Len(t, mixed, 1)
	require.Equal(t, "decode[bs=3 tok=302 p=1 d=2]", mixed[0].Label)
	sum := tr.Summarize()
	require.Equal(t, map[string]int{"prefill": 1, "mixed": 1, "decode": int(c.ProfiledDecode)}, sum.Steps)
	n := 0
	for _, v := range sum.DecodeBSHist {
		n += v
	}
	require.Equal(t, int(c.ProfiledDecode), n, "the histogram counts decode steps only")
	lt, err := inventory.DecodeLayers(ctx, tr, inventory.LayerOptions{Mode: inventory.ModeRobust})
	require.NoError(t, err)
	require.Equal(t, int(c.ProfiledDecode), lt.Steps, "the decode table leaves the mixed step out")
}

// TestLagIsOnTheTraceClock: when the engine falls behind its schedule by
// more than maxLag (a loaded machine), the trace clock takes the lost time,
// so the trace spans what the client saw.
func TestLagIsOnTheTraceClock(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	cfg, err := Config{Model: "m", clock: clk}.withDefaults()
	require.NoError(t, err)
	b := &stallBackend{clk: clk, stall: 50 * time.Millisecond}
	e := newEngine(&cfg, b)
	start := clk.Now()
	e.virt, e.wallNext = start.UnixNano(), start
	e.waiting = []*request{newRequest(1, 10, 20, "length", 0, start)}
	for len(e.waiting)+len(e.running) > 0 {
		require.NoError(t, e.step(context.Background()))
	}
	wall := clk.Now().Sub(start)
	traced := time.Duration(e.virt - start.UnixNano())
	require.InEpsilon(t, float64(wall), float64(traced), 0.01, "wall %v, trace %v", wall, traced)
}

// stallBackend prices every step at 1 ms, but every 5th step the machine
// stalls (the wall clock jumps) while it runs.
type stallBackend struct {
	recBackend
	clk   *fakeClock
	stall time.Duration
	n     int
}

func (b *stallBackend) Run(s synth.Step) units.Duration {
	b.n++
	if b.n%5 == 0 {
		b.clk.Advance(b.stall)
	}
	return units.FromTime(time.Millisecond)
}
