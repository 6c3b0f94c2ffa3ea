package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/sim"
)

// awaitIdleClosed blocks until the server has closed every idle
// connection of c's transport (a read on each returns at the close).
func awaitIdleClosed(t *testing.T, c *client) {
	t.Helper()
	c.stream.mu.Lock()
	idle := append([]*streamConn(nil), c.stream.idle...)
	c.stream.mu.Unlock()
	require.NotEmpty(t, idle, "a kept-alive connection")
	for _, sc := range idle {
		require.NoError(t, sc.nc.SetReadDeadline(time.Now().Add(30*time.Second)))
		_, err := sc.br.Peek(1)
		require.ErrorIs(t, err, io.EOF, "the server closed the idle connection")
		require.NoError(t, sc.nc.SetReadDeadline(time.Time{}))
	}
}

// The simulated engine closes a connection idle for its keep-alive time,
// as ATOM's server does after 5 s (shortened here): the next request goes
// past the dead connection, is sent on a fresh one, succeeds, and says it
// was resent.
func TestIdleCloseIsNotAFailure(t *testing.T) {
	t.Parallel()
	url, _ := startSim(t, sim.Config{TimeScale: 50, KeepAlive: 200 * time.Millisecond})
	c := newClient(url, simModel, 4)
	req := request{Prompt: "a b c", PromptLen: 3, MaxTokens: 4}
	o := c.Do(context.Background(), req)
	require.True(t, o.OK(), o.Error)
	require.Zero(t, o.Resent)

	awaitIdleClosed(t, c)
	o = c.Do(context.Background(), req)
	require.True(t, o.OK(), o.Error)
	require.Equal(t, 1, o.Resent, "one dead connection passed")
	require.Equal(t, 4, o.OutputTokens)

	m := aggregate([]output{o}, 1, time.Second, []float64{50}, SLO{})
	require.Equal(t, 1, m.Resent)
	require.Zero(t, m.Failed)
}

// scriptServer serves HTTP/1.1 by hand so that a test decides, request by
// request, what reaches the client: a full stream, or nothing (the
// connection closed after the request was read), or a status line only.
type scriptServer struct {
	ln       net.Listener
	requests atomic.Int32 // requests read whole
	// act says what to do with request n (from 1): "ok", "close" (read it,
	// close without a byte), "cut" (a status line, then close).
	act func(n int32) string
}

func startScript(t *testing.T, act func(n int32) string) *scriptServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &scriptServer{ln: ln, act: act}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(nc)
		}
	}()
	return s
}

func (s *scriptServer) serve(nc net.Conn) {
	defer nc.Close()
	br := bufio.NewReader(nc)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		n := s.requests.Add(1)
		switch s.act(n) {
		case "close":
			return
		case "cut":
			io.WriteString(nc, "HTTP/1.1 200 OK\r\n")
			return
		}
		body := atomFrames(2, 3)
		fmt.Fprintf(nc, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
}

// A request that reached the server is never sent again: on a fresh
// connection an end without a response is a failure, and so is a response
// cut after it began on a kept-alive one.
func TestReachedServerIsAFailure(t *testing.T) {
	t.Parallel()
	req := request{Prompt: "a", PromptLen: 1, MaxTokens: 2}
	t.Run("fresh connection closed unanswered", func(t *testing.T) {
		t.Parallel()
		s := startScript(t, func(int32) string { return "close" })
		c := newClient("http://"+s.ln.Addr().String(), "m", 1)
		o := c.Do(context.Background(), req)
		require.Equal(t, failConnection, o.Failure, o.Error)
		require.Equal(t, int32(1), s.requests.Load(), "not sent again")
		require.Zero(t, o.Resent)
	})
	t.Run("kept-alive connection cut after the status line", func(t *testing.T) {
		t.Parallel()
		s := startScript(t, func(n int32) string {
			if n == 2 {
				return "cut"
			}
			return "ok"
		})
		c := newClient("http://"+s.ln.Addr().String(), "m", 1)
		o := c.Do(context.Background(), req)
		require.True(t, o.OK(), o.Error)
		o = c.Do(context.Background(), req)
		require.False(t, o.OK(), "a response had begun: the request reached the server")
		require.Equal(t, int32(2), s.requests.Load(), "not sent again")
		require.Zero(t, o.Resent)
	})
}
