//go:build unix

package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/sim"
)

// rig is one lifecycle test's world: a stand-in executable that records
// how it was started, a free port, a run directory and a working directory.
type rig struct {
	t      *testing.T
	rec    string // what the stand-in recorded: argv, cwd, env, pids
	runDir string
	work   string
	exe    string
	port   int
}

func newRig(t *testing.T) *rig {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the lifecycle tests read process groups from /proc (Linux only)")
	}
	root := t.TempDir()
	r := &rig{t: t, rec: filepath.Join(root, "rec"), runDir: filepath.Join(root, "run"), work: filepath.Join(root, "work"), port: freePort(t)}
	for _, d := range []string{r.rec, r.work} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	self, err := os.Executable()
	require.NoError(t, err)
	// The stand-in records its argv (NUL-separated), working directory and
	// environment, then becomes the engine: this test binary in helper mode.
	r.exe = filepath.Join(root, "bin", "engine-stand-in")
	require.NoError(t, os.Mkdir(filepath.Dir(r.exe), 0o755))
	script := strings.NewReplacer("REC", shellQuote(r.rec), "SELF", shellQuote(self)).Replace(`#!/bin/sh
printf '%s\0' "$0" "$@" > REC/argv
pwd -P > REC/cwd
env > REC/env
exec SELF "$@"
`)
	writeScript(t, r.exe, script)
	// Whatever a failing test leaves behind is killed.
	t.Cleanup(func() {
		for _, pid := range r.pidsIfAny() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return r
}

// freePort returns a port nobody holds, below the kernel's ephemeral range,
// for a stand-in engine to bind as a real engine does (the simulated engine
// inherits a socket Start bound instead): a port the kernel hands out for
// bind(0) may become the local end of some outgoing connection (every
// readiness probe makes one) before the engine binds it. Each port is
// handed out once per test binary, and reserved against other processes
// that draw ports so (this package's tests run at the same time from
// another checkout or job): a port free when drawn could otherwise be
// drawn by both before either stand-in had bound it.
func freePort(t *testing.T) int {
	t.Helper()
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 12000 {
				lo = n
			}
		}
	}
	ports.Lock()
	defer ports.Unlock()
	for range 1000 {
		p := lo - 10000 + rand.IntN(10000)
		if ports.used[p] {
			continue
		}
		// The reservation: a name in Linux's abstract socket namespace,
		// held until this process ends.
		res, err := net.Listen("unix", "@profile-model-engine-test-port-"+strconv.Itoa(p))
		if err != nil {
			continue // another process holds it
		}
		ports.used[p], ports.held = true, append(ports.held, res)
		if portFree(p) != nil {
			continue
		}
		return p
	}
	t.Fatal("no free port below the ephemeral range")
	return 0
}

var ports = struct {
	sync.Mutex
	used map[int]bool
	held []net.Listener // the reservations
}{used: map[int]bool{}}

// spec is a spec of kind served by the stand-in; env adds helper controls.
func (r *rig) spec(kind Kind, env map[string]string) Spec {
	e := map[string]string{helperEnv: "serve", recordEnv: r.rec}
	for k, v := range env {
		e[k] = v
	}
	port := r.port
	if kind == Sim {
		port = 0 // any: Start binds it and the engine inherits the socket
	}
	return Spec{Kind: kind, Model: "test/model", Port: port, Exe: r.exe, Dir: r.work,
		ProfilerDir: filepath.Join(r.runDir, "traces"), Env: e}
}

func (r *rig) opts() Options {
	return Options{RunDir: r.runDir, ReadyTimeout: 30 * time.Second, PollInterval: 10 * time.Millisecond, StopGrace: 10 * time.Second}
}

func (r *rig) read(name string) string {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.rec, name))
	require.NoError(r.t, err)
	return string(b)
}

func (r *rig) argv() []string {
	return strings.Split(strings.TrimSuffix(r.read("argv"), "\x00"), "\x00")
}

// env is the recorded environment; multi-line values are not looked at.
func (r *rig) env() map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(r.read("env"), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

// pids are the engine's main process and its worker, as the helper wrote.
func (r *rig) pids() []int {
	r.t.Helper()
	pids := r.pidsIfAny()
	require.NotEmpty(r.t, pids, "the helper wrote its pids")
	return pids
}

func (r *rig) pidsIfAny() []int {
	b, err := os.ReadFile(filepath.Join(r.rec, "pids"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

func (r *rig) log() string {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.runDir, LogFile))
	require.NoError(r.t, err)
	return string(b)
}

// requireGone checks that no process of the engine's group runs, nor any
// pid the helper wrote (the main process and its worker).
func requireGone(t *testing.T, pgid int, pids []int) {
	t.Helper()
	require.Empty(t, groupMembers(pgid), "processes of group %d still run", pgid)
	for _, pid := range pids {
		_, state, ok := procGroup(pid)
		require.False(t, ok && state != 'Z' && state != 'X', "process %d still runs (state %c)", pid, state)
	}
}

func requireRunning(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		_, state, ok := procGroup(pid)
		require.True(t, ok && state != 'Z', "process %d runs", pid)
	}
}

// envOr is what a default variable is in the engine: the inherited value
// wins over the package's default.
func envOr(k, def string) string {
	if v, ok := os.LookupEnv(k); ok {
		return v
	}
	return def
}

func servedModels(t *testing.T, url string) []string {
	t.Helper()
	resp, err := http.Get(url + "/v1/models")
	require.NoError(t, err)
	defer resp.Body.Close()
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	var ids []string
	for _, d := range list.Data {
		ids = append(ids, d.ID)
	}
	return ids
}

// TestLifecycle starts each engine through its stand-in, checks what the
// process was given and what the log holds, and stops it: no process of
// its group, the worker included, is left.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind  Kind
		tweak func(*Spec)
		args  func(port, prof string) []string // what the executable gets
		env   map[string]string                // what the process environment holds
	}{{
		kind: ATOM,
		tweak: func(s *Spec) {
			s.TP, s.MaxNumSeqs, s.CaptureSizes, s.Level = 2, 8, []int{1, 2, 4, 8}, new(0)
			s.TrustRemoteCode, s.ExtraArgs = true, []string{"--gpu-memory-utilization", "0.8"}
			s.Env["KINETO_BUFFER_SIZE_MB"] = "512"
		},
		args: func(port, prof string) []string {
			return []string{"-m", "atom.entrypoints.openai_server", "--model", "test/model", "--kv_cache_dtype", "fp8",
				"-tp", "2", "--torch-profiler-dir", prof, "--server-port", port, "--max-num-seqs", "8", "--level", "0",
				"--cudagraph-capture-sizes", "[1,2,4,8]", "--trust-remote-code", "--gpu-memory-utilization", "0.8"}
		},
		env: map[string]string{"KINETO_BUFFER_SIZE_MB": "512", "OMP_NUM_THREADS": envOr("OMP_NUM_THREADS", "1"),
			"USE_ATOMESH_ENTRYPOINTS": "0", "KINETO_CONFIG": "PROF/kineto.conf"},
	}, {
		kind: VLLM,
		tweak: func(s *Spec) {
			s.KVCacheDType, s.MaxNumSeqs, s.MaxModelLen, s.EnforceEager, s.Level = "fp8", 16, 4096, true, new(0)
		},
		args: func(port, prof string) []string {
			return []string{"serve", "test/model", "--port", port, "--tensor-parallel-size", "1",
				"--profiler-config", `{"profiler":"torch","torch_profiler_dir":"` + prof + `","torch_profiler_with_stack":false,"torch_profiler_record_shapes":false}`,
				"--kv-cache-dtype", "fp8", "--max-num-seqs", "16", "--max-model-len", "4096", "--enforce-eager", "--compilation-config", `{"mode":0}`}
		},
		env: map[string]string{"KINETO_BUFFER_SIZE_MB": envOr("KINETO_BUFFER_SIZE_MB", "256"),
			"OMP_NUM_THREADS": envOr("OMP_NUM_THREADS", "1"), "VLLM_TORCH_PROFILER_DIR": "", "KINETO_CONFIG": "PROF/kineto.conf"},
	}, {
		kind: SGLang,
		tweak: func(s *Spec) {
			s.KVCacheDType, s.MaxNumSeqs, s.MaxModelLen, s.CaptureSizes = "fp8_e4m3", 32, 8192, []int{1, 2, 4}
		},
		args: func(port, prof string) []string {
			return []string{"-m", "sglang.launch_server", "--model-path", "test/model", "--port", port, "--tensor-parallel-size", "1",
				"--kv-cache-dtype", "fp8_e4m3", "--max-running-requests", "32", "--context-length", "8192",
				"--cuda-graph-bs-decode", "1", "2", "4", "--enable-metrics"}
		},
		env: map[string]string{"OMP_NUM_THREADS": envOr("OMP_NUM_THREADS", "1"), "SGLANG_TORCH_PROFILER_DIR": "PROF",
			"SGLANG_PROFILE_WITH_STACK": envOr("SGLANG_PROFILE_WITH_STACK", "false"), "KINETO_CONFIG": "PROF/kineto.conf"},
	}, {
		kind: Sim,
		tweak: func(s *Spec) {
			s.MaxNumSeqs, s.CaptureSizes, s.TimeScale = 4, []int{1, 2, 4}, 50
		},
		args: func(port, prof string) []string {
			return []string{"serve-sim", "--model", "test/model", "--server-port", port, "--torch-profiler-dir", prof,
				"--max-num-seqs", "4", "--cudagraph-capture-sizes", "[1,2,4]", "--time-scale", "50"}
		},
		env: map[string]string{"OMP_NUM_THREADS": envOr("OMP_NUM_THREADS", "1")},
	}}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			spec := r.spec(tt.kind, map[string]string{childEnv: "term"})
			tt.tweak(&spec)
			srv, err := Start(t.Context(), spec, r.opts())
			require.NoError(t, err)
			pids := r.pids()
			requireRunning(t, pids)

			// The exact command line, working directory and environment.
			port, prof := strconv.Itoa(srv.Spec().Port), spec.ProfilerDir
			how := "inherited" // the simulated engine serves on the socket Start bound
			if tt.kind != Sim {
				require.Equal(t, r.port, srv.Spec().Port)
				how = "bound"
			}
			require.Equal(t, append([]string{r.exe}, tt.args(port, prof)...), r.argv())
			require.Equal(t, r.work+"\n", r.read("cwd"))
			env := r.env()
			for k, v := range tt.env {
				v = strings.Replace(v, "PROF", prof, 1)
				require.Equal(t, v, env[k], "environment variable %s", k)
			}
			if tt.kind != Sim {
				// The Kineto configuration KINETO_CONFIG names, sized by
				// KINETO_BUFFER_SIZE_MB.
				conf, err := os.ReadFile(env["KINETO_CONFIG"])
				require.NoError(t, err)
				require.Contains(t, string(conf), "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB="+env["KINETO_BUFFER_SIZE_MB"]+"\n")
				require.Equal(t, standInVersion, srv.Installed().Version, "Identify ran before the start")
			} else {
				require.Nil(t, srv.Installed(), "the simulated engine is not probed")
			}
			for _, kv := range srv.Command().Env {
				k, v, _ := strings.Cut(kv, "=")
				require.Equal(t, v, env[k], "Command.Env says what the process got: %s", k)
			}
			require.Equal(t, r.work, env["PWD"])
			require.Equal(t, "http://127.0.0.1:"+port, srv.URL())
			require.Equal(t, []string{"test/model"}, servedModels(t, srv.URL()))

			require.NoError(t, srv.Stop(t.Context()))
			requireGone(t, srv.PID(), pids)
			require.NoError(t, srv.Err(), "a requested stop is no crash")
			select {
			case <-srv.Exited():
			default:
				t.Fatal("Exited is closed after Stop")
			}

			// The log: our header with the command, the engine's stdout and
			// stderr, its worker's, and how it ended.
			log := r.log()
			lines := strings.Split(strings.TrimSpace(log), "\n")
			require.Contains(t, lines[0], fmt.Sprintf("starting the %s engine: %s", tt.kind, srv.Command()))
			for _, want := range []string{"helper: loading test/model (stdout)", "helper: port " + port + " (stderr)",
				"helper: listening on 127.0.0.1:" + port + " (" + how + ")", "worker: idle", "helper: stopped on SIGTERM"} {
				require.Contains(t, lines, want)
			}
			require.Contains(t, log, `serve-sim: serving "test/model" on http://127.0.0.1:`+port)
			require.Contains(t, lines[len(lines)-1], fmt.Sprintf("the %s engine was stopped (exit status 0); its process group stopped on SIGTERM", tt.kind))
		})
	}
}

// TestStopEscalates: a worker that ignores SIGTERM is killed after the
// grace period.
func TestStopEscalates(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	opts := r.opts()
	opts.StopGrace = 200 * time.Millisecond
	srv, err := Start(t.Context(), r.spec(ATOM, map[string]string{childEnv: "ignore-term"}), opts)
	require.NoError(t, err)
	pids := r.pids()
	require.NoError(t, srv.Stop(t.Context()))
	requireGone(t, srv.PID(), pids)
	require.Contains(t, r.log(), "its process group was killed with SIGKILL after")
}

// TestStopContextKillsAtOnce: Stop's context ending skips the grace period.
func TestStopContextKillsAtOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	opts := r.opts()
	opts.StopGrace = time.Hour
	srv, err := Start(t.Context(), r.spec(VLLM, map[string]string{childEnv: "ignore-term"}), opts)
	require.NoError(t, err)
	pids := r.pids()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.NoError(t, srv.Stop(ctx))
	requireGone(t, srv.PID(), pids)
	require.Contains(t, r.log(), "killed with SIGKILL")
}

// TestContextCancelStops: the end of Start's context (Ctrl-C) stops the
// engine and its group.
func TestContextCancelStops(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx, cancel := context.WithCancel(t.Context())
	srv, err := Start(ctx, r.spec(SGLang, map[string]string{childEnv: "term"}), r.opts())
	require.NoError(t, err)
	pids := r.pids()
	watch, stopWatch := srv.Watch(t.Context())
	defer stopWatch()
	cancel()
	<-srv.Exited()
	<-watch.Done()
	require.ErrorIs(t, context.Cause(watch), ErrStopped)
	require.NoError(t, srv.Stop(t.Context()), "Stop after the context's stop reports how that went")
	requireGone(t, srv.PID(), pids)
	require.NoError(t, srv.Err())
	require.Contains(t, r.log(), "the sglang engine was stopped (exit status 0)")
}

// TestCrash: an engine killed mid-run is reported through Exited, Err and
// Watch, and what it left in its group (its worker) is stopped.
func TestCrash(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	srv, err := Start(t.Context(), r.spec(ATOM, map[string]string{childEnv: "term"}), r.opts())
	require.NoError(t, err)
	pids := r.pids()
	watch, stopWatch := srv.Watch(t.Context())
	defer stopWatch()
	require.NoError(t, syscall.Kill(srv.PID(), syscall.SIGKILL))

	<-srv.Exited()
	<-watch.Done()
	var ee *Error
	require.ErrorAs(t, srv.Err(), &ee)
	require.Equal(t, fmt.Sprintf("exited unexpectedly (pid %d, signal: killed)", srv.PID()), ee.Msg)
	require.Equal(t, filepath.Join(r.runDir, LogFile), ee.LogPath)
	require.Contains(t, ee.Tail, "helper: loading test/model (stdout)")
	require.Equal(t, srv.Err(), context.Cause(watch), "Watch's cause is the crash")
	require.Contains(t, srv.Err().Error(), "last ")

	require.NoError(t, srv.Stop(t.Context()))
	requireGone(t, srv.PID(), pids)
	require.Contains(t, r.log(), "the atom engine exited on its own (signal: killed); its process group stopped on SIGTERM")
}

// TestStartFails: every way a start fails leaves no process and says why
// with the log's last lines.
func TestStartFails(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		timeout time.Duration
		msg     string   // the *Error's Msg starts so
		err     []string // in the whole message
		tail    []string // lines in the tail
	}{{
		name:    "never ready: the deadline passes",
		env:     map[string]string{neverEnv: "1", childEnv: "term"},
		timeout: 2 * time.Second,
		msg:     "not ready after 2s at http://127.0.0.1:",
		err:     []string{`(last: GET /health: HTTP 503 "{\"error\":`, "raise the readiness deadline"},
		tail:    []string{"helper: loading test/model (stdout)", "worker: idle"},
	}, {
		name: "exits before ready: fails at once, not at the deadline",
		env:  map[string]string{exitEnv: "RuntimeError: HIP out of memory", childEnv: "term"},
		msg:  "exited before it was ready (exit status 1)",
		tail: []string{"RuntimeError: HIP out of memory"},
	}, {
		name: "serves another model: ATOM would answer 400",
		env:  map[string]string{servedEnv: "other/model", childEnv: "term"},
		msg:  `the server at http://127.0.0.1:`,
		err:  []string{`serves ["other/model"], not "test/model"`, "ATOM answers 400"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			opts := r.opts()
			if tt.timeout > 0 {
				opts.ReadyTimeout = tt.timeout
			} else {
				opts.ReadyTimeout = time.Hour // a failure must not wait for it
			}
			srv, err := Start(t.Context(), r.spec(ATOM, tt.env), opts)
			require.Nil(t, srv)
			var ee *Error
			require.ErrorAs(t, err, &ee)
			require.True(t, strings.HasPrefix(ee.Msg, tt.msg), "message %q", ee.Msg)
			for _, w := range tt.err {
				require.Contains(t, err.Error(), w)
			}
			for _, w := range tt.tail {
				require.Contains(t, ee.Tail, w)
			}
			require.LessOrEqual(t, len(ee.Tail), tailLines)
			require.True(t, strings.HasPrefix(ee.Tail[0], "# profile-model "), "the tail starts at the log's first line here: %q", ee.Tail[0])
			pids := r.pids()
			requireGone(t, pids[0], pids)
			require.Contains(t, r.log(), "the atom engine ")
		})
	}
}

// TestPortTaken: a held port is refused before anything starts, whether
// the engine binds it (atom) or Start binds it for the engine (sim).
func TestPortTaken(t *testing.T) {
	t.Parallel()
	for _, kind := range []Kind{ATOM, Sim} {
		for _, addr := range []string{"127.0.0.1", "0.0.0.0"} {
			t.Run(string(kind)+"/"+addr, func(t *testing.T) {
				t.Parallel()
				r := newRig(t)
				ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
				require.NoError(t, err)
				defer ln.Close()
				spec := r.spec(kind, nil)
				spec.Port = ln.Addr().(*net.TCPAddr).Port
				_, err = Start(t.Context(), spec, r.opts())
				require.ErrorContains(t, err, fmt.Sprintf("%s engine: port %d is taken: another process listens on it; find it with `ss -ltnp 'sport = :%d'`", kind, spec.Port, spec.Port))
				require.NoFileExists(t, filepath.Join(r.rec, "argv"), "nothing was started")
				require.NoFileExists(t, filepath.Join(r.runDir, LogFile), "nothing was written")
			})
		}
	}
}

// TestStartRefusals: a missing executable, a log already there, a trap.
func TestStartRefusals(t *testing.T) {
	t.Parallel()
	t.Run("missing executable", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		spec := r.spec(VLLM, nil)
		spec.Exe = filepath.Join(r.work, "no-such-vllm")
		_, err := Start(t.Context(), spec, r.opts())
		// Found by Identify, before anything starts.
		require.ErrorIs(t, err, os.ErrNotExist)
		require.ErrorContains(t, err, "vllm engine: could not run "+spec.Exe+" (set the engine's executable, or PATH)")
		require.NoFileExists(t, filepath.Join(r.runDir, LogFile))
	})
	t.Run("executable gone after the probe", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		spec := r.spec(VLLM, nil)
		spec.Exe = filepath.Join(r.work, "no-such-vllm")
		spec.Installed = NewInstalled(VLLM, "0.27.1", "", readHelp(t, VLLM))
		_, err := Start(t.Context(), spec, r.opts())
		var ee *Error
		require.ErrorAs(t, err, &ee)
		require.ErrorIs(t, err, os.ErrNotExist)
		require.Contains(t, ee.Msg, "could not start")
		require.Contains(t, r.log(), "the vllm engine could not start")
	})
	t.Run("log of an earlier run", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		require.NoError(t, os.MkdirAll(r.runDir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(r.runDir, LogFile), []byte("earlier\n"), 0o644))
		_, err := Start(t.Context(), r.spec(ATOM, nil), r.opts())
		require.ErrorContains(t, err, "exists already: give each run its own directory")
		require.Equal(t, "earlier\n", r.log())
		// The stand-in answered Identify's probes, and was never started.
		require.Contains(t, r.read("argv"), "--help")
		require.NotContains(t, r.read("argv"), "--server-port")
	})
	t.Run("trap", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		spec := r.spec(ATOM, nil)
		spec.MaxNumSeqs, spec.CaptureSizes = 16, []int{32, 64}
		_, err := Start(t.Context(), spec, r.opts())
		require.ErrorContains(t, err, `no capture size left); pass --cudagraph-capture-sizes "[16]"`)
		require.NoFileExists(t, filepath.Join(r.rec, "argv"))
	})
	t.Run("flag the installed engine does not know", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		spec := r.spec(SGLang, nil)
		spec.ExtraArgs = []string{"--enable-flashinfer-mla"}
		_, err := Start(t.Context(), spec, r.opts())
		require.ErrorContains(t, err, "sglang 9.9.9 does not know --enable-flashinfer-mla")
		require.NotContains(t, r.read("argv"), "--model-path", "never started")
		require.NoFileExists(t, filepath.Join(r.runDir, LogFile))
	})
}

// TestAttach: engine none checks a running server and leaves it alone.
func TestAttach(t *testing.T) {
	t.Parallel()
	url := startInProcess(t, "served/model")
	opts := Options{ReadyTimeout: 300 * time.Millisecond, PollInterval: 10 * time.Millisecond}

	srv, err := Start(t.Context(), Spec{Kind: None, Model: "served/model", URL: url + "/"}, opts)
	require.NoError(t, err)
	require.Equal(t, url, srv.URL())
	require.Nil(t, srv.Exited())
	require.NoError(t, srv.Stop(t.Context()))
	require.Equal(t, []string{"served/model"}, servedModels(t, url), "Stop leaves an attached server running")

	_, err = Start(t.Context(), Spec{Kind: None, Model: "Served/Model", URL: url}, opts)
	require.ErrorContains(t, err, `none engine: the server at `+url+` serves ["served/model"], not "Served/Model"`)

	dead := "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	_, err = Start(t.Context(), Spec{Kind: None, Model: "m", URL: dead}, opts)
	require.ErrorContains(t, err, "not ready after 300ms at "+dead+" (last: GET /health: dial tcp")
	require.ErrorContains(t, err, "connection refused")
}

// TestAttachNotAModelList: something else on the port is an error at once.
func TestAttachNotAModelList(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<html>hello</html>")
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	_, err = Start(t.Context(), Spec{Kind: None, Model: "m", URL: "http://" + ln.Addr().String()},
		Options{ReadyTimeout: time.Hour, PollInterval: 10 * time.Millisecond})
	require.ErrorContains(t, err, `answered something that is not an OpenAI model list ("<html>hello</html>")`)
}

// TestSimRealBinary runs the real profile-model serve-sim: as engine sim,
// and behind an ATOM stand-in that drops "-m atom.entrypoints.openai_server"
// (serve-sim takes ATOM's flags). Both command lines must be accepted as
// they are.
func TestSimRealBinary(t *testing.T) {
	t.Parallel()
	bin := buildProfileModel(t)
	tests := []struct {
		kind  Kind
		tweak func(r *rig, s *Spec)
	}{{
		kind: Sim,
		tweak: func(r *rig, s *Spec) {
			s.Exe, s.MaxNumSeqs, s.CaptureSizes, s.TimeScale, s.EnforceEager = bin, 4, []int{1, 2, 4}, 100, true
			s.ExtraArgs = []string{"--seed", "3"}
		},
	}, {
		kind: ATOM,
		tweak: func(r *rig, s *Spec) {
			stand := filepath.Join(r.work, "python")
			writeScript(t, stand, "#!/bin/sh\nshift 2\nexec "+shellQuote(bin)+" serve-sim \"$@\"\n")
			s.Exe, s.TP, s.MaxNumSeqs, s.CaptureSizes, s.Level, s.MaxModelLen, s.TrustRemoteCode = stand, 1, 8, []int{1, 2, 4, 8}, new(3), 4096, true
			// serve-sim answers no probe: the installed ATOM is given.
			s.Installed = NewInstalled(ATOM, standInVersion, "", readHelp(t, ATOM))
		},
	}}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			spec := r.spec(tt.kind, nil)
			spec.Model, spec.Env = "MiniMaxAI/MiniMax-M2.5", nil
			tt.tweak(r, &spec)
			srv, err := Start(t.Context(), spec, r.opts())
			require.NoError(t, err)
			require.Equal(t, []string{"MiniMaxAI/MiniMax-M2.5"}, servedModels(t, srv.URL()))
			require.NoError(t, srv.Stop(t.Context()))
			requireGone(t, srv.PID(), []int{srv.PID()})
			log := r.log()
			require.Contains(t, log, `serve-sim: serving "MiniMaxAI/MiniMax-M2.5" on http://127.0.0.1:`+strconv.Itoa(srv.Spec().Port))
			require.Contains(t, log, "engine was stopped (exit status 0)")
		})
	}
}

// buildProfileModel builds the command once per test binary.
func buildProfileModel(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to build profile-model with")
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "engine-test-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "profile-model")
		var out bytes.Buffer
		cmd := exec.Command(goTool, "build", "-o", built.path, "github.com/profile-model/profile-model/cmd/profile-model")
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			built.err = fmt.Errorf("go build: %w\n%s", err, out.String())
		}
	})
	require.NoError(t, built.err)
	return built.path
}

// startInProcess serves a simulated engine in this process for engine none.
func startInProcess(t *testing.T, model string) string {
	t.Helper()
	s, err := sim.New(sim.Config{Model: model, TimeScale: 1000})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return "http://" + ln.Addr().String()
}
