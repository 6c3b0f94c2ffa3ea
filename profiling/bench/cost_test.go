//go:build linux

package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The client-cost benchmark runs the token server in a child process (this
// test binary, re-executed) so that getrusage of this process counts the
// client alone.
const fastServerEnv = "BENCH_FAST_SERVER"

// TestHelperFastServer is not a test: it is the child process's server. It
// streams max_tokens ATOM-style token frames per request as fast as it can
// (or paced), one write and flush per token.
func TestHelperFastServer(t *testing.T) {
	if os.Getenv(fastServerEnv) == "" {
		t.Skip("helper process for BenchmarkClientCost")
	}
	frame := []byte("data: {\"id\":\"cmpl-0123456789abcdef\",\"object\":\"text_completion\",\"created\":1764441000,\"model\":\"MiniMaxAI/MiniMax-M2.5\",\"choices\":[{\"index\":0,\"text\":\" kernel\",\"finish_reason\":null}]}\n\n")
	serveHelper(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		body, _ := io.ReadAll(r.Body)
		if i := strings.Index(string(body), `"max_tokens":`); i >= 0 {
			fmt.Sscanf(string(body[i+len(`"max_tokens":`):]), "%d", &n)
		}
		var gap time.Duration // "gap:D" in the prompt paces the tokens
		if i := strings.Index(string(body), `"prompt":"gap:`); i >= 0 {
			rest := string(body[i+len(`"prompt":"gap:`):])
			gap, _ = time.ParseDuration(rest[:strings.IndexByte(rest, '"')])
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		at := time.Now()
		for range n {
			if gap > 0 {
				at = at.Add(gap)
				time.Sleep(time.Until(at))
			}
			w.Write(frame)
			fl.Flush()
		}
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"stop\"}]}\n\n"+
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", n, n+8)
	}))
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkClientCost streams from a server in another process and reports
// the client's CPU time per streamed token, the token rate reached and the
// cores the client used. gap=0 streams as fast as the server writes (frames
// coalesce into fewer reads); gap=20ms paces each stream like a decode step,
// one read per token: 1000 streams then ask for 50,000 tokens/s. On a 2-core
// machine client and server share the cores, so the rate reached is a floor
// of what the client alone sustains.
func BenchmarkClientCost(b *testing.B) {
	url := startHelper(b, "TestHelperFastServer", fastServerEnv)
	for _, bc := range []struct {
		conc int
		gap  time.Duration
	}{{256, 0}, {1000, 0}, {1000, 20 * time.Millisecond}} {
		conc := bc.conc
		b.Run(fmt.Sprintf("streams=%d/gap=%v", conc, bc.gap), func(b *testing.B) {
			osl := 200
			if bc.gap > 0 {
				osl = 100
			}
			c := newClient(url, "MiniMaxAI/MiniMax-M2.5", conc)
			reqs := make([]request, conc*2)
			for i := range reqs {
				reqs[i] = request{Index: i, Prompt: "gap:" + bc.gap.String(), PromptLen: 4, MaxTokens: osl}
			}
			runLoad(context.Background(), c, fromSlice(reqs[:conc]), load{MaxConcurrency: conc}) // open the connections
			var tokens int
			var wall, cpu time.Duration
			var all []output
			b.ResetTimer()
			for range b.N {
				cpu0, t0 := cpuTime(), time.Now()
				outs, _, _ := runLoad(context.Background(), c, fromSlice(reqs), load{MaxConcurrency: conc})
				wall += time.Since(t0)
				cpu += cpuTime() - cpu0
				all = append(all, outs...)
				for _, o := range outs {
					if !o.OK() {
						b.Fatalf("request %d: %s: %s", o.Index, o.Failure, o.Error)
					}
					tokens += o.TokenEvents
				}
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(tokens), "cpu-us/token")
			b.ReportMetric(float64(tokens)/wall.Seconds(), "tok/s")
			b.ReportMetric(cpu.Seconds()/wall.Seconds(), "client-cores")
			m := aggregate(all, len(all), wall, []float64{50, 99}, SLO{})
			b.ReportMetric(m.TPOT.Median, "tpot-p50-ms")
			b.ReportMetric(m.TTFT.Median, "ttft-p50-ms")
			b.ReportMetric(lagP99(all).Seconds()*1e3, "send-lag-p99-ms")
			b.ReportMetric(100*lagShare(all), "send-lag-%")
		})
	}
}
