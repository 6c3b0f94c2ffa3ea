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

// TestCheckOutputs: an input is never an output, even with force (by its
// name, another name, a hard link or a symbolic link to it); without force
// no existing file or symbolic link (dangling or not) is an output.
func TestCheckOutputs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.json")
	require.NoError(t, os.WriteFile(in, []byte("{}"), 0o644))
	hard := filepath.Join(dir, "hard.json")
	require.NoError(t, os.Link(in, hard))
	soft := filepath.Join(dir, "soft.json")
	require.NoError(t, os.Symlink(in, soft))
	dangling := filepath.Join(dir, "dangling.json")
	require.NoError(t, os.Symlink(filepath.Join(dir, "nowhere"), dangling))
	fresh := filepath.Join(dir, "fresh.json")
	for _, tc := range []struct {
		name  string
		force bool
		out   string
		want  error // nil: allowed
	}{
		{"the input", true, in, ErrInput},
		{"the input by another name", true, filepath.Join(dir, ".", "sub", "..", "in.json"), ErrInput},
		{"a hard link to the input", true, hard, ErrInput},
		{"a symbolic link to the input", true, soft, ErrInput},
		{"a dangling link", false, dangling, ErrExists},
		{"a dangling link, forced", true, dangling, nil},
		{"a new file", false, fresh, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckOutputs(tc.force, []string{in}, tc.out)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}
	other := filepath.Join(dir, "other.json")
	require.NoError(t, os.WriteFile(other, nil, 0o644))
	require.ErrorContains(t, CheckOutputs(false, []string{in}, other), other+" exists: pass --force")
	require.ErrorContains(t, CheckOutputs(false, nil, dangling), "symbolic link: it is not followed")
	require.NoError(t, CheckOutputs(true, []string{in}, other))
}
