package sim

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/units"
	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
)

// TestCaptureSizes: with capture sizes, a decode batch replays the next
// captured graph (decode[bs=R/G], priced at G) and a batch above them all
// runs eagerly (eager_decode[...]); the trace reads back the real batch.
func TestCaptureSizes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg, err := Config{Model: "m", Layers: 2, PythonPerStep: -1, CudagraphCaptureSizes: []int{4, 2}}.withDefaults()
	require.NoError(t, err)
	b, err := newSynthBackend(&cfg)
	require.NoError(t, err)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()
	require.NoError(t, b.StartProfile(dir, at))
	bss := []int{1, 2, 3, 4, 6}
	for _, bs := range bss {
		at += int64(time.Millisecond)
		b.Run(synth.Step{Kind: tracing.StepDecode, BS: bs, Tokens: bs, ContextTokens: 100 * bs, Start: at})
	}
	paths, err := b.StopProfile(at+int64(time.Second), true)(context.Background())
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(paths[0], "*.pt.trace.json.gz"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	tr, err := tracing.Load(context.Background(), files[0], tracing.Options{})
	require.NoError(t, err)

	want := []struct {
		label  string
		padded int
		eager  bool
	}{
		{"decode[bs=1/2 ", 2, false},
		{"decode[bs=2 tok=2 d=2]", 0, false}, // a graph of the batch's own size: no padding shown
		{"decode[bs=3/4 ", 4, false},
		{"decode[bs=4 tok=4 d=4]", 0, false},
		{"eager_decode[bs=6 tok=6 ctx=[100, 100, 100]...+3]", 0, true},
	}
	require.Len(t, tr.Steps, len(want))
	for i, st := range tr.Steps {
		require.Equal(t, tracing.StepDecode, st.Kind, "step %d", i)
		require.Contains(t, st.Label, want[i].label, "step %d", i)
		require.Equal(t, bss[i], st.BS, "step %d: the real batch", i)
		require.Equal(t, want[i].padded, st.PaddedBS, "step %d", i)
		require.Equal(t, want[i].eager, st.Eager, "step %d", i)
		require.NotEmpty(t, st.Kernels, "step %d", i)
	}
	require.Len(t, tr.Graphs, 4, "the four padded steps replay graphs; the eager one does not")

	// Priced at the padded size: with the same seed, a bs=3 step costs what
	// an unpadded bs=4 step costs.
	price := func(sizes []int, bs int) units.Duration {
		cfg, err := Config{Model: "m", Layers: 2, CudagraphCaptureSizes: sizes}.withDefaults()
		require.NoError(t, err)
		b, err := newSynthBackend(&cfg)
		require.NoError(t, err)
		return b.Run(synth.Step{Kind: tracing.StepDecode, BS: bs, Tokens: bs, ContextTokens: 400})
	}
	require.Equal(t, price(nil, 4), price([]int{4}, 3))
	require.NotEqual(t, price(nil, 4), price(nil, 3))
}

func TestCaptureSize(t *testing.T) {
	t.Parallel()
	sizes := []int{1, 2, 4, 8, 16, 32, 48, 64, 128, 256}
	for bs, want := range map[int]int{1: 1, 3: 4, 8: 8, 33: 48, 200: 256, 257: 0} {
		require.Equal(t, want, captureSize(sizes, bs), "bs %d", bs)
	}
}
