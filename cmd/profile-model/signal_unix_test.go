//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// interruptGuard is how long a command may take to end after SIGINT
// before the test calls it hung: a guard against a stuck test, not a speed
// bound (the command ends within milliseconds; the time is logged).
const interruptGuard = 10 * time.Second

// interruptRead starts the test binary as profile-model with args and
// stdin, lets it reach its blocking read, sends SIGINT, and checks that the
// command ends on its own (exit status 1, saying it was cancelled). A
// command signalled before it could install its handler (a slow start on a
// busy machine) dies of the signal: that start is tried again, waiting
// longer.
func interruptRead(t *testing.T, stdin *os.File, args ...string) {
	t.Helper()
	for _, wait := range []time.Duration{time.Second, 5 * time.Second, 15 * time.Second} {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "PROFILE_MODEL_TEST_MAIN=1")
		cmd.Stdin = stdin
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		time.Sleep(wait)
		if interrupt(t, cmd, &stderr) {
			return
		}
		t.Logf("killed by SIGINT before its handler was installed; again, waiting longer than %v", wait)
	}
	t.Fatal("the command never got to install its SIGINT handler")
}

// interrupt sends SIGINT and checks how the command ends; false when the
// signal killed it.
func interrupt(t *testing.T, cmd *exec.Cmd, stderr *bytes.Buffer) bool {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	sent := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	select {
	case <-done:
	case <-time.After(interruptGuard):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("still running %v after SIGINT: %s", interruptGuard, stderr)
	}
	t.Logf("ended %v after SIGINT", time.Since(sent).Round(time.Millisecond))
	if cmd.ProcessState.ExitCode() == -1 {
		return false
	}
	require.Equal(t, 1, cmd.ProcessState.ExitCode(), "exits with an error: %s", stderr)
	require.Contains(t, stderr.String(), "canceled")
	return true
}

// A pipe that has sent nothing, or one byte, does not hold up Ctrl-C.
func TestInspectSilentPipeInterrupted(t *testing.T) {
	t.Parallel()
	for _, sent := range []string{"", "{"} {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		_, err = w.WriteString(sent)
		require.NoError(t, err)
		interruptRead(t, r, "inspect", "-")
		require.NoError(t, w.Close())
		require.NoError(t, r.Close())
	}
}

// trim on a FIFO ends on SIGINT whatever the writer does: none, silent, or
// stopping mid-trace; with --list and with -o, leaving no output and no
// temporary file.
func TestTrimFIFOInterrupted(t *testing.T) {
	t.Parallel()
	for _, writer := range []string{"none", "silent", "stops"} {
		for _, list := range []bool{false, true} {
			dir := t.TempDir()
			fifo := filepath.Join(dir, "trace.json")
			require.NoError(t, syscall.Mkfifo(fifo, 0o600))
			var w *os.File
			if writer != "none" {
				// Read-write: open does not wait for the reader, and the
				// FIFO has a writer for as long as w is open.
				var err error
				w, err = os.OpenFile(fifo, os.O_RDWR, 0)
				require.NoError(t, err)
				if writer == "stops" {
					_, err = w.WriteString(`{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0`)
					require.NoError(t, err)
				}
			}
			out := filepath.Join(dir, "out.json")
			args := []string{"trim", fifo, "-o", out, "--decode", "1"}
			if list {
				args = []string{"trim", fifo, "--list"}
			}
			interruptRead(t, nil, args...)
			if w != nil {
				require.NoError(t, w.Close())
			}
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1, "%s writer, list %v: only the FIFO is left", writer, list)
		}
	}
}
