package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/profiling/kernelmodel"
)

const helperEnv = "PROFILE_MODEL_SERVE_SIM_HELPER"

// TestServeSimHelper is the serve-sim process of TestServeSimProcess: the
// test binary re-executed with the command's arguments in helperEnv.
func TestServeSimHelper(t *testing.T) {
	args := os.Getenv(helperEnv)
	if args == "" {
		t.Skip("runs only as the child process of TestServeSimProcess")
	}
	os.Args = append([]string{"profile-model"}, strings.Split(args, "\x1f")...)
	main()
	os.Exit(0)
}

// simProcess is a running serve-sim child process.
type simProcess struct {
	cmd    *exec.Cmd
	url    string
	stderr *strings.Builder
	done   chan struct{}
}

var servingLine = regexp.MustCompile(`serving "[^"]*" on (http://\S+)`)

// startSim starts serve-sim with args; it returns once the server listens.
func startSim(t *testing.T, args ...string) *simProcess {
	t.Helper()
	return startSimEnv(t, nil, args...)
}

// startSimEnv is startSim with extra environment variables.
func startSimEnv(t *testing.T, env []string, args ...string) *simProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeSimHelper$")
	cmd.Env = append(append(os.Environ(), env...), helperEnv+"="+strings.Join(append([]string{"serve-sim"}, args...), "\x1f"))
	pipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &simProcess{cmd: cmd, stderr: &strings.Builder{}, done: make(chan struct{})}
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
	})
	found := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.stderr.WriteString(sc.Text() + "\n")
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		close(found)
	}()
	url, ok := <-found
	if !ok {
		<-p.done
		cmd.Wait()
		t.Fatalf("serve-sim did not start:\n%s", p.stderr)
	}
	p.url = url
	return p
}

// wait returns the exit status once the process ends.
func (p *simProcess) wait(t *testing.T) int {
	t.Helper()
	<-p.done
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, err)
	return 0
}

func TestServeSimProcess(t *testing.T) {
	t.Parallel()
	t.Run("SIGTERM exits 0", func(t *testing.T) {
		t.Parallel()
		p := startSim(t, "--model", "m", "--server-port", "0")
		resp, err := http.Get(p.url + "/health")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		require.Equal(t, 0, p.wait(t), p.stderr.String())
	})
	t.Run("crash-after-requests exits 3", func(t *testing.T) {
		t.Parallel()
		p := startSim(t, "--model", "m", "--server-port", "0", "--time-scale", "100", "--crash-after-requests", "2")
		for range 2 {
			resp, err := http.Post(p.url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x","max_tokens":3}`))
			require.NoError(t, err)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
		}
		require.Equal(t, 3, p.wait(t), p.stderr.String())
		require.Contains(t, p.stderr.String(), "simulated crash after 2 requests")
	})
	t.Run("ATOM_TORCH_PROFILER_DIR", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		p := startSimEnv(t, []string{"ATOM_TORCH_PROFILER_DIR=" + dir}, "--model", "m", "--server-port", "0", "--trace-python-per-step", "-1", "--layers", "2")
		for _, path := range []string{"/start_profile", "/v1/completions", "/stop_profile"} {
			resp, err := http.Post(p.url+path, "application/json", strings.NewReader(`{"prompt":"x","max_tokens":2}`))
			require.NoError(t, err)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, path)
		}
		traces, err := filepath.Glob(filepath.Join(dir, "rank_0", "m_ts_*.pt.trace.json.gz"))
		require.NoError(t, err)
		require.Len(t, traces, 1)
	})
	t.Run("gpu-event-window: inspect warns", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		p := startSim(t, "--model", "m", "--server-port", "0", "--torch-profiler-dir", dir, "--trace-python-per-step", "-1",
			"--layers", "2", "--time-scale", "10", "--gpu-event-window", "10ms")
		post := func(path, body string) {
			resp, err := http.Post(p.url+path, "application/json", strings.NewReader(body))
			require.NoError(t, err)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, path)
		}
		post("/start_profile", "")
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				post("/v1/completions", `{"prompt":"x","max_tokens":60,"ignore_eos":true}`)
			}()
		}
		wg.Wait()
		post("/stop_profile", "")
		traces, err := filepath.Glob(filepath.Join(dir, "rank_0", "*.pt.trace.json.gz"))
		require.NoError(t, err)
		require.Len(t, traces, 1)
		var out strings.Builder
		require.NoError(t, run(t.Context(), []string{"inspect", traces[0]}, &out, io.Discard))
		require.Contains(t, out.String(), "GPU kernels cover")
		require.Contains(t, out.String(), "decode steps have no kernels")
	})
	t.Run("port taken exits 1", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		cmd := exec.Command(os.Args[0], "-test.run=^TestServeSimHelper$")
		cmd.Env = append(os.Environ(), helperEnv+"="+strings.Join([]string{"serve-sim", "--model", "m", "--server-port", port}, "\x1f"))
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, 1, ee.ExitCode())
		require.Contains(t, string(out), "is the port taken")
	})
	t.Run("no model is a usage error", func(t *testing.T) {
		t.Parallel()
		err := run(t.Context(), []string{"serve-sim", "--server-port", "0"}, io.Discard, io.Discard)
		var u usageError
		require.ErrorAs(t, err, &u)
		require.Contains(t, err.Error(), "--model")
	})
}

// TestServeSimRoundTrip: a closed loop at concurrency 8 against a serve-sim
// process with profiling on; `inspect` reports decode_bs 8 and `layers`
// gives back the per-layer table the engine ran from, within 2%.
func TestServeSimRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var table []inventory.LayerRow
	for _, p := range kernelmodel.Default().DecodeLayer(8, 0) {
		// min/max at ±3 std: clipping does not move the mean of the draws.
		table = append(table, inventory.LayerRow{Pos: p.Pos, ShortName: p.ShortName, Kernel: p.Kernel,
			AvgUS: p.AvgUS, StdUS: p.StdUS, MinUS: max(p.AvgUS-3*p.StdUS, 0.1), MaxUS: p.AvgUS + 3*p.StdUS})
	}
	tablePath := filepath.Join(dir, "conc8_layer.csv")
	require.NoError(t, os.WriteFile(tablePath, inventory.FormatLayerCSV(table), 0o644))
	table, err := inventory.ReadLayerCSV(tablePath)
	require.NoError(t, err)
	profDir := filepath.Join(dir, "traces")
	p := startSim(t, "--model", "org/Sim-Model", "--server-port", "0", "--torch-profiler-dir", profDir,
		"--kernels", tablePath, "--layers", "20", "--time-scale", "0.5", "--trace-python-per-step", "20")

	completed := make(chan struct{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"model":"org/Sim-Model","prompt":"%s","max_tokens":%d,"ignore_eos":true,"stream":true}`, strings.Repeat("w ", 50+i), 30+5*i)
			for {
				resp, err := http.Post(p.url+"/v1/completions", "application/json", strings.NewReader(body))
				if !assert.NoError(t, err) {
					return
				}
				out, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !assert.NoError(t, err) || !assert.True(t, strings.HasSuffix(string(out), "data: [DONE]\n\n")) {
					return
				}
				select {
				case completed <- struct{}{}:
				case <-stop:
					return
				}
			}
		}()
	}
	n := 0
	waitFor := func(want int) {
		for ; n < want; n++ {
			<-completed
		}
	}
	postOK := func(path string) {
		resp, err := http.Post(p.url+path, "application/json", nil)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
	// 12 ms steps: a client's turnaround fits in one, so the batch stays full.
	waitFor(8)
	postOK("/start_profile")
	waitFor(32)
	postOK("/stop_profile")
	close(stop)
	wg.Wait()

	traces, err := filepath.Glob(filepath.Join(profDir, "rank_0", "Sim-Model_ts_*.pt.trace.json.gz"))
	require.NoError(t, err)
	require.Len(t, traces, 1)

	var out strings.Builder
	require.NoError(t, run(t.Context(), []string{"inspect", "--json", traces[0]}, &out, io.Discard))
	var sum struct {
		DecodeBS int            `json:"decode_bs"`
		Steps    map[string]int `json:"steps"`
		Warnings []string       `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out.String()), &sum), out.String())
	require.Equal(t, 8, sum.DecodeBS)
	require.Positive(t, sum.Steps["prefill"])
	require.Positive(t, sum.Steps["decode"])
	require.Empty(t, sum.Warnings)

	outDir := filepath.Join(dir, "out")
	require.NoError(t, os.Mkdir(outDir, 0o755))
	require.NoError(t, run(t.Context(), []string{"layers", traces[0], "--mode", "compat", "--csv", filepath.Join(outDir, "layer.csv")}, io.Discard, io.Discard))
	got, err := inventory.ReadLayerCSV(filepath.Join(outDir, "conc8_layer.csv"))
	require.NoError(t, err)
	require.Len(t, got, len(table))
	for i := range table {
		require.Equal(t, table[i].Kernel, got[i].Kernel, "pos %d", i)
		require.InEpsilon(t, table[i].AvgUS, got[i].AvgUS, 0.02, "pos %d (%s)", i, table[i].ShortName)
	}
}

// TestServeSimTensorParallel: serve-sim -tp 4 with a rank skew writes one
// trace per rank; `layers` on the trace directory analyses the ranks in
// parallel and reports what the engine was told to produce: rank r's own
// work 1 + skew·r/3 times rank 0's, every all-reduce's own time 9 µs, the
// slowest rank never waiting, the others waiting for it.
func TestServeSimTensorParallel(t *testing.T) {
	t.Parallel()
	const skew = 0.3
	dir := t.TempDir()
	profDir := filepath.Join(dir, "traces")
	p := startSim(t, "--model", "org/Sim-Model", "--server-port", "0", "--torch-profiler-dir", profDir,
		"-tp", "4", "--rank-skew", fmt.Sprint(skew), "--layers", "6", "--time-scale", "20", "--trace-python-per-step", "-1")
	post := func(path, body string) string {
		resp, err := http.Post(p.url+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		return string(out)
	}
	post("/start_profile", "")
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			post("/v1/completions", fmt.Sprintf(`{"model":"org/Sim-Model","prompt":"%s","max_tokens":12,"ignore_eos":true,"stream":true}`, strings.Repeat("w ", 20+i)))
		}()
	}
	wg.Wait()
	post("/stop_profile", "")
	for r := range 4 {
		m, err := filepath.Glob(filepath.Join(profDir, fmt.Sprintf("rank_%d", r), "*.pt.trace.json.gz"))
		require.NoError(t, err)
		require.Len(t, m, 1, "rank %d writes one trace", r)
	}

	var out strings.Builder
	require.NoError(t, run(t.Context(), []string{"layers", profDir, "--rank", "2", "--json", "--out", filepath.Join(dir, "out")}, &out, io.Discard))
	var got struct {
		Trace           string               `json:"trace"`
		Layers          int                  `json:"layers"`
		KernelsPerLayer []int                `json:"kernels_per_layer"`
		Positions       []inventory.Position `json:"positions"`
		Ranks           analysis.RankReport  `json:"ranks"`
	}
	require.NoError(t, json.Unmarshal([]byte(out.String()), &got), out.String())
	require.Contains(t, got.Trace, "rank_2", "--rank chooses the tables")
	require.Equal(t, 6, got.Layers)
	ars := 0
	for _, pos := range got.Positions {
		if pos.Category == "All-reduce / collectives" {
			ars++
		}
	}
	require.Positive(t, ars, "an all-reduce in every layer")
	rep := got.Ranks
	require.Len(t, rep.Ranks, 4)
	require.Positive(t, rep.Steps)
	base := rep.Ranks[0]
	for r, st := range rep.Ranks {
		require.Equal(t, fmt.Sprintf("rank %d", r), st.Rank)
		// Own collective time: every all-reduce of a step at 9 µs.
		require.InDelta(t, 9.0*float64(ars*got.Layers), st.OwnUS, 1e-6, "rank %d: all-reduces per step × 9 µs", r)
		require.InDelta(t, st.CollectiveUS, st.OwnUS+st.WaitUS, 1e-6)
		require.InEpsilon(t, 1+skew*float64(r)/3, (st.BusyUS-st.OwnUS)/(base.BusyUS-base.OwnUS), 1e-3, "rank %d's own work", r)
	}
	require.InDelta(t, 0, rep.Ranks[3].WaitUS, 1e-6, "the slowest rank never waits")
	require.Greater(t, rep.Ranks[0].WaitUS, rep.Ranks[1].WaitUS, "the fastest rank waits longest")
	require.Equal(t, rep.Steps, rep.Ranks[3].Slowest, "rank 3 is the slowest in every step")
	require.InEpsilon(t, rep.Ranks[3].BusyUS-rep.Ranks[0].BusyUS, rep.SkewUS, 1e-6)
}
