package sim

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
)

// TestMarkTrace: with MarkTrace, every rank directory gets the capture
// trace of each graph batch size: the capture sizes when given, else the
// graphs the profiled decode steps replayed; eager steps capture nothing,
// and without MarkTrace no capture_traces directory is made.
func TestMarkTrace(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		cfg   Config
		bss   []int
		want  []string // per rank 0; rank 1 the same with rank1
		ranks int
	}{
		{"replayed sizes", Config{MarkTrace: true}, []int{3, 5, 3}, []string{"bs_3_q_1_rank0.json.gz", "bs_5_q_1_rank0.json.gz"}, 1},
		{"capture sizes", Config{MarkTrace: true, CudagraphCaptureSizes: []int{8, 2, 4}}, []int{3}, []string{"bs_2_q_1_rank0.json.gz", "bs_4_q_1_rank0.json.gz", "bs_8_q_1_rank0.json.gz"}, 1},
		{"tensor parallel", Config{MarkTrace: true, TP: 2}, []int{4}, []string{"bs_4_q_1_rank0.json.gz"}, 2},
		{"eager", Config{MarkTrace: true, EnforceEager: true}, []int{4}, nil, 1},
		{"not marked", Config{}, []int{4}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			c := tt.cfg
			c.Model, c.Layers, c.PythonPerStep = "m", 2, -1
			cfg, err := c.withDefaults()
			require.NoError(t, err)
			b, err := newSynthBackend(&cfg)
			require.NoError(t, err)
			at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()
			require.NoError(t, b.StartProfile(dir, at))
			for _, bs := range tt.bss {
				at += int64(time.Millisecond)
				b.Run(synth.Step{Kind: tracing.StepDecode, BS: bs, Tokens: bs, ContextTokens: 100 * bs, Start: at})
			}
			paths, err := b.StopProfile(at+int64(time.Second), true)(context.Background())
			require.NoError(t, err)
			require.Len(t, paths, tt.ranks)
			for r, p := range paths {
				ents, err := os.ReadDir(filepath.Join(p, tracing.CaptureDir))
				if tt.want == nil {
					require.ErrorIs(t, err, os.ErrNotExist)
					continue
				}
				require.NoError(t, err)
				var got []string
				for _, e := range ents {
					got = append(got, e.Name())
				}
				var want []string
				for _, w := range tt.want {
					bs, q, _, ok := tracing.ParseCaptureFileName(w)
					require.True(t, ok)
					want = append(want, tracing.CaptureFileName(bs, q, r))
				}
				require.ElementsMatch(t, want, got, "rank %d", r)
				c, err := tracing.LoadCapture(context.Background(), filepath.Join(p, tracing.CaptureDir, want[0]))
				require.NoError(t, err)
				ok, why := c.IsCapture()
				require.True(t, ok, why)
				// Two layers of 19 kernels, the embedding, the final norm and
				// lm_head; a TP rank also captures an all-reduce before each
				// of a layer's four norms.
				perLayer := 19
				if tt.cfg.TP > 1 {
					perLayer += 4
				}
				require.Len(t, c.Kernels, 2*perLayer+3)
			}
		})
	}
}
