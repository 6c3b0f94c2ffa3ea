package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/diag"
)

// The misbehaving servers a client must not hang on.

// neverAnswers reads the request and never sends a response head.
func neverAnswers(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// answersThenHangs sends the head and one token, then nothing.
func answersThenHangs(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n")
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// neverEnds streams tokens for as long as the client listens.
func neverEnds(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if _, err := io.WriteString(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}
}

// trickles sends a stream one byte at a time, a byte every 10 ms, so no
// stall timeout of more than that ever fires.
func trickles(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.(http.Flusher).Flush()
	body := []byte(atomFrames(1000, 8))
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for _, b := range body {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
		if _, err := w.Write([]byte{b}); err != nil {
			return
		}
		w.(http.Flusher).Flush()
	}
}

// doneButOpen sends a whole stream, [DONE] included, and keeps the body
// open: the request is complete and must not wait for the body's end.
func doneButOpen(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, atomFrames(3, 4))
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// finishes fails the test when f has not returned within a minute: a hang
// detector (the bounds under test are a fraction of a second), not a
// timing assertion.
func finishes[T any](t *testing.T, f func() T) T {
	t.Helper()
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatal("hung: did not return within a minute")
		panic("unreachable")
	}
}

// The tests below that expect a request NOT to stall (or to stall only
// at a given point) run apart from the package's parallel tests, their
// subtests beside each other only: their misbehaving servers and the
// client share this process, and on a loaded machine the parallel sweeps'
// goroutines kept a server's writes or the client's reads waiting longer
// than the stall timeout (a false stall in 3 of 3 runs with 30 busy
// goroutines and -cpu 1). The bounds are what is tested; the scheduler's
// queue is not.

func TestClientStall(t *testing.T) { // not parallel: see above
	for _, tc := range []struct {
		name     string
		handler  http.HandlerFunc
		wantKind failureKind
		wantMsg  string
	}{
		{"never answers", neverAnswers, failStall, "no byte from the server for 200ms (--stall-timeout), waiting for the response to begin"},
		{"answers, then nothing", answersThenHangs, failStall, "no byte from the server for 200ms (--stall-timeout), waiting for event 2 of the stream"},
		{"[DONE], body kept open", doneButOpen, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			c := newClient(srv.URL, "m", 4)
			require.Equal(t, DefaultStallTimeout, c.Stall, "a client has a stall timeout by default")
			c.Stall = 200 * time.Millisecond
			o := finishes(t, func() output { return c.Do(context.Background(), request{Prompt: "hi", PromptLen: 1, MaxTokens: 5}) })
			require.Equal(t, tc.wantKind, o.Failure, o.Error)
			require.Contains(t, o.Error, tc.wantMsg)
			if tc.wantKind == "" {
				require.Equal(t, 3, o.OutputTokens)
			}
		})
	}
}

// TestSweepAbusiveServers: against a server that never answers, one that
// never ends its streams and one that trickles a byte at a time, a sweep
// ends within its bounds, counts the failures by kind, writes the level
// marked failed and returns an error (bench exits non-zero).
func TestSweepAbusiveServers(t *testing.T) { // not parallel: see TestClientStall
	for _, tc := range []struct {
		name         string
		handler      http.HandlerFunc
		wantFailures map[failureKind]int
		deadline     bool // the level's deadline ended it
	}{
		// Each request stalls after 300 ms: all four fail before the level's deadline.
		{"never answers", neverAnswers, map[failureKind]int{failStall: 4}, false},
		// Bytes keep coming, so only the level's deadline ends them.
		{"never ends a stream", neverEnds, map[failureKind]int{failCancelled: 2}, true},
		{"trickles a byte at a time", trickles, map[failureKind]int{failCancelled: 2}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			var log bytes.Buffer
			type result struct {
				res *SweepResult
				err error
			}
			r := finishes(t, func() result {
				res, err := Sweep(context.Background(), SweepConfig{
					URL: srv.URL, Model: "m", Shaper: &shaper{PerWord: 1}, ISL: 8, OSL: 4,
					Concurrencies: []int{2, 4}, NumPromptsMul: 2,
					StallTimeout: 300 * time.Millisecond, LevelTimeout: 1500 * time.Millisecond,
					OutDir: t.TempDir(), Log: &log,
				})
				return result{res, err}
			})
			require.Error(t, r.err)
			require.ErrorContains(t, r.err, "concurrency 2")
			require.Len(t, r.res.Levels, 1)
			require.Equal(t, []int{4}, r.res.Skipped)
			lv := r.res.Levels[0]
			require.Equal(t, statusFailed, lv.Status)
			got := map[failureKind]int{}
			for k, n := range lv.Metrics.Failures {
				if n > 0 {
					got[k] = n
				}
			}
			require.Equal(t, tc.wantFailures, got, "failures by kind")
			require.Equal(t, diag.Has(lv.Warnings, diag.Deadline), tc.deadline, "%v", lv.Warnings)
			if tc.deadline {
				require.Equal(t, 2, lv.Metrics.NotSent, "the second wave was never sent")
				require.ErrorContains(t, r.err, "the level's deadline of 1.5s passed (--level-timeout)")
			}
		})
	}
}

// TestCalibrationStall: the probes before the first level are bounded too,
// and their error says what they were waiting for.
func TestCalibrationStall(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(neverAnswers))
	defer srv.Close()
	err := finishes(t, func() error {
		_, err := Sweep(context.Background(), SweepConfig{
			URL: srv.URL, Model: "m", ISL: 8, OSL: 4, Concurrencies: []int{1},
			StallTimeout: 200 * time.Millisecond, OutDir: t.TempDir(),
		})
		return err
	})
	require.ErrorContains(t, err, "calibrating prompt lengths against "+srv.URL+": calibration probe of 64 words: stall: POST "+srv.URL+
		"/v1/completions: stalled: no byte from the server for 200ms (--stall-timeout), waiting for the response to begin")
}

// TestModelListTimeout: GET /v1/models says what it waited for.
func TestModelListTimeout(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(neverAnswers))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := finishes(t, func() error { _, err := fetchModel(ctx, http.DefaultClient, srv.URL); return err })
	require.ErrorContains(t, err, "waiting for the list of served models")
}

func TestDefaultBounds(t *testing.T) {
	t.Parallel()
	cfg := SweepConfig{URL: "http://x", ISL: 8, OSL: 128, Concurrencies: []int{4}, NumPromptsMul: 10, Warmups: 1}
	require.NoError(t, cfg.defaults())
	require.Equal(t, DefaultStallTimeout, cfg.stall(), "a stall timeout by default")
	// 41 requests, 4 at a time: 11 waves of 30 s + 128 × 250 ms, after 5 min.
	require.Equal(t, 5*time.Minute+11*(30*time.Second+32*time.Second), cfg.levelTimeout(4, 40))
	require.Equal(t, 5*time.Minute+2*(30*time.Second+250*time.Millisecond), cfg.probeTimeout())
	// At a request rate the schedule's length is added.
	require.Equal(t, 5*time.Minute+10*(30*time.Second+time.Second)+20*time.Second, defaultLevelTimeout(40, 4, 4, 2))

	cfg.StallTimeout, cfg.LevelTimeout = -1, -1
	require.Zero(t, cfg.stall(), "negative: none")
	require.Zero(t, cfg.levelTimeout(4, 40))
	require.Zero(t, cfg.probeTimeout())
	cfg.StallTimeout, cfg.LevelTimeout = time.Second, time.Minute
	require.Equal(t, time.Second, cfg.stall())
	require.Equal(t, time.Minute, cfg.levelTimeout(4, 40))
}

// TestStallCountsHeadBytes: a server that sends its response head a byte
// every 25 ms is slow, not silent: with a stall timeout of 1 s (the head
// takes more than 2 s) the request succeeds, through the client's own transport
// and through net/http. Not parallel: see TestClientStall.
func TestStallCountsHeadBytes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() }) // once both subtests are done
	body := atomFrames(3, 4)
	resp := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				br := bufio.NewReader(nc)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				head, _, _ := strings.Cut(resp, "\r\n\r\n")
				for i := range len(head) + 4 {
					if _, err := nc.Write([]byte{resp[i]}); err != nil {
						return
					}
					time.Sleep(25 * time.Millisecond)
				}
				nc.Write([]byte(resp[len(head)+4:]))
			}()
		}
	}()
	for _, viaHTTP := range []bool{false, true} {
		t.Run(fmt.Sprintf("net/http=%v", viaHTTP), func(t *testing.T) {
			t.Parallel() // beside each other only
			c := newClient("http://"+ln.Addr().String(), "m", 4)
			c.Stall = time.Second
			if viaHTTP {
				c.stream = nil
			}
			o := finishes(t, func() output { return c.Do(context.Background(), request{Prompt: "hi", PromptLen: 1, MaxTokens: 5}) })
			require.True(t, o.OK(), "net/http %v: %s: %s", viaHTTP, o.Failure, o.Error)
			require.Equal(t, 3, o.OutputTokens)
		})
	}
}
