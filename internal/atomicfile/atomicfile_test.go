package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteKeepsModeAndLeavesNothingOnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "f.csv")
	require.NoError(t, Write(p, []byte("a\n")))
	st, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), st.Mode().Perm())

	require.NoError(t, os.Chmod(p, 0o600))
	require.NoError(t, Write(p, []byte("b\n")))
	st, err = os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "a replaced file keeps its mode")

	err = WriteFunc(p, func(w io.Writer) error { _, _ = w.Write([]byte("half")); return errors.New("boom") })
	require.ErrorContains(t, err, "boom")
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "b\n", string(data), "a failed write leaves the old file")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left")
}

func TestCheckNew(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "x")
	require.NoError(t, CheckNew(false, p, ""))
	require.NoError(t, os.WriteFile(p, nil, 0o644))
	require.ErrorContains(t, CheckNew(false, filepath.Join(dir, "y"), p), p+" exists: pass --force")
	require.NoError(t, CheckNew(true, p))
}
