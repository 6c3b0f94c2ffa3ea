//go:build unix

package dirlock

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLock: a second Lock of a directory fails at once naming the holder,
// and succeeds once the first lets go.
func TestLock(t *testing.T) {
	dir := t.TempDir()
	release, err := Lock(dir, "run --resume "+dir)
	require.NoError(t, err)
	_, err = Lock(dir, "run --resume "+dir)
	require.ErrorIs(t, err, ErrHeld)
	require.ErrorContains(t, err, "pid "+strconv.Itoa(os.Getpid()))
	require.ErrorContains(t, err, "profile-model run --resume "+dir)
	release()
	require.NoFileExists(t, filepath.Join(dir, Name))
	release, err = Lock(dir, "report")
	require.NoError(t, err)
	release()
}
