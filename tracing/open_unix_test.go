//go:build unix

package tracing_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/tracing"
)

// hangGuard is how long a test waits for a call that must return at once
// before it calls it hung: a guard against a stuck test, not a speed bound.
const hangGuard = 30 * time.Second

// waitErr returns the error sent on done, failing the test if none comes.
func waitErr(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(hangGuard):
		t.Fatal("the read did not return after its context was cancelled")
		return nil
	}
}

// A FIFO that no writer opens blocks open(2); cancelling the context
// (Ctrl-C) ends the wait.
func TestLoadFIFOWithoutWriter(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	for _, opts := range []tracing.Options{{}, {NoReadAhead: true}} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := tracing.Load(ctx, path, opts)
			done <- err
		}()
		cancel()
		err := waitErr(t, done)
		require.ErrorIs(t, err, context.Canceled)
	}
}

// A read blocked on a pipe whose writer sends part of a trace and then
// nothing (a stalled producer, a slow device) ends when the context is
// cancelled.
func TestReadStalledPipe(t *testing.T) {
	t.Parallel()
	for _, opts := range []tracing.Options{{}, {NoReadAhead: true}} {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		// Not one whole event: the scan blocks before its first check of
		// the context.
		_, err = w.WriteString(`{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k"`)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := tracing.Read(ctx, r, "pipe", opts)
			done <- err
		}()
		cancel()
		err = waitErr(t, done)
		require.ErrorIs(t, err, context.Canceled)
		require.NoError(t, w.Close())
		require.NoError(t, r.Close())
	}
}

// blockingReader is a pipe whose writer never sends a byte, and whose read
// nothing can interrupt (standard input is not pollable).
type blockingReader struct{ unblock chan struct{} }

func (r blockingReader) Read([]byte) (int, error) {
	<-r.unblock
	return 0, errors.New("unblocked")
}

// Cancelling the context ends a read that has not received the first two
// bytes (the gzip check) of a pipe.
func TestReadSilentPipeIsCancellable(t *testing.T) {
	t.Parallel()
	r := blockingReader{make(chan struct{})}
	defer close(r.unblock)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := tracing.Read(ctx, r, "-", tracing.Options{})
		done <- err
	}()
	cancel()
	require.ErrorIs(t, waitErr(t, done), context.Canceled)
}
