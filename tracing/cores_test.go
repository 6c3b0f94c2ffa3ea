package tracing_test

import (
	"bytes"
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/tracing"
)

// The analysis does not depend on the number of cores: the kernel decode
// splits its work by GOMAXPROCS. A generated trace large enough for many
// kernel-log chunks, and the corpus traces, read alike with 1, 2, 4 and 8
// (not parallel: GOMAXPROCS is the process's).
func TestLoadSameOnAnyCores(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, bigTrace(&buf, 60, 62, 8))
	generated := buf.Bytes()
	load := func(name string, data []byte, path string) *tracing.Trace {
		var tr *tracing.Trace
		var err error
		if path != "" {
			tr, err = tracing.Load(context.Background(), path, tracing.Options{Ops: true})
		} else {
			tr, err = tracing.Read(context.Background(), bytes.NewReader(data), name, tracing.Options{Ops: true})
		}
		require.NoError(t, err, name)
		return tr
	}
	sameOnAnyCores := func(t *testing.T, name string, data []byte, path string) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		want := load(name, data, path)
		for _, procs := range []int{2, 4, 8} {
			runtime.GOMAXPROCS(procs)
			require.Equal(t, want, load(name, data, path), "%s with GOMAXPROCS=%d", name, procs)
		}
	}
	t.Run("generated", func(t *testing.T) {
		tr := load("generated", generated, "")
		require.Greater(t, len(tr.Kernels), 60_000, "enough kernels for several chunks of the kernel log")
		sameOnAnyCores(t, "generated", generated, "")
	})
	t.Run("corpus", func(t *testing.T) {
		paths, err := filepath.Glob(filepath.Join(corpus.Dir(t), "traces", "*.gz"))
		require.NoError(t, err)
		require.NotEmpty(t, paths)
		for _, p := range paths {
			sameOnAnyCores(t, filepath.Base(p), nil, p)
		}
	})
}
