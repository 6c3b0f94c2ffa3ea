//go:build unix

package atomicfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A temporary file left by a writer that was killed is removed by the next
// write in its directory; one of a live writer, and files this package does
// not make, are left alone.
func TestWriteRemovesStaleTemporaryFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	stale := filepath.Join(dir, tempPrefix("out.json", dead.Process.Pid)+"123")
	live := filepath.Join(dir, tempPrefix("out.json", os.Getppid())+"456")
	other := filepath.Join(dir, ".out.json.tmp-abc")
	for _, p := range []string{stale, live, other} {
		require.NoError(t, os.WriteFile(p, []byte("half"), 0o644))
	}
	require.NoError(t, Write(filepath.Join(dir, "new.csv"), []byte("a\n")))
	_, err := os.Stat(stale)
	require.True(t, os.IsNotExist(err), "the killed writer's file is removed")
	for _, p := range []string{live, other} {
		_, err := os.Stat(p)
		require.NoError(t, err, "kept: %s", p)
	}
	pid, ok := tempPID(filepath.Base(live))
	require.True(t, ok)
	require.Equal(t, os.Getppid(), pid)
}
