package sim

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// loadResult is what one closed-loop load run measured.
type loadResult struct {
	requests, tokens, failed int64
	elapsed                  time.Duration
}

// runLoad keeps conc streams open against url until total requests are done.
// Each request asks for osl tokens; tokens are counted from "data: " frames
// carrying a choice (the bench client's rule: the extra empty frame excluded).
func runLoad(ctx context.Context, url string, conc, total, osl int) loadResult {
	tr := &http.Transport{MaxIdleConnsPerHost: conc, MaxConnsPerHost: 0, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	body := []byte(fmt.Sprintf(`{"prompt":"bench prompt words here","max_tokens":%d,"ignore_eos":true,"stream":true}`, osl))
	var next, tokens, failed atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(total) && ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/completions", bytes.NewReader(body))
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				sc := bufio.NewScanner(resp.Body)
				n, done := 0, false
				for sc.Scan() {
					line := sc.Bytes()
					switch {
					case bytes.Equal(line, []byte("data: [DONE]")):
						done = true
					case bytes.HasPrefix(line, []byte("data: ")) && bytes.Contains(line, []byte(`"text": "`)) && !bytes.Contains(line, []byte(`"text": ""`)):
						n++
					}
				}
				resp.Body.Close()
				if !done || n != osl {
					failed.Add(1)
				}
				tokens.Add(int64(n))
			}
		}()
	}
	wg.Wait()
	return loadResult{requests: int64(total), tokens: tokens.Load(), failed: failed.Load(), elapsed: time.Since(t0)}
}

// BenchmarkStreams measures the streams and tokens per second one server
// sustains with a huge time scale (the engine is never the bottleneck's
// sleep): client and server share the process and the machine's cores.
func BenchmarkStreams(b *testing.B) {
	for _, bc := range []struct {
		conc  int
		scale float64
	}{{256, 100}, {256, 1e6}, {1024, 30}, {1024, 100}, {1024, 1e6}} {
		conc := bc.conc
		b.Run(fmt.Sprintf("streams=%d/scale=%g", conc, bc.scale), func(b *testing.B) {
			srv, err := New(Config{Model: "m", MaxNumSeqs: 2048, TimeScale: bc.scale})
			if err != nil {
				b.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ctx, ln) }()
			defer func() { cancel(); <-done }()
			url := "http://" + ln.Addr().String()
			const osl = 200
			var res loadResult
			b.ResetTimer()
			for range b.N {
				r := runLoad(context.Background(), url, conc, conc*2, osl)
				res.tokens += r.tokens
				res.failed += r.failed
				res.requests += r.requests
				res.elapsed += r.elapsed
			}
			b.StopTimer()
			if res.failed > 0 {
				b.Fatalf("%d of %d requests failed", res.failed, res.requests)
			}
			b.ReportMetric(float64(res.tokens)/res.elapsed.Seconds(), "tok/s")
			c := srv.stepCounts()
			b.ReportMetric(float64(res.tokens-res.requests)/float64(c.Decode), "decode-bs")
		})
	}
}

// TestLoadExternal measures a separately started server (for example
// `profile-model serve-sim --model m --max-num-seqs 2048 --time-scale 1e6`)
// so that the server's process has its own CPU account:
// SIM_LOAD_URL=http://127.0.0.1:8000 SIM_LOAD_STREAMS=1024 go test -run LoadExternal -v.
func TestLoadExternal(t *testing.T) {
	url := os.Getenv("SIM_LOAD_URL")
	if url == "" {
		t.Skip("set SIM_LOAD_URL to a running serve-sim to measure it")
	}
	conc, _ := strconv.Atoi(os.Getenv("SIM_LOAD_STREAMS"))
	if conc <= 0 {
		conc = 1024
	}
	const osl = 200
	r := runLoad(context.Background(), url, conc, 3*conc, osl)
	require.Zero(t, r.failed, "failed requests")
	t.Logf("%d streams: %d requests, %d tokens in %v: %.0f tok/s, %.0f req/s",
		conc, r.requests, r.tokens, r.elapsed.Round(time.Millisecond), float64(r.tokens)/r.elapsed.Seconds(), float64(r.requests)/r.elapsed.Seconds())
}
