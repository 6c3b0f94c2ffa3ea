// Package sidefile reads the files the tool reads besides traces: model
// configs, plans, peaks tables, rule tables, tokenizers, runner maps, layer
// tables and the Hugging Face cache's files. One rule for all of them: a
// side file must be a regular file (a FIFO with no writer once blocked a
// command forever, /dev/zero filled memory), no larger than its kind's
// limit, and is read under a deadline that ctx (Ctrl-C) cancels.
package sidefile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// Limits: Small for tables and JSON written by hand or by a tool (a model's
// config.json is a few KB), Large for tokenizers and layer tables.
const (
	Small int64 = 64 << 20
	Large int64 = 1 << 30
)

// Timeout bounds one read of a side file: a regular file takes
// milliseconds; a stuck network file system must not hold a command.
var Timeout = 2 * time.Minute

// ErrNotRegular is the error of a path that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// Read reads the side file at path, at most limit bytes; what names the
// kind of file in errors ("the model config"). The open never blocks (a
// FIFO is refused, not waited on), and the read ends with ctx or Timeout.
func Read(ctx context.Context, path, what string, limit int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	f, err := open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	if err := Check(path, what, fi, limit); err != nil {
		f.Close()
		return nil, err
	}
	type result struct {
		data []byte
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		data, err := io.ReadAll(io.LimitReader(f, limit+1))
		ch <- result{data, err}
	}()
	select {
	case r := <-ch:
		f.Close()
		if r.err != nil {
			return nil, fmt.Errorf("reading %s %s: %w", what, path, r.err)
		}
		if int64(len(r.data)) > limit {
			return nil, fmt.Errorf("%s %s: grew beyond %s while read", what, path, Size(limit))
		}
		return r.data, nil
	case <-ctx.Done():
		f.Close() // ends the read where the file system allows it
		return nil, fmt.Errorf("reading %s %s: stopped: %w", what, path, context.Cause(ctx))
	}
}

// Check is the rule on fi, the file at path: a regular file of at most
// limit bytes.
func Check(path, what string, fi fs.FileInfo, limit int64) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s %s: %w (%s): give the file itself", what, path, ErrNotRegular, kind(fi.Mode()))
	}
	if fi.Size() > limit {
		return fmt.Errorf("%s %s: %s, more than the %s such a file may be: is it the right file?", what, path, Size(fi.Size()), Size(limit))
	}
	return nil
}

// Stat is os.Stat with the rule of Check applied.
func Stat(path, what string, limit int64) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return Check(path, what, fi, limit)
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// Size writes n bytes for a person: 64 MiB, 3.0 GiB.
func Size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	s := fmt.Sprintf("%.1f %ciB", v, "KMGT"[i])
	if v == float64(int64(v)) {
		s = fmt.Sprintf("%d %ciB", int64(v), "KMGT"[i])
	}
	return s
}
