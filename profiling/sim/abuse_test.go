package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/diag"
)

// TestProfilerBufferBounded: with a small profiler buffer the oldest steps
// lose their kernels, the trace says so through its coverage warning, and
// the export leaves only the .json.gz (it was streamed, no .json).
func TestProfilerBufferBounded(t *testing.T) {
	t.Parallel()
	tr, dir := profiledTrace(t, Config{ProfilerBufferMB: 1}, 8, 400)
	require.NotNil(t, tr)
	without := 0
	for _, st := range tr.Steps {
		if len(st.Kernels) == 0 {
			without++
		}
	}
	require.Greater(t, without, 0, "a 1 MB buffer holds %d kernel records, fewer than the profile ran", (1<<20)/256)
	require.Less(t, without, len(tr.Steps), "the latest steps keep their kernels")
	var codes []diag.Code
	for _, w := range tr.Warnings {
		codes = append(codes, w.Code)
	}
	require.Contains(t, codes, diag.Coverage)
	entries, err := os.ReadDir(filepath.Join(dir, "rank_0"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the trace, no temporary")
	require.True(t, strings.HasSuffix(entries[0].Name(), ".pt.trace.json.gz"), entries[0].Name())
}

func TestMaxModelLen(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{MaxModelLen: 100, backend: &recBackend{}})
	code, body := post(t, ts.URL+"/v1/completions", map[string]any{"prompt": strings.Repeat("w ", 100)})
	require.Equal(t, http.StatusBadRequest, code, string(body))
	msg, typ, ecode := errorBody(t, body)
	require.Equal(t, "This model's maximum context length is 100 tokens. However, your prompt has 100 tokens. Please reduce the length of the prompt.", msg)
	require.Equal(t, "BadRequestError", typ)
	require.Equal(t, 400, ecode)

	code, body = post(t, ts.URL+"/v1/completions", map[string]any{"prompt": strings.Repeat("w ", 97), "max_tokens": 10, "ignore_eos": true})
	require.Equal(t, http.StatusOK, code, string(body))
	var r struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(body, &r))
	require.Equal(t, 3, r.Usage.CompletionTokens, "output stops at the context length")
	require.Equal(t, "length", r.Choices[0].FinishReason)
}

// TestChunkedPrefill: a prompt longer than the step budget is prefilled over
// several steps, none above the budget, and a short request behind it is
// served once the long one's last chunk has run.
func TestChunkedPrefill(t *testing.T) {
	t.Parallel()
	b := &recBackend{}
	ts := start(t, Config{MaxNumBatchedTokens: 100, backend: b})
	// Sent one after the other so that arrival order is known; the long
	// one is not streamed and so is still being prefilled when the short
	// one arrives only if the engine is slower than the client: the step
	// record below does not depend on that.
	code, body := post(t, ts.URL+"/v1/completions", map[string]any{"prompt": strings.Repeat("w ", 1050), "max_tokens": 2, "ignore_eos": true})
	require.Equal(t, http.StatusOK, code, string(body))
	code, body = post(t, ts.URL+"/v1/completions", map[string]any{"prompt": "a b", "max_tokens": 2, "ignore_eos": true})
	require.Equal(t, http.StatusOK, code, string(body))
	var prefillTokens []int
	for _, s := range b.Steps() {
		require.LessOrEqual(t, s.Tokens, 100, "no step exceeds the budget")
		if s.Kind == "prefill" {
			prefillTokens = append(prefillTokens, s.Tokens)
		}
	}
	require.Equal(t, []int{100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 50, 2}, prefillTokens)
}

// TestDisconnectDuringChunkedPrefill: a client that goes away while its long
// prompt is being prefilled frees the engine at once: the remaining chunks
// never run.
func TestDisconnectDuringChunkedPrefill(t *testing.T) {
	t.Parallel()
	const tokens = 200_000
	ts := start(t, Config{MaxNumBatchedTokens: 1, MaxModelLen: 1 << 20, backend: &recBackend{}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions", strings.NewReader(`{"prompt":"`+strings.Repeat("w ", tokens)+`","max_tokens":1}`))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	require.Eventually(t, func() bool { return ts.stepCounts().Prefill > 10 }, 10*time.Second, time.Millisecond)
	cancel()
	<-done
	last := int64(-1)
	require.Eventually(t, func() bool {
		n := ts.stepCounts().Prefill
		idle := n == last
		last = n
		return idle
	}, 10*time.Second, 50*time.Millisecond)
	require.Less(t, last, int64(tokens), "the prefill stopped when the client left")
}

// TestHTTPAbuse: malformed, oversized and foreign requests get ATOM's error
// shape with a status that says what is wrong.
func TestHTTPAbuse(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{MaxModelLen: 1000, backend: &recBackend{}, ProfilerDir: t.TempDir()})
	host := strings.TrimPrefix(ts.URL, "http://")
	big := `{"prompt":"` + strings.Repeat("w ", 60_000) + `"}`
	tests := []struct {
		name, path, body string
		header           map[string]string
		chunked          bool
		want             int
		wantMsg          string
	}{
		{"null prompt", "/v1/completions", `{"prompt":null}`, nil, false, 400, "string"},
		{"trailing garbage", "/v1/completions", `{"prompt":"x"} trailing`, nil, false, 400, "data after its JSON object, at byte 15"},
		{"two objects", "/v1/completions", `{"prompt":"x"}{"prompt":"y"}`, nil, false, 400, "data after its JSON object"},
		{"text/plain", "/v1/completions", `{"prompt":"x"}`, map[string]string{"Content-Type": "text/plain"}, false, 415, "application/json"},
		{"form", "/v1/completions", `{"prompt":"x"}`, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, false, 415, "curl: -H"},
		{"no content type", "/v1/completions", `{"prompt":"x"}`, map[string]string{"Content-Type": ""}, false, 415, "application/json"},
		{"foreign origin", "/v1/completions", `{"prompt":"x"}`, map[string]string{"Origin": "http://evil.example"}, false, 403, "Origin"},
		{"null origin", "/start_profile", "", map[string]string{"Origin": "null"}, false, 403, "Origin"},
		{"rebinding host", "/start_profile", "", map[string]string{"Host": "evil.example:8000"}, false, 403, "Host"},
		{"too large", "/v1/completions", big, nil, false, 413, "max_model_len 1000"},
		{"too large chunked", "/v1/completions", big, nil, true, 413, "max_model_len 1000"},
		{"over max-model-len", "/v1/completions", `{"prompt":"` + strings.Repeat("w ", 1000) + `"}`, nil, false, 400, "maximum context length is 1000"},
		{"stop without start", "/stop_profile", "", map[string]string{"Content-Type": ""}, false, 400, "not running"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var rd io.Reader = strings.NewReader(tc.body)
			if tc.chunked {
				rd = io.MultiReader(rd) // unknown length: sent chunked
			}
			req, err := http.NewRequest("POST", ts.URL+tc.path, rd)
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			for k, v := range tc.header {
				if k == "Host" {
					req.Host = v
				} else if v == "" {
					req.Header.Del(k)
				} else {
					req.Header.Set(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tc.want, resp.StatusCode, string(body))
			msg, _, code := errorBody(t, body)
			require.Contains(t, msg, tc.wantMsg)
			require.Equal(t, tc.want, code)
		})
	}
	// Same origin, named by address or localhost, is served.
	for _, h := range []map[string]string{{"Origin": "http://" + host}, {"Host": "localhost"}} {
		req, err := http.NewRequest("POST", ts.URL+"/v1/completions", strings.NewReader(`{"prompt":"x","max_tokens":1}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
		if o, ok := h["Origin"]; ok {
			req.Header.Set("Origin", o)
		} else {
			req.Host = h["Host"]
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%v", h)
	}
	require.Zero(t, ts.stepCounts().ProfiledPrefill+ts.stepCounts().ProfiledDecode)
	code, _ := post(t, ts.URL+"/stop_profile", nil)
	require.Equal(t, http.StatusBadRequest, code, "the refused /start_profile did not start the profiler")
}

// TestConnectionTimeouts: a client that sends half a header, half a body,
// or stops reading a stream is cut off and its request freed.
func TestConnectionTimeouts(t *testing.T) {
	t.Parallel()
	tmo := timeouts{header: 200 * time.Millisecond, read: 400 * time.Millisecond, write: 200 * time.Millisecond}
	// Real time (1 ms steps) and a long model name (4 kB frames): the
	// socket buffers fill within a second, long before the 100 s stream ends.
	ts := start(t, Config{Model: strings.Repeat("m", 4000), backend: &recBackend{}, timeouts: tmo, clock: realClock{}})
	addr := strings.TrimPrefix(ts.URL, "http://")
	for _, partial := range []string{
		"POST /v1/completions HTTP/1.1\r\nHost: x\r\n",
		"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"prompt\":",
	} {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		_, err = io.WriteString(c, partial)
		require.NoError(t, err)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err = io.ReadAll(c)
		require.NoError(t, err, "the server closed the connection (a deadline of ours would be an error)")
		c.Close()
	}

	// A stream whose reader stopped: the server's writes stall, the
	// request is cut and the engine goes idle.
	c, err := net.DialTCP("tcp", nil, mustTCPAddr(t, addr))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetReadBuffer(4096))
	body := `{"prompt":"x","max_tokens":100000,"ignore_eos":true,"stream":true}`
	_, err = fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	require.NoError(t, err)
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "200")
	last := int64(-1)
	require.Eventually(t, func() bool {
		cnt := ts.stepCounts()
		n := cnt.Prefill + cnt.Decode
		idle := n == last
		last = n
		return idle
	}, 20*time.Second, 300*time.Millisecond)
	require.Less(t, last, int64(100000), "the stalled stream was cut before it finished")
}

func mustTCPAddr(t *testing.T, addr string) *net.TCPAddr {
	t.Helper()
	a, err := net.ResolveTCPAddr("tcp", addr)
	require.NoError(t, err)
	return a
}
