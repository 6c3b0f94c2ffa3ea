package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/engine"
)

// waitFor polls cond every 50 ms for up to limit (a hang detector, not a
// timing assertion) and reports whether it became true.
func waitFor(limit time.Duration, cond func() bool) bool {
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestKilledRunLeavesNoEngine: SIGKILL of `run --engine sim` (nothing of
// it can run after) takes the engine with it through the parent-death
// signal; run.json recorded the engine's group, and the next report marks
// the run abandoned.
func TestKilledRunLeavesNoEngine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's; elsewhere the next run finds the engine instead")
	}
	t.Parallel()
	out := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	args := append([]string{"run", "--conc", "2", "--isl", "64", "--osl", "4096", "--num-prompts-mul", "20",
		"--time-scale", "1", "--tokenizer", "none", "--out", out}, simArgs(t)...)
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "PROFILE_MODEL_TEST_MAIN=1")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	defer cmd.Process.Kill()

	var dir string
	var info *results.RunInfo
	ready := waitFor(2*time.Minute, func() bool {
		dirs := runDirsIn(out)
		if len(dirs) != 1 {
			return false
		}
		dir = dirs[0]
		i, err := results.LoadRunInfo(results.Run(dir).RunInfo())
		if err != nil {
			return false
		}
		info = i
		return i.Engine.PGID > 0 && i.Engine.URL != ""
	})
	require.True(t, ready, "the engine never served: %s", logs.String())
	require.Equal(t, "running", info.Status)
	require.Equal(t, cmd.Process.Pid, info.PID)
	pgid := info.Engine.PGID
	require.True(t, engine.GroupAlive(pgid), "the engine runs before the kill")
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) }) // whatever the test finds, nothing outlives it

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.True(t, waitFor(30*time.Second, func() bool { return !engine.GroupAlive(pgid) }),
		"the engine (process group %d) outlived the killed run", pgid)

	var stdout, stderr bytes.Buffer
	_ = run(context.Background(), []string{"report", dir}, &stdout, &stderr) // no level was finished: the report itself fails
	require.Contains(t, stderr.String(), "run abandoned (its profile-model process")
	after, err := results.LoadRunInfo(results.Run(dir).RunInfo())
	require.NoError(t, err)
	require.Equal(t, engine.StatusAbandoned, after.Status)
}

// TestAbandonedEngineCleanup: an abandoned run whose engine group still
// runs (where no parent-death signal took it) is reported with how to stop
// it, and --cleanup stops it only when its leader's recorded command line
// and start time both match.
func TestAbandonedEngineCleanup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads process groups from /proc")
	}
	t.Parallel()
	const model = "org/abandoned-model"
	// A stand-in engine: its own process group, the model in its command line.
	eng := exec.Command("sh", "-c", "sleep 120; : "+model)
	eng.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, eng.Start())
	defer eng.Process.Kill()
	go eng.Wait()
	gone := exec.Command("true")
	require.NoError(t, gone.Run())

	out := t.TempDir()
	host, _ := os.Hostname()
	cmdline, start, ok := engine.Identity(eng.Process.Pid)
	require.True(t, ok)
	abandoned := func(name string, e results.EngineInfo) string {
		dir := filepath.Join(out, name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		info := &results.RunInfo{SchemaVersion: results.RunInfoSchemaVersion, Status: "running", PID: gone.Process.Pid, Host: host, Engine: e}
		f, err := os.Create(results.Run(dir).RunInfo())
		require.NoError(t, err)
		require.NoError(t, info.Write(f))
		require.NoError(t, f.Close())
		return dir
	}
	var stdout, stderr bytes.Buffer

	// What run.json does not identify is never signalled: an empty model
	// name (it once matched every command line), a run.json from before
	// the identity was kept, or a leader whose start time differs (the
	// pid reused).
	for name, e := range map[string]results.EngineInfo{
		"empty model, no identity": {Kind: "sim", Model: "", PGID: eng.Process.Pid},
		"no identity":              {Kind: "sim", Model: model, PGID: eng.Process.Pid},
		"other start":              {Kind: "sim", Model: model, PGID: eng.Process.Pid, LeaderCmdline: cmdline, LeaderStart: start + "0"},
		"other command":            {Kind: "sim", Model: model, PGID: eng.Process.Pid, LeaderCmdline: cmdline + " x", LeaderStart: start},
	} {
		stderr.Reset()
		_ = run(context.Background(), []string{"report", abandoned(name, e), "--cleanup"}, &stdout, &stderr)
		require.NotContains(t, stderr.String(), "was stopped", name)
		require.True(t, engine.GroupAlive(eng.Process.Pid), "%s: the group was signalled", name)
	}
	dir := abandoned("run-1", results.EngineInfo{Kind: "sim", Model: model, PGID: eng.Process.Pid, LeaderCmdline: cmdline, LeaderStart: start})

	stderr.Reset()
	_ = run(context.Background(), []string{"report", dir}, &stdout, &stderr)
	require.Contains(t, stderr.String(), "still runs: stop it with `kill -- -")
	require.True(t, engine.GroupAlive(eng.Process.Pid), "not stopped without --cleanup")

	stderr.Reset()
	_ = run(context.Background(), []string{"report", dir, "--cleanup"}, &stdout, &stderr)
	require.Contains(t, stderr.String(), "was stopped")
	require.True(t, waitFor(30*time.Second, func() bool { return !engine.GroupAlive(eng.Process.Pid) }), "the engine group was not stopped")
}
