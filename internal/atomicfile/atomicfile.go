// Package atomicfile writes files so that readers never see half of one:
// data goes to a temporary file in the same directory, is synced, then renamed.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes data to path atomically.
func Write(path string, data []byte) error {
	return WriteFunc(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFunc streams fn's output to path atomically; on any error the
// temporary file is removed and path is left as it was.
func WriteFunc(path string, fn func(w io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	removeStale(dir)
	tmp, err := os.CreateTemp(dir, tempPrefix(filepath.Base(path), os.Getpid())+"*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = fn(tmp); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	// A file replaced keeps its mode; a new one is readable by all.
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		mode = st.Mode().Perm()
	}
	if err = os.Chmod(tmp.Name(), mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// ErrExists marks an output that exists (a file, a directory or a
// symbolic link) when replacing it was not asked for.
var ErrExists = errors.New("exists")

// ErrInput marks an output that is one of the command's own inputs.
var ErrInput = errors.New("is an input")

// CheckNew returns an error naming the first of paths that exists, unless
// force is set: commands never overwrite an earlier result silently.
func CheckNew(force bool, paths ...string) error {
	return CheckOutputs(force, nil, paths...)
}

// CheckOutputs says whether a command may write outputs. None may be one
// of its inputs, by the same name or as the same file under another (a
// hard link, or a symbolic link to it), even with force: the input would
// be lost while it is read. Unless force, none may exist: not a file made
// before this run, and not a symbolic link, which is neither followed nor
// replaced unasked (with force, the link itself is replaced, never its
// target). Empty paths are skipped.
func CheckOutputs(force bool, inputs []string, outputs ...string) error {
	for _, out := range outputs {
		if out == "" {
			continue
		}
		for _, in := range inputs {
			if in != "" && SameFile(in, out) {
				return fmt.Errorf("%s %w of this command (%s): write the output elsewhere; --force never replaces an input", out, ErrInput, in)
			}
		}
		if force {
			continue
		}
		st, err := os.Lstat(out)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("checking %s: %w", out, err)
		case st.Mode()&os.ModeSymlink != 0:
			return fmt.Errorf("%s %w as a symbolic link: it is not followed; pass --force to replace the link (not its target), or choose another output", out, ErrExists)
		default:
			return fmt.Errorf("%s %w: pass --force to overwrite it, or choose another --out or --csv", out, ErrExists)
		}
	}
	return nil
}

// SameFile tells whether a and b name one file: the same path once made
// absolute and cleaned, or (both existing) the same file by identity.
func SameFile(a, b string) bool {
	if aa, err := filepath.Abs(a); err == nil {
		if bb, err := filepath.Abs(b); err == nil && aa == bb {
			return true
		}
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}
