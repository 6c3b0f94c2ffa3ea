package bench

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// The streaming transport serves plain http:// alone; https, proxies and
// URLs it cannot take go through net/http.
func TestStreamTransportScope(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url  string
		ok   bool
		addr string
	}{
		{"http://127.0.0.1:8000", true, "127.0.0.1:8000"},
		{"http://localhost", true, "localhost:80"},
		{"http://[::1]:9", true, "[::1]:9"},
		{"http://host:1/api", true, "host:1"},
		{"https://host:1", false, ""},
		{"http://user:pw@host:1", false, ""},
		{"http://host:1/?q=1", false, ""},
		{"host:1", false, ""},
	} {
		st := newStreamTransport(tc.url, 4, nil)
		require.Equal(t, tc.ok, st != nil, tc.url)
		if st != nil {
			require.Equal(t, tc.addr, st.addr, tc.url)
		}
	}
	proxy := func(*http.Request) (*url.URL, error) { return url.Parse("http://proxy:3128") }
	require.Nil(t, newStreamTransport("http://example.com:8000", 4, proxy), "a proxy applies")
}

// Streams reuse their connections; a connection the server closed while
// idle is replaced without failing the request; a base path is kept.
func TestStreamTransportKeepAlive(t *testing.T) {
	t.Parallel()
	var conns atomic.Int32
	var paths atomic.Value
	var together atomic.Pointer[sync.WaitGroup] // requests that answer only once all have come
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths.Store(r.URL.Path)
		io.Copy(io.Discard, r.Body)
		if wg := together.Load(); wg != nil {
			wg.Done()
			wg.Wait()
		}
		streamHandler(atomFrames(3, 5))(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := newClient(srv.URL+"/api/", "m", 4)
	require.NotNil(t, c.stream)
	for i := range 5 {
		o := c.Do(context.Background(), request{Prompt: "hi", PromptLen: 1, MaxTokens: 3})
		require.True(t, o.OK(), "request %d: %s", i, o.Error)
		require.Equal(t, 3, o.TokenEvents)
	}
	require.Equal(t, int32(1), conns.Load(), "one connection, kept alive")
	require.Equal(t, "/api/v1/completions", paths.Load())

	// The server closes its idle connections: the next request dials anew.
	srv.CloseClientConnections()
	o := c.Do(context.Background(), request{Prompt: "hi", PromptLen: 1, MaxTokens: 3})
	require.True(t, o.OK(), o.Error)
	require.Equal(t, int32(2), conns.Load())

	// Several idle connections, all closed by the server (a restart): the
	// next request goes past every one of them. The server answers the
	// three only once all three have come, so they hold three connections
	// at once however the machine schedules them (on a loaded machine one
	// could end before the next was sent, and reuse its connection).
	var wg sync.WaitGroup
	wg.Add(3)
	together.Store(&wg)
	outs, _, _ := runLoad(context.Background(), c, fromSlice([]request{
		{Prompt: "a", PromptLen: 1, MaxTokens: 3}, {Prompt: "b", PromptLen: 1, MaxTokens: 3}, {Prompt: "c", PromptLen: 1, MaxTokens: 3},
	}), load{MaxConcurrency: 3})
	together.Store(nil)
	for _, o := range outs {
		require.True(t, o.OK(), o.Error)
	}
	require.GreaterOrEqual(t, len(c.stream.idle), 2, "idle connections kept")
	srv.CloseClientConnections()
	o = c.Do(context.Background(), request{Prompt: "hi", PromptLen: 1, MaxTokens: 3})
	require.True(t, o.OK(), o.Error)
}

// Bodies of a Content-Length, or that end with the connection (HTTP/1.0),
// are read as well as chunked ones; 1xx responses are passed over.
func TestStreamTransportBodies(t *testing.T) {
	t.Parallel()
	frames := atomFrames(2, 4)
	for _, tc := range []struct {
		name, response string
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " + strconv.Itoa(len(frames)) + "\r\n\r\n" + frames},
		{"until close", "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + frames},
		{"chunked with extension and trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
			chunked(frames[:40], "ext=1") + chunked(frames[40:], "") + "0\r\nX-Trailer: 1\r\n\r\n"},
		{"continue first", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + frames},
		{"header longer than the buffer", "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("v", 3*streamBuf) + "\r\nContent-Length: " + strconv.Itoa(len(frames)) + "\r\n\r\n" + frames},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := rawServer(t, tc.response)
			c := newClient(url, "m", 4)
			require.NotNil(t, c.stream)
			o := c.Do(context.Background(), request{Prompt: "hi", PromptLen: 1, MaxTokens: 2})
			require.True(t, o.OK(), o.Error)
			require.Equal(t, 2, o.TokenEvents)
			require.Equal(t, 4, o.PromptTokens)
		})
	}
}

func chunked(data, ext string) string {
	size := strconv.FormatInt(int64(len(data)), 16)
	if ext != "" {
		size += ";" + ext
	}
	return size + "\r\n" + data + "\r\n"
}

// rawServer answers every connection's request with response, then
// closes it.
func rawServer(t *testing.T, response string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(conn, response)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// The chunked body reader gives what net/http's gives, and fails where it
// fails, on any input.
func FuzzStreamBody(f *testing.F) {
	f.Add([]byte("5\r\nhello\r\n0\r\n\r\n"))
	f.Add([]byte("3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n"))
	f.Add([]byte("5\r\nhel"))
	f.Add([]byte("zz\r\n"))
	f.Add([]byte("5\r\nhelloXX0\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &streamBody{chunked: true, length: -1, br: bufio.NewReaderSize(bytes.NewReader(data), 8192)}
		got, err := io.ReadAll(r)
		want, wantErr := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(data)))
		if err == nil {
			// What this reader takes, net/http's takes too, with the same
			// bytes (net/http reads no trailer: that is the server's part).
			require.NoError(t, wantErr, "data %q", data)
			require.Equal(t, want, got)
		} else if wantErr == nil {
			// net/http stops at the last chunk: a bad trailer is ours to reject.
			require.Equal(t, want, got)
		}
	})
}
