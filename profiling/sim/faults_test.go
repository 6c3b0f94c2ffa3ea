package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReadiness(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		cfg        Config
		readyLater bool // ready after the clock moves past the delay
	}{
		{"ready-delay", Config{ReadyDelay: time.Hour}, true},
		{"never-ready", Config{NeverReady: true}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock()
			tc.cfg.clock, tc.cfg.backend = clock, &recBackend{}
			ts := start(t, tc.cfg)
			code, body := get(t, ts.URL+"/health")
			require.Equal(t, http.StatusServiceUnavailable, code)
			_, _, ecode := errorBody(t, body)
			require.Equal(t, 503, ecode)
			code, _ = get(t, ts.URL+"/v1/models")
			require.Equal(t, http.StatusServiceUnavailable, code)
			code, _ = post(t, ts.URL+"/v1/completions", map[string]any{"prompt": "x"})
			require.Equal(t, http.StatusServiceUnavailable, code)

			clock.Advance(time.Hour + time.Second)
			code, _ = get(t, ts.URL+"/health")
			if tc.readyLater {
				require.Equal(t, http.StatusOK, code)
			} else {
				require.Equal(t, http.StatusServiceUnavailable, code)
			}
		})
	}
}

func TestStreamErrorFrame(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{backend: &recBackend{}, StreamErrorRate: 1})
	resp, body, err := streamBody(t, ts.URL+"/v1/completions", map[string]any{
		"prompt": "x", "max_tokens": 10, "ignore_eos": true, "stream": true})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "an in-stream error keeps HTTP 200")
	frames := sseFrames(t, body)
	require.Len(t, frames, 7, "5 tokens, the error, [DONE]: %q", frames)
	for _, f := range frames[:5] {
		require.Contains(t, f, `"finish_reason":null`)
	}
	var e struct {
		Error struct {
			Message string `json:"message"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(frames[5]), &e))
	require.Equal(t, 500, e.Error.Code)
	require.Contains(t, e.Error.Message, "after 5 tokens")
	require.Equal(t, "[DONE]", frames[6])

	// Non-streaming requests are not affected.
	code, _ := post(t, ts.URL+"/v1/completions", map[string]any{"prompt": "x", "max_tokens": 10})
	require.Equal(t, http.StatusOK, code)
}

func TestStreamErrorRate(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{backend: &recBackend{}, StreamErrorRate: 0.5})
	const n = 200
	failed := 0
	for range n {
		_, body, err := streamBody(t, ts.URL+"/v1/completions", map[string]any{
			"prompt": "x", "max_tokens": 2, "ignore_eos": true, "stream": true})
		require.NoError(t, err)
		if bytes.Contains(body, []byte(`data: {"error"`)) {
			failed++
		}
	}
	// Binomial(200, 0.5): 60..140 is more than 5 standard deviations wide.
	require.InDelta(t, n/2, failed, 40, "failed %d of %d", failed, n)
}

func TestCrashAfterRequests(t *testing.T) {
	t.Parallel()
	exits := make(chan int, 2)
	// Real clock: the long stream below must still be running at the crash.
	ts := start(t, Config{backend: &recBackend{}, CrashAfterRequests: 2, clock: realClock{},
		Exit: func(code int) { exits <- code }})

	resp, err := http.Post(ts.URL+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"long","max_tokens":100000,"ignore_eos":true,"stream":true}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	first, err := rd.ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(first, "data: {"), first)

	for range 2 {
		code, _ := post(t, ts.URL+"/v1/completions", map[string]any{"prompt": "x", "max_tokens": 1})
		require.Equal(t, http.StatusOK, code)
	}
	require.Equal(t, ExitCrash, <-exits)
	require.ErrorIs(t, <-ts.done, ErrCrashed)
	ts.done <- ErrCrashed // for the cleanup
	rest, err := io.ReadAll(rd)
	require.Error(t, err, "the open stream is cut, not finished")
	require.NotContains(t, string(rest), "[DONE]")
	_, err = http.Get(ts.URL + "/health")
	require.Error(t, err, "nothing listens after the crash")
}

func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{backend: &recBackend{}, clock: realClock{}})
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"x","max_tokens":100,"ignore_eos":true,"stream":true}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	_, err = rd.ReadString('\n')
	require.NoError(t, err)

	ts.stop() // SIGTERM
	rest, err := io.ReadAll(rd)
	require.NoError(t, err, "the in-flight stream finishes")
	require.True(t, strings.HasSuffix(string(rest), "data: [DONE]\n\n"))
	require.NoError(t, <-ts.done)
	ts.done <- nil
}

func TestClientDisconnectFreesTheBatch(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{backend: &recBackend{}})
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions",
		strings.NewReader(`{"prompt":"x","max_tokens":1000000000,"ignore_eos":true,"stream":true}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, err = bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	cancel()
	resp.Body.Close()
	// The engine drops the request and goes idle: its step count stops moving.
	last := int64(-1)
	require.Eventually(t, func() bool {
		c := ts.stepCounts()
		n := c.Prefill + c.Decode
		idle := n == last
		last = n
		return idle
	}, 10*time.Second, 50*time.Millisecond)
}

func TestProfileEndpoints(t *testing.T) {
	t.Parallel()
	t.Run("no directory", func(t *testing.T) {
		t.Parallel()
		ts := start(t, Config{backend: &recBackend{}})
		code, body := post(t, ts.URL+"/start_profile", nil)
		require.Equal(t, http.StatusInternalServerError, code)
		msg, _, _ := errorBody(t, body)
		require.Contains(t, msg, "--torch-profiler-dir")
	})
	t.Run("start stop", func(t *testing.T) {
		t.Parallel()
		b := &recBackend{}
		ts := start(t, Config{backend: b, ProfilerDir: t.TempDir()})
		code, body := post(t, ts.URL+"/stop_profile", nil)
		require.Equal(t, http.StatusBadRequest, code, "stop before start")
		msg, typ, ecode := errorBody(t, body)
		require.Contains(t, msg, "not running")
		require.Equal(t, "BadRequestError", typ)
		require.Equal(t, http.StatusBadRequest, ecode)

		code, body = post(t, ts.URL+"/start_profile", nil)
		require.Equal(t, http.StatusOK, code)
		require.JSONEq(t, `{"status":"success","message":"Profiling started"}`, string(body))
		code, _ = post(t, ts.URL+"/start_profile", nil)
		require.Equal(t, http.StatusInternalServerError, code, "start twice")

		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x y","max_tokens":6,"ignore_eos":true}`))
			}()
		}
		wg.Wait()
		code, body = post(t, ts.URL+"/stop_profile", nil)
		require.Equal(t, http.StatusOK, code)
		require.JSONEq(t, `{"status":"success","message":"Profiling stopped. Trace files generated.","traces":[{"trace_dir":"rank_0","elapsed":0}]}`, string(body))
		c := ts.stepCounts()
		b.mu.Lock()
		profiled := len(b.profiled)
		b.mu.Unlock()
		require.Equal(t, int64(profiled), c.ProfiledPrefill+c.ProfiledDecode, "every step that ran while profiling was recorded")
		require.Greater(t, profiled, 0)
	})
	t.Run("no-trace-on-stop", func(t *testing.T) {
		t.Parallel()
		b := &recBackend{}
		ts := start(t, Config{backend: b, ProfilerDir: t.TempDir(), NoTraceOnStop: true})
		code, _ := post(t, ts.URL+"/start_profile", nil)
		require.Equal(t, http.StatusOK, code)
		code, _ = post(t, ts.URL+"/stop_profile", nil)
		require.Equal(t, http.StatusOK, code, "the reply says success")
		require.Equal(t, []bool{false}, b.stops, "but the backend was told not to write")
	})
}

// TestCrashExactlyN: of many requests finishing in the same steps, exactly N
// complete (every frame up to [DONE]); the others are cut.
func TestCrashExactlyN(t *testing.T) {
	t.Parallel()
	exits := make(chan int, 1)
	ts := start(t, Config{backend: &recBackend{}, CrashAfterRequests: 3, Exit: func(code int) { exits <- code }})
	var wg sync.WaitGroup
	var mu sync.Mutex
	complete := 0
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var body []byte
			var err error
			if i%2 == 0 {
				_, body, err = streamBody(t, ts.URL+"/v1/completions", map[string]any{"prompt": "x", "max_tokens": 4, "ignore_eos": true, "stream": true})
				if err == nil && strings.HasSuffix(string(body), "data: [DONE]\n\n") {
					mu.Lock()
					complete++
					mu.Unlock()
				}
				return
			}
			resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x","max_tokens":4,"ignore_eos":true}`))
			if err != nil {
				return
			}
			defer resp.Body.Close()
			var r struct {
				Usage struct {
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			if json.NewDecoder(resp.Body).Decode(&r) == nil && r.Usage.CompletionTokens == 4 {
				mu.Lock()
				complete++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Equal(t, ExitCrash, <-exits)
	require.Equal(t, 3, complete)
}
