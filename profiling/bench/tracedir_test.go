package bench

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/profiling/sim"
)

func TestCheckTraceDir(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	file := filepath.Join(base, "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	readOnly := filepath.Join(base, "ro")
	require.NoError(t, os.Mkdir(readOnly, 0o555))
	for _, tc := range []struct {
		name    string
		dir     string
		wantErr string
		wantLog string
	}{
		{"a directory", base, "", ""},
		{"not there yet", filepath.Join(base, "missing"), "", "does not exist yet: the server makes it at its first export"},
		{"a file", file, "is a file, not a directory: pass the server's torch profiler directory", ""},
		{"no write permission", readOnly, "", "has no write permission for anyone (mode -r-xr-xr-x)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var log bytes.Buffer
			err := checkTraceDir(tc.dir, &log)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			if tc.wantLog == "" {
				require.Empty(t, log.String())
			} else {
				require.Contains(t, log.String(), tc.wantLog)
			}
		})
	}
}

func TestStopReplyDirs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"current", `{"status":"success","message":"m","traces":[{"trace_dir":"/t/rank_0","elapsed":1.5},{"trace_dir":"/t/rank_1","elapsed":1.5}]}`, []string{"/t/rank_0", "/t/rank_1"}},
		{"legacy", `{"status":"success","message":"m","traces":["/t/rank_0"]}`, []string{"/t/rank_0"}},
		{"before the export", `{"status":"success","message":"Profiling stopped. Trace files generated."}`, nil},
		{"not JSON", `OK`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, stopReplyDirs([]byte(tc.body)))
		})
	}
}

// TestWrongTraceDir: a --trace-dir the server does not write to fails the
// level soon after /stop_profile, saying so, instead of waiting the whole
// export timeout; with a reply that lists the server's directories or
// one that does not.
func TestWrongTraceDir(t *testing.T) {
	t.Parallel()
	for _, async := range []bool{false, true} {
		t.Run(map[bool]string{false: "reply after the export", true: "reply before the export"}[async], func(t *testing.T) {
			t.Parallel()
			serverDir := t.TempDir()
			url, _ := startSim(t, sim.Config{ProfilerDir: serverDir, TimeScale: 50, AsyncStop: async})
			res, err := finishes(t, func() sweepOutcome {
				res, err := Sweep(context.Background(), SweepConfig{
					URL: url, Model: simModel, Shaper: &shaper{PerWord: 1}, ISL: 8, OSL: 4, Concurrencies: []int{1, 2},
					Profile: true, TraceDir: t.TempDir(), ExportTimeout: 10 * time.Minute, PollInterval: 10 * time.Millisecond,
					TraceAppearTimeout: 300 * time.Millisecond, OutDir: t.TempDir(),
				})
				return sweepOutcome{res, err}
			}).values()
			require.ErrorContains(t, err, "it is probably not the server's profiler directory")
			require.Len(t, res.Levels, 1)
			lv := res.Levels[0]
			require.Equal(t, statusFailed, lv.Status)
			require.Equal(t, 1, lv.Metrics.Completed, "the requests succeeded; the traces are missing")
			require.True(t, diag.Has(lv.Warnings, diag.Trace))
			if !async {
				require.ErrorContains(t, err, "the server reports writing to "+filepath.Join(serverDir, "rank_0"))
			}
		})
	}
}

// TestExportWaitInterrupted: Ctrl-C while the export is waited for marks
// the level interrupted (its requests all succeeded), not failed.
func TestExportWaitInterrupted(t *testing.T) {
	t.Parallel()
	traceDir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/completions", streamHandler(atomFrames(4, 8)))
	var started atomic.Bool
	mux.HandleFunc("/start_profile", func(w http.ResponseWriter, r *http.Request) { started.Store(true) })
	mux.HandleFunc("/stop_profile", func(w http.ResponseWriter, r *http.Request) {
		if !started.Load() {
			return // the stop before the first level
		}
		// The export begins (its .json, never gzipped), and the user
		// presses Ctrl-C.
		rank := filepath.Join(traceDir, "rank_0")
		if os.MkdirAll(rank, 0o755) == nil {
			os.WriteFile(filepath.Join(rank, "h.1.pt.trace.json"), []byte("{"), 0o644)
		}
		cancel()
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	res, err := finishes(t, func() sweepOutcome {
		res, err := Sweep(ctx, SweepConfig{
			URL: srv.URL, Model: "m", Shaper: &shaper{PerWord: 1}, ISL: 8, OSL: 4, RangeRatio: 1, Concurrencies: []int{2, 4},
			Profile: true, TraceDir: traceDir, PollInterval: 10 * time.Millisecond, OutDir: t.TempDir(),
		})
		return sweepOutcome{res, err}
	}).values()
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, res.Levels, 1)
	lv := res.Levels[0]
	require.Equal(t, statusInterrupted, lv.Status)
	require.Equal(t, 2, lv.Metrics.Completed)
	require.Zero(t, lv.Metrics.Failed)
	var msgs []string
	for _, w := range lv.Warnings {
		msgs = append(msgs, w.Message)
	}
	require.Contains(t, strings.Join(msgs, "\n"), "interrupted while waiting for the trace export (the level's requests had finished")
	b, err := os.ReadFile(res.BenchFile)
	require.NoError(t, err)
	require.Contains(t, string(b), "# conc=2 left out: interrupted")
}

type sweepOutcome struct {
	res *SweepResult
	err error
}

func (o sweepOutcome) values() (*SweepResult, error) { return o.res, o.err }
