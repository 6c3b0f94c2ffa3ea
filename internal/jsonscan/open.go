package jsonscan

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// OpenFile opens path for reading. A FIFO blocks in open until a writer
// comes: it is opened on a goroutine, so that ctx (Ctrl-C) ends the wait.
func OpenFile(ctx context.Context, path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return os.Open(path)
	}
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		return o.f, o.err
	case <-ctx.Done():
		unblockFIFO(path)
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, fmt.Errorf("%s is a FIFO with no writer yet: stopped waiting: %w", path, ctx.Err())
	}
}

// InterruptOnCancel makes a read of r that is blocked (a pipe, FIFO or
// terminal with nothing to read) return once ctx is cancelled, by setting
// a read deadline in the past; files that cannot have one (a regular file
// on a slow device) are left alone, and the read-ahead stops waiting for
// them instead. The returned func stops watching.
func InterruptOnCancel(ctx context.Context, r io.Reader) func() bool {
	f, ok := r.(*os.File)
	if !ok {
		return func() bool { return true }
	}
	return context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Now()) })
}

// Await runs f on a goroutine of its own and returns its result, or ctx's
// error as soon as ctx is done: for a read that nothing can interrupt, such
// as the first bytes of a pipe whose writer sends nothing (stdin is not
// pollable). The goroutine then ends with its read, or with the process.
func Await[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
