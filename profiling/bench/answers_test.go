package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/sim"
)

// TestClientWrongAnswers: a server that answers, but not with a stream,
// gets an error that says what came instead; over both transports.
func TestClientWrongAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		handler  http.HandlerFunc
		wantKind failureKind
		wantMsg  string
	}{
		{"JSON instead of a stream", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"cmpl-1","choices":[{"text":"hello"}]}`)
		}, failStream, `/v1/completions: HTTP 200 but not an event stream: Content-Type application/json, it began "{\"id\":\"cmpl-1\",\"choices\":[{\"text\":\"hello\"}]}" (event 0: stream ended in the middle of an event)`},
		{"an HTML page", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, "<html><body>Sign in</body></html>")
		}, failStream, `HTTP 200 but not an event stream: Content-Type text/html; charset=utf-8, it began "<html><body>Sign in</body></html>"`},
		{"an empty 200", func(w http.ResponseWriter, r *http.Request) {}, failStream, "HTTP 200 but not an event stream: Content-Type none, its body was empty"},
		{"an event stream without events", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `{"id":"cmpl-1"}`+"\n\n")
		}, failStream, `an event stream without any event: it began "{\"id\":\"cmpl-1\"}\n\n"`},
		{"a redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://gateway.example/v1/completions", http.StatusMovedPermanently)
		}, failHTTP5xx, "/v1/completions: HTTP 301 redirect to https://gateway.example/v1/completions: the client does not follow redirects (a POST would be resent as a GET); pass the server's own URL as --url"},
	} {
		for _, transport := range []string{"own", "net/http"} {
			t.Run(tc.name+"/"+transport, func(t *testing.T) {
				t.Parallel()
				srv := httptest.NewServer(tc.handler)
				defer srv.Close()
				c := newClient(srv.URL, "m", 4)
				if transport == "net/http" {
					c.stream = nil
				}
				o := c.Do(context.Background(), request{Prompt: "hi", PromptLen: 1, MaxTokens: 4})
				require.Equal(t, tc.wantKind, o.Failure, o.Error)
				require.Contains(t, o.Error, tc.wantMsg)
			})
		}
	}
}

func TestFetchModelRedirect(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/login", http.StatusFound)
	}))
	defer srv.Close()
	_, err := fetchModel(context.Background(), newClient(srv.URL, "", 1).HTTP, srv.URL)
	require.ErrorContains(t, err, "GET "+srv.URL+"/v1/models: HTTP 302 redirect to /login: the client does not follow redirects")
}

// TestProfilingLeftOn: a server a killed run left profiling would take
// /start_profile silently (ATOM, vLLM) and trace from long before the
// level: the sweep stops it before the first level, waits out that
// export, and the level's trace is its own.
func TestProfilingLeftOn(t *testing.T) {
	t.Parallel()
	traceDir := t.TempDir()
	url, _ := startSim(t, sim.Config{ProfilerDir: traceDir, TimeScale: 50})
	resp, err := http.Post(url+"/start_profile", "application/json", nil) // the killed run's
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var log strings.Builder
	res, err := Sweep(context.Background(), SweepConfig{
		URL: url, Model: simModel, Shaper: &shaper{PerWord: 1}, ISL: 8, OSL: 4, Concurrencies: []int{1},
		Profile: true, TraceDir: traceDir, ExportTimeout: 10 * time.Second, OutDir: t.TempDir(), Log: &log,
	})
	require.NoError(t, err)
	require.Contains(t, log.String(), "warning: the server was already profiling")
	left, err := filepath.Glob(filepath.Join(traceDir, "rank_0", "*.pt.trace.json.gz"))
	require.NoError(t, err)
	require.Len(t, left, 2, "the left profiler's export and the level's")
	require.Len(t, res.Levels[0].TraceFiles, 1)
	require.Equal(t, slices.Max(left), res.Levels[0].TraceFiles[0], "the level's trace is the newer one")
}

// TestProfilingOnRefused: a server that refuses /start_profile because
// it profiles already (SGLang, the simulator) gets an error saying so and
// how to stop it.
func TestProfilingOnRefused(t *testing.T) {
	t.Parallel()
	const base = "http://127.0.0.1:1"
	err := profilingOnError(base, http.StatusInternalServerError, []byte("Profiling is already in progress. Call /stop_profile first."))
	require.ErrorContains(t, err, "POST "+base+"/start_profile: the server is already profiling (HTTP 500: ")
	require.ErrorContains(t, err, "an earlier run was probably killed before its /stop_profile; stop it with `curl -X POST "+base+"/stop_profile` and run again")
	require.NoError(t, profilingOnError(base, http.StatusNotFound, []byte("Not Found")))
}

// TestStopProfileServerTimeout: ATOM answers /stop_profile with HTTP 500
// once its own wait for the export (ATOM_PROFILER_TIMEOUT) runs out, while
// the export goes on: the level warns, names the setting, waits for the
// files and stays ok.
func TestStopProfileServerTimeout(t *testing.T) {
	t.Parallel()
	traceDir := t.TempDir()
	url, _ := startSim(t, sim.Config{ProfilerDir: traceDir, TimeScale: 50, ProfilerTimeout: 100 * time.Millisecond, ExportDelay: 800 * time.Millisecond})
	var log strings.Builder
	res, err := Sweep(context.Background(), SweepConfig{
		URL: url, Model: simModel, Shaper: &shaper{PerWord: 1}, ISL: 8, OSL: 4, Concurrencies: []int{2},
		Profile: true, TraceDir: traceDir, ExportTimeout: 20 * time.Second, OutDir: t.TempDir(), Log: &log,
	})
	require.NoError(t, err)
	require.Equal(t, statusOK, res.Levels[0].Status)
	require.Len(t, res.Levels[0].TraceFiles, 1)
	require.Contains(t, log.String(), "HTTP 500 after the server's own export deadline")
	require.Contains(t, log.String(), "raise ATOM_PROFILER_TIMEOUT (seconds) to --export-timeout")
}
