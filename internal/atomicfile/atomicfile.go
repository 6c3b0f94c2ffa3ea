// Package atomicfile writes files so that readers never see half of one:
// data goes to a temporary file in the same directory, is synced, then renamed.
package atomicfile

import (
	"fmt"
	"io"
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

// CheckNew returns an error naming the first of paths that exists, unless
// force is set: commands never overwrite an earlier result silently.
func CheckNew(force bool, paths ...string) error {
	if force {
		return nil
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s exists: pass --force to overwrite it, or choose another --out or --csv", p)
		}
	}
	return nil
}
