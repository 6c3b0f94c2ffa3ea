package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
)

// The known schedule: request i's first token comes ttft(i) after the
// server read the request, then token k (k ≥ 1) comes gap(i, k) after token
// k−1. The values sit on plateaus (30, 50, 80, 120 ms) whose shares put p50
// and p99 of TTFT and ITL well inside a plateau, so a measurement error
// shows as the error itself and not as a jump between plateaus; tens of
// milliseconds keep timer and scheduling noise of a loaded machine small
// against the 1 ms tolerance, and few tokens per second keep the test cheap.
const (
	schedConc     = 256
	schedRequests = 1024
)

func plateau(r int, cuts [3]int) time.Duration {
	switch {
	case r < cuts[0]:
		return 30 * time.Millisecond
	case r < cuts[1]:
		return 50 * time.Millisecond
	case r < cuts[2]:
		return 80 * time.Millisecond
	}
	return 120 * time.Millisecond
}

func schedTokens(i int) int { return 20 + (i*13)%21 }

func schedTTFT(i int) time.Duration {
	if i < schedConc {
		// The first wave is sent in one burst: give it the lowest plateau
		// so the burst's queueing sits below p50 instead of inside it.
		return 30 * time.Millisecond
	}
	return plateau((i*37)%100, [3]int{0, 67, 97})
}

func schedGap(i, k int) time.Duration { return plateau((k*7+i*13)%100, [3]int{30, 70, 97}) }

// emission is what the schedule server actually did for one request, in
// wall-clock nanoseconds (comparable between processes on one machine).
type emission struct {
	Writes []int64 `json:"writes"` // each token frame after its flush
	Done   int64   `json:"done"`   // after [DONE] was flushed
}

const scheduleServerEnv = "BENCH_SCHEDULE_SERVER"

// TestHelperScheduleServer is not a test: it is the schedule server of
// TestMetricsMatchSchedule, run in a child process so that its 256 busy
// goroutines do not delay the client's network wake-ups (a Go scheduler
// that is busy polls the network late), as a real server in its own
// process would not. It streams tokens at the scheduled times, records when
// it flushed each, and serves the record at GET /emissions. Prompts are the
// request index; "w" marks a warmup request (two tokens, held 100 ms so
// that every warmup stream is open at once and leaves an idle connection).
func TestHelperScheduleServer(t *testing.T) {
	if os.Getenv(scheduleServerEnv) == "" {
		t.Skip("helper process for TestMetricsMatchSchedule")
	}
	var mu sync.Mutex
	rec := map[int]emission{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /emissions", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		json.NewEncoder(w).Encode(rec)
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Prompt string `json:"prompt"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		t0 := time.Now()
		i, ttft, n, gap := -1, 100*time.Millisecond, 2, func(int) time.Duration { return 0 }
		if body.Prompt != "w" {
			var err error
			if i, err = strconv.Atoi(body.Prompt); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			ttft, n, gap = schedTTFT(i), schedTokens(i), func(k int) time.Duration { return schedGap(i, k) }
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		e := emission{Writes: make([]int64, 0, n)}
		at := t0.Add(ttft)
		for k := range n {
			if k > 0 {
				at = at.Add(gap(k))
			}
			time.Sleep(time.Until(at))
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\" t%d\",\"finish_reason\":null}]}\n\n", k)
			fl.Flush()
			e.Writes = append(e.Writes, time.Now().UnixNano())
		}
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}]}\n\n"+
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", n, n+1)
		fl.Flush()
		e.Done = time.Now().UnixNano()
		if i >= 0 {
			mu.Lock()
			rec[i] = e
			mu.Unlock()
		}
	})
	serveHelper(t, mux)
}

// serveHelper serves h on a loopback port, prints the address on stdout and
// returns when the parent closes stdin.
func serveHelper(t *testing.T, h http.Handler) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(ln.Addr().String())
	go http.Serve(ln, h)
	io.Copy(io.Discard, os.Stdin)
}

// startHelper runs this test binary as the helper server test name with
// env set, and returns its base URL; the child ends with the test.
func startHelper(tb testing.TB, name, env string) string {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^"+name+"$")
	cmd.Env = append(os.Environ(), env+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("helper server %s: %v", name, err)
	}
	return "http://" + strings.TrimSpace(addr)
}

// scheduleRun is one run's p50 and p99 of TTFT, ITL, TPOT and E2EL (in
// that order) as the client measured them, as the server's flush times
// give them, and as the nominal schedule gives them.
type scheduleRun struct {
	measured, flushed, nominal [4]results.Stats
	// clientLate is how late (ms) a 1 ms sleep in the client process woke
	// during the run: how late its goroutines got the CPU.
	clientLate results.Stats
	// clientCores is the CPU the client process used during the run, in
	// cores (-1 when unknown).
	clientCores float64
}

// wakeLateness samples how late a 1 ms sleep wakes (in ms) until stop is
// closed.
func wakeLateness(stop <-chan struct{}) <-chan results.Stats {
	out := make(chan results.Stats, 1)
	go func() {
		var late []float64
		for {
			select {
			case <-stop:
				out <- Summarize(late, []float64{50, 90, 99})
				return
			default:
			}
			t0 := time.Now()
			time.Sleep(time.Millisecond)
			late = append(late, ms(time.Since(t0)-time.Millisecond))
		}
	}()
	return out
}

var schedMetrics = [4]string{"ttft", "itl", "tpot", "e2el"}

// runSchedule streams 1024 requests at 256 concurrent streams against a
// fresh schedule server.
func runSchedule(t *testing.T) scheduleRun {
	url := startHelper(t, "TestHelperScheduleServer", scheduleServerEnv)
	c := newClient(url, "m", schedConc)
	ctx := context.Background()

	// Warm up at full concurrency so every stream has an open connection,
	// as a sweep's warmup does.
	warm := make([]request, schedConc)
	for i := range warm {
		warm[i] = request{Index: i, Prompt: "w", MaxTokens: 2}
	}
	wouts, _, _ := runLoad(ctx, c, fromSlice(warm), load{MaxConcurrency: schedConc})
	for _, o := range wouts {
		require.True(t, o.OK(), o.Error)
	}

	reqs := make([]request, schedRequests)
	var nominal [4][]float64
	for i := range reqs {
		n := schedTokens(i)
		reqs[i] = request{Index: i, Prompt: strconv.Itoa(i), PromptLen: 1, MaxTokens: n}
		ttft := ms(schedTTFT(i))
		var sum float64
		for k := 1; k < n; k++ {
			g := ms(schedGap(i, k))
			sum += g
			nominal[1] = append(nominal[1], g)
		}
		nominal[0] = append(nominal[0], ttft)
		nominal[2] = append(nominal[2], sum/float64(n-1))
		nominal[3] = append(nominal[3], ttft+sum)
	}
	// Requests ramp up at 1000/s (nearly even gaps) into the cap of 256
	// streams, so the first wave is not one burst of 256 sends whose
	// queueing would count as TTFT; from then on the loop is closed.
	stopProbe := make(chan struct{})
	probe := wakeLateness(stopProbe)
	stop := sync.OnceFunc(func() { close(stopProbe) })
	defer stop() // a failed require below must not leave the sampler running
	cpu0, cpuOK := processCPU()
	outs, start, end := runLoad(ctx, c, fromSlice(reqs), load{MaxConcurrency: schedConc, RequestRate: 1000, Burstiness: 50, Seed: 1})
	cpu1, _ := processCPU()
	stop()
	clientLate := <-probe
	clientCores := -1.0
	if cpuOK {
		clientCores = (cpu1 - cpu0).Seconds() / end.Sub(start).Seconds()
	}
	pcts := []float64{50, 99}
	got := aggregate(outs, len(reqs), end.Sub(start), pcts, SLO{})
	require.Equal(t, schedRequests, got.Completed, "failures: %v", got.Failures)
	require.Zero(t, got.Failed)
	require.Zero(t, got.OutputCounted, "usage frames carry the output lengths")

	resp, err := http.Get(url + "/emissions")
	require.NoError(t, err)
	rec := map[int]emission{}
	err = json.NewDecoder(resp.Body).Decode(&rec)
	resp.Body.Close()
	require.NoError(t, err)
	var flushed [4][]float64
	nsms := func(ns int64) float64 { return float64(ns) / 1e6 }
	for _, o := range outs {
		e, ok := rec[o.Index]
		require.True(t, ok, "request %d not recorded", o.Index)
		n := len(e.Writes)
		require.Equal(t, n, o.OutputTokens)
		start := o.Start.UnixNano()
		ttft := nsms(e.Writes[0] - start)
		for k := 1; k < n; k++ {
			flushed[1] = append(flushed[1], nsms(e.Writes[k]-e.Writes[k-1]))
		}
		e2el := nsms(e.Done - start)
		flushed[0] = append(flushed[0], ttft)
		flushed[2] = append(flushed[2], (e2el-ttft)/float64(n-1))
		flushed[3] = append(flushed[3], e2el)
	}
	r := scheduleRun{measured: [4]results.Stats{got.TTFT, got.ITL, got.TPOT, got.E2EL}, clientLate: clientLate, clientCores: clientCores}
	for j := range 4 {
		r.flushed[j] = Summarize(flushed[j], pcts)
		r.nominal[j] = Summarize(nominal[j], pcts)
	}
	return r
}

// harnessLate is the largest lateness of the server's flushes against the
// nominal schedule over the checked percentiles.
func (r scheduleRun) harnessLate() float64 {
	worst := 0.0
	for j := range 4 {
		for _, p := range []float64{50, 99} {
			f, _ := r.flushed[j].At(p)
			n, _ := r.nominal[j].At(p)
			worst = max(worst, math.Abs(f-n))
		}
	}
	return worst
}

// TestMetricsMatchSchedule streams 1024 requests at 256 concurrent streams
// against a server with a known schedule and checks p50 and p99 of TTFT,
// ITL, TPOT and E2EL within 1 ms of the times the server really flushed
// each token (wall clock, which both processes share): what
// an ideal client would measure, so the difference is the client's own
// error. The nominal schedule's error adds the harness's own lateness
// (loopback transit, the server's timer wake-ups), logged with it.
//
// Scheduling noise of a shared machine only ever adds lateness, at random;
// a systematic client error shows in every run. So the test makes up to
// three tries and passes at the first whose client error is within 1 ms
// everywhere. A try that misses is excused when the machine was too busy
// for a 1 ms check to mean anything: the server itself missed its schedule
// by more than 3 ms, or a 1 ms sleep in the client process woke more than
// 1 ms late at p90 during the try while the client itself used under half
// a core (so the CPUs were busy with something else). The test fails when a try missed on a
// quiet machine, and skips with the numbers when every try was excused. Every try's
// numbers are logged. With BENCH_SCHEDULE_NOMINAL=strict the nominal error
// is asserted within 1 ms too.
func TestMetricsMatchSchedule(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 1024 requests for about 10 s; skipped with -short")
	}
	const cleanHarness = 3.0 // ms of server lateness beyond which the machine is too busy
	// A 1 ms check needs the client's goroutines to wake within 1 ms. On a
	// quiet 2-core machine a 1 ms sleep beside 256 streams wakes ~0.55 ms
	// late at p90 (~1.07 at p99); under load, 3–5 ms at p90.
	const cleanClient = 1.0
	// The client needs ~0.3 core for these 256 streams (and the sampler),
	// busy machine or not; well above that means it is the problem.
	const busyClient = 0.5
	var late, failures []string
	for try := 1; try <= 3; try++ {
		r := runSchedule(t)
		for j, name := range schedMetrics {
			for _, p := range []float64{50, 99} {
				g, _ := r.measured[j].At(p)
				f, _ := r.flushed[j].At(p)
				n, _ := r.nominal[j].At(p)
				t.Logf("try %d %-4s p%v: measured %8.3f ms | server flushed %8.3f (client error %+.3f) | schedule %8.3f (error %+.3f)",
					try, name, p, g, f, g-f, n, g-n)
			}
		}
		p90, _ := r.clientLate.At(90)
		p99, _ := r.clientLate.At(99)
		t.Logf("try %d: a 1 ms sleep in the client woke late by p50 %.3f, p90 %.3f, p99 %.3f ms; the client used %.2f cores", try, r.clientLate.Median, p90, p99, r.clientCores)
		var bad []string
		for j, name := range schedMetrics {
			for _, p := range []float64{50, 99} {
				g, _ := r.measured[j].At(p)
				f, _ := r.flushed[j].At(p)
				n, _ := r.nominal[j].At(p)
				if math.Abs(g-f) > 1 {
					bad = append(bad, fmt.Sprintf("%s p%v: client error %+.3f ms against the server's flush times", name, p, g-f))
				}
				if os.Getenv("BENCH_SCHEDULE_NOMINAL") == "strict" && math.Abs(g-n) > 1 {
					bad = append(bad, fmt.Sprintf("%s p%v: error %+.3f ms against the nominal schedule", name, p, g-n))
				}
			}
		}
		switch h := r.harnessLate(); {
		case len(bad) == 0:
			return
		// Noise only adds lateness: a miss on a busy machine proves nothing.
		case h > cleanHarness:
			late = append(late, fmt.Sprintf("server %.1f ms late", h))
		// Late wake-ups excuse a miss only when the client itself was not
		// what kept the CPUs busy: a client that got slower must fail.
		case p90 > cleanClient && r.clientCores >= 0 && r.clientCores < busyClient:
			late = append(late, fmt.Sprintf("client wake-ups %.1f ms late at p90 with the client using %.2f cores", p90, r.clientCores))
		default:
			failures = append(failures, fmt.Sprintf("try %d: %s", try, strings.Join(bad, "; ")))
		}
	}
	if len(failures) > 0 {
		t.Fatalf("client error over 1 ms on a quiet machine:\n%s", strings.Join(failures, "\n"))
	}
	t.Skipf("machine too busy for a 1 ms check in each of 3 tries (%s; limits: server %.0f ms, client p90 wake-up %.0f ms)", strings.Join(late, ", "), cleanHarness, cleanClient)
}

// TestMetricsOnePerfectStream checks the formulas on one request whose
// timestamps are given, independent of any clock.
func TestAggregateFormulas(t *testing.T) {
	t.Parallel()
	o := output{
		TTFT:        100 * time.Millisecond,
		ITL:         gapsOf(10*time.Millisecond, 30*time.Millisecond),
		E2EL:        140 * time.Millisecond,
		TokenEvents: 3, OutputTokens: 3, PromptTokens: 10, UsageOutput: true, UsagePrompt: true,
	}
	bad := output{Failure: failHTTP5xx}
	m := aggregate([]output{o, bad}, 3, 2*time.Second, []float64{50, 99}, SLO{TTFT: 150})
	require.Equal(t, 1, m.Completed)
	require.Equal(t, 1, m.Failed)
	require.Equal(t, 1, m.NotSent)
	require.Equal(t, map[failureKind]int{failHTTP5xx: 1}, m.Failures)
	require.InDelta(t, 20.0, m.TPOT.Mean, 1e-9, "(140-100)/(3-1)")
	require.InDelta(t, 20.0, m.ITL.Mean, 1e-9)
	require.InDelta(t, 10.0, m.ITL.Std, 1e-9, "population std of {10, 30}")
	require.InDelta(t, 10+0.99*20, m.ITL.Pcts[1].Value, 1e-9, "linear interpolation")
	require.InDelta(t, 0.5, m.RequestThroughput, 1e-9)
	require.InDelta(t, 1.5, m.OutputThroughput, 1e-9)
	require.InDelta(t, 6.5, m.TotalTokenThroughput, 1e-9)
	require.InDelta(t, 0.5, m.RequestGoodput, 1e-9)
	m = aggregate([]output{o}, 1, time.Second, nil, SLO{TTFT: 50})
	require.Zero(t, m.RequestGoodput, "TTFT 100 ms misses a 50 ms SLO")
}

func TestPercentileMatchesNumpy(t *testing.T) {
	t.Parallel()
	// numpy.percentile([1, 2, 3, 4, 10], [0, 25, 50, 90, 99, 100])
	// = [1, 2, 3, 7.6, 9.76, 10] by linear interpolation between ranks.
	s := []float64{1, 2, 3, 4, 10}
	for _, tc := range []struct{ p, want float64 }{{0, 1}, {25, 2}, {50, 3}, {90, 7.6}, {99, 9.76}, {100, 10}} {
		require.InDelta(t, tc.want, Percentile(s, tc.p), 1e-9, "p%v", tc.p)
	}
	require.Zero(t, Percentile(nil, 50))
}
