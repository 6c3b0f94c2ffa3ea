package sim

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/tracing"
)

// gateClock is a fakeClock whose Sleep of exactly `gate` blocks until the
// test releases it, announcing the wait first: the export delay can then be
// observed without timing.
type gateClock struct {
	*fakeClock
	gate     time.Duration
	sleeping chan struct{}
	release  chan struct{}
}

func (c *gateClock) Sleep(ctx context.Context, d time.Duration) error {
	if d != c.gate {
		return c.fakeClock.Sleep(ctx, d)
	}
	c.sleeping <- struct{}{}
	select {
	case <-c.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runRequests sends n concurrent non-streamed requests of osl tokens.
func runRequests(t *testing.T, url string, n, osl int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(url+"/v1/completions", "application/json",
				strings.NewReader(`{"prompt":"a b c d","ignore_eos":true,"max_tokens":`+strconv.Itoa(osl)+`}`))
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
}

// profiledTrace profiles n requests of osl tokens and loads the trace written.
func profiledTrace(t *testing.T, cfg Config, n, osl int) (*tracing.Trace, string) {
	t.Helper()
	dir := t.TempDir()
	cfg.ProfilerDir, cfg.Layers, cfg.PythonPerStep = dir, 2, -1
	ts := start(t, cfg)
	code, _ := post(t, ts.URL+"/start_profile", nil)
	require.Equal(t, http.StatusOK, code)
	runRequests(t, ts.URL, n, osl)
	code, body := post(t, ts.URL+"/stop_profile", nil)
	require.Equal(t, http.StatusOK, code, string(body))
	files, _ := filepath.Glob(filepath.Join(dir, "rank_0", "*.pt.trace.json.gz"))
	if len(files) == 0 {
		return nil, dir
	}
	require.Len(t, files, 1)
	tr, err := tracing.Load(context.Background(), files[0], tracing.Options{})
	require.NoError(t, err)
	return tr, dir
}

func TestGPUEventWindow(t *testing.T) {
	t.Parallel()
	// One request, so the schedule (and the window) cannot depend on how
	// concurrent requests happen to arrive under the fake clock: with eight,
	// a loaded machine could serialise them in one run and batch them in the
	// next, and a window measured on one would not fit the other.
	// Baseline: the whole window has kernels and no warning.
	tr, _ := profiledTrace(t, Config{}, 1, 100)
	require.Empty(t, tr.Summarize().Warnings)
	window := time.Duration(tr.Coverage.Window)
	require.Greater(t, window, 50*time.Millisecond, "the trace spans ~100 decode steps")

	keep := window / 4
	tr, _ = profiledTrace(t, Config{GPUEventWindow: keep}, 1, 100)
	sum := tr.Summarize()
	require.Len(t, sum.Warnings, 1, "%v", sum.Warnings)
	require.Contains(t, sum.Warnings[0].Message, "GPU kernels cover")
	require.Contains(t, sum.Warnings[0].Message, "decode steps have no kernels")
	require.Positive(t, tr.Coverage.DecodeWithout)
	// The drop cuts at a step boundary: the kernels left span the window
	// asked for, give or take a step (a few ms here).
	require.InDelta(t, keep.Seconds(), time.Duration(tr.Coverage.GPUSpan).Seconds(), 0.01)
	require.Less(t, tr.Coverage.GPUSpan, tr.Coverage.Window)
}

// TestEnforceEager: eager decode steps, labelled prefill[...] as older ATOM
// releases do, still read back as the decode steps the engine ran.
// TestEnforceEager: without graphs every decode step is eager, labelled
// eager_decode[...] by current releases and prefill[...] by older ones.
func TestEnforceEager(t *testing.T) {
	t.Parallel()
	for rel, prefix := range map[Release]string{ReleaseCurrent: "eager_decode[", ReleaseLegacy: "prefill["} {
		t.Run(string(rel), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ts := start(t, Config{ProfilerDir: dir, Layers: 2, PythonPerStep: -1, EnforceEager: true, Release: rel})
			code, _ := post(t, ts.URL+"/start_profile", nil)
			require.Equal(t, http.StatusOK, code)
			runRequests(t, ts.URL, 4, 20)
			code, _ = post(t, ts.URL+"/stop_profile", nil)
			require.Equal(t, http.StatusOK, code)
			c := ts.stepCounts()
			files, _ := filepath.Glob(filepath.Join(dir, "rank_0", "*.pt.trace.json.gz"))
			require.Len(t, files, 1)
			tr, err := tracing.Load(context.Background(), files[0], tracing.Options{})
			require.NoError(t, err)
			require.Empty(t, tr.Graphs, "no graph replays when eager")
			require.Equal(t, map[string]int{"prefill": int(c.ProfiledPrefill), "decode": int(c.ProfiledDecode)}, tr.Summarize().Steps)
			for _, st := range tr.Steps {
				if st.Kind == tracing.StepDecode {
					require.True(t, st.Eager, "step %q", st.Label)
					require.True(t, strings.HasPrefix(st.Label, prefix), "step %q", st.Label)
				}
			}
		})
	}
}

func TestNoTraceOnStop(t *testing.T) {
	t.Parallel()
	tr, dir := profiledTrace(t, Config{NoTraceOnStop: true}, 2, 10)
	require.Nil(t, tr)
	var files []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	require.Empty(t, files, "no trace, not even a .json")
}

func TestExportDelay(t *testing.T) {
	t.Parallel()
	for _, async := range []bool{false, true} {
		name := "stop waits for the export"
		if async {
			name = "async stop (older ATOM)"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := &gateClock{fakeClock: newFakeClock(), gate: time.Hour,
				sleeping: make(chan struct{}), release: make(chan struct{})}
			dir := t.TempDir()
			ts := start(t, Config{clock: clock, ProfilerDir: dir, ExportDelay: time.Hour, AsyncStop: async, Layers: 2, PythonPerStep: -1})
			code, _ := post(t, ts.URL+"/start_profile", nil)
			require.Equal(t, http.StatusOK, code)
			runRequests(t, ts.URL, 2, 5)
			replied := make(chan int, 1)
			go func() {
				resp, err := http.Post(ts.URL+"/stop_profile", "application/json", nil)
				if err != nil {
					replied <- 0
					return
				}
				resp.Body.Close()
				replied <- resp.StatusCode
			}()
			if async {
				require.Equal(t, http.StatusOK, <-replied, "the reply comes before the export")
			}
			<-clock.sleeping // the export holds the .json
			rank := filepath.Join(dir, "rank_0")
			jsons, _ := filepath.Glob(filepath.Join(rank, "*.pt.trace.json"))
			gzs, _ := filepath.Glob(filepath.Join(rank, "*.pt.trace.json.gz"))
			require.Len(t, jsons, 1, "the .json is there during the export")
			require.Empty(t, gzs, "the .gz is not there yet")
			if !async {
				select {
				case <-replied:
					t.Fatal("the reply came before the export finished")
				default:
				}
			}
			close(clock.release)
			if !async {
				require.Equal(t, http.StatusOK, <-replied)
			} else {
				// The engine finishes the export before it serves the next command.
				code, body := post(t, ts.URL+"/start_profile", nil)
				require.Equal(t, http.StatusOK, code, string(body))
			}
			jsons, _ = filepath.Glob(filepath.Join(rank, "*.pt.trace.json"))
			gzs, _ = filepath.Glob(filepath.Join(rank, "*.pt.trace.json.gz"))
			require.Empty(t, jsons, "the .json is removed")
			require.Len(t, gzs, 1)
		})
	}
}

// TestStreamHeadersBeforeFirstToken: the 200 and the event-stream headers
// go out when the request is accepted, before its first step completes.
func TestStreamHeadersBeforeFirstToken(t *testing.T) {
	t.Parallel()
	// recBackend's one-sequence prefill: 1 ms + 10 µs, plus the host gap.
	first := (&recBackend{}).HostGap().Time() + time.Millisecond + 10*time.Microsecond
	clock := &gateClock{fakeClock: newFakeClock(), gate: first, sleeping: make(chan struct{}, 1), release: make(chan struct{})}
	ts := start(t, Config{clock: clock, backend: &recBackend{}})
	// Without the early headers this Post would wait for the gated step: the
	// timeout turns that into a failure instead of a hang.
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x","max_tokens":2,"stream":true,"ignore_eos":true}`))
	require.NoError(t, err, "headers must arrive while the first step runs")
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	<-clock.sleeping // the engine is inside the first step: no token yet
	close(clock.release)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, 5, strings.Count(string(body), "data: "), "2 tokens, stop, usage, [DONE]")
}
