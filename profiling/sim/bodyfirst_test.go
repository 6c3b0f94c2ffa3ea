package sim

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestUnfinishedBodyStartsNothing: a /start_profile whose chunked body
// never ends is answered 400 once the read deadline passes, and the
// profiler was never started.
func TestUnfinishedBodyStartsNothing(t *testing.T) {
	t.Parallel()
	b := &recBackend{}
	ts := start(t, Config{backend: b, ProfilerDir: t.TempDir(), timeouts: timeouts{read: 300 * time.Millisecond}})
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /start_profile HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)), "a hang detector")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", body)
	require.Contains(t, string(body), "reading the request body: it did not end within 300ms")
	b.mu.Lock()
	require.False(t, b.profiling, "the profiler must not start on a body never finished")
	b.mu.Unlock()
	code, body := post(t, ts.URL+"/stop_profile", nil)
	require.Equal(t, http.StatusBadRequest, code, "%s", body)
	require.Contains(t, string(body), "the profiler is not running")

	// A body that ends but is not JSON is refused before acting too.
	code, body = post(t, ts.URL+"/start_profile", "{not json")
	require.Equal(t, http.StatusBadRequest, code, "%s", body)
	b.mu.Lock()
	require.False(t, b.profiling)
	b.mu.Unlock()
}

// gatedStop is a backend whose export waits until release is closed.
type gatedStop struct {
	recBackend
	stopped chan struct{} // closed once the recording stopped
	release chan struct{}
	once    sync.Once
}

func (b *gatedStop) StopProfile(at int64, write bool) func(context.Context) ([]string, error) {
	b.recBackend.StopProfile(at, write)
	b.once.Do(func() { close(b.stopped) })
	return func(context.Context) ([]string, error) {
		<-b.release
		return []string{"rank_0"}, nil
	}
}

// TestExportDoesNotStopStreams: while /stop_profile's export is being
// written the engine keeps stepping, so a completion sent meanwhile
// streams to its end; /stop_profile answers once the export is done.
func TestExportDoesNotStopStreams(t *testing.T) {
	t.Parallel()
	b := &gatedStop{stopped: make(chan struct{}), release: make(chan struct{})}
	ts := start(t, Config{backend: b, ProfilerDir: t.TempDir()})
	code, body := post(t, ts.URL+"/start_profile", nil)
	require.Equal(t, http.StatusOK, code, "%s", body)
	stop := make(chan int, 1)
	go func() {
		resp, err := http.Post(ts.URL+"/stop_profile", "application/json", nil)
		if err != nil {
			stop <- 0
			return
		}
		resp.Body.Close()
		stop <- resp.StatusCode
	}()
	select {
	case <-b.stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("the profiler was not stopped within 30 s")
	}
	hc := &http.Client{Timeout: 30 * time.Second} // a hang detector
	resp, err := hc.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"a b c","max_tokens":5,"ignore_eos":true,"stream":true}`))
	require.NoError(t, err, "a stream during the export")
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	frames := sseFrames(t, out)
	require.Equal(t, "[DONE]", frames[len(frames)-1])
	select {
	case code := <-stop:
		t.Fatalf("/stop_profile answered %d before its export was done", code)
	default:
	}
	close(b.release)
	require.Equal(t, http.StatusOK, <-stop)
}
