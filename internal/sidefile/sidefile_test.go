package sidefile

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.json")
	require.NoError(t, os.WriteFile(ok, []byte(`{"a": 1}`), 0o644))
	data, err := Read(context.Background(), ok, "the model config", Small)
	require.NoError(t, err)
	require.Equal(t, `{"a": 1}`, string(data))

	_, err = Read(context.Background(), ok, "the model config", 4)
	require.ErrorContains(t, err, "the model config "+ok+": 8 bytes, more than the 4 bytes")
	_, err = Read(context.Background(), dir, "the model config", Small)
	require.ErrorIs(t, err, ErrNotRegular)
	require.ErrorContains(t, err, "a directory")
	_, err = Read(context.Background(), filepath.Join(dir, "none"), "the model config", Small)
	require.ErrorIs(t, err, os.ErrNotExist)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Read(ctx, ok, "the model config", Small)
	if err != nil { // the read may win the race with the cancelled context
		require.ErrorIs(t, err, context.Canceled)
	}
	require.Equal(t, "64 MiB", Size(Small))
	require.Equal(t, "2.8 GiB", Size(3e9))
}

// TestHubSnapshot: refs/main names one directory of snapshots/, or
// nothing: "../../.." once led a run to a config outside the repository.
func TestHubSnapshot(t *testing.T) {
	t.Parallel()
	repo := filepath.Join(t.TempDir(), "models--org--m")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "refs"), 0o755))
	for ref, want := range map[string]string{
		"abc123\n": filepath.Join(repo, "snapshots", "abc123"),
		"../../..": "", "..": "", ".": "", "a/b": "", `a\b`: "", "": "", "  \n": "",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(ref), 0o644))
		got, ok := HubSnapshot(context.Background(), repo)
		require.Equal(t, want, got, "refs/main %q", ref)
		require.Equal(t, want != "", ok)
	}
}
