package analysis_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/tracing"
)

// FindCapture picks the capture of the graph batch size and the trace's
// rank, the plain-decode (smallest q) one first, the older name last.
func TestFindCapture(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for r := range 2 {
		caps := filepath.Join(dir, fmt.Sprintf("rank_%d", r), tracing.CaptureDir)
		require.NoError(t, os.MkdirAll(caps, 0o755))
		for _, n := range []string{"bs_8_q_2_rank%d.json.gz", "bs_8_q_1_rank%d.json.gz", "bs_16_rank%d.json.gz", "bs_32_q_1_rank%d.json.gz", "bs_32_rank%d.json.gz", "notes%d.txt"} {
			require.NoError(t, os.WriteFile(filepath.Join(caps, fmt.Sprintf(n, r)), nil, 0o644))
		}
	}
	trace0 := filepath.Join(dir, "rank_0", "m_ts_20260101_120000_1.pt.trace.json.gz")
	trace1 := filepath.Join(dir, "rank_1", "m_ts_20260101_120000_1.pt.trace.json.gz")
	at := func(rank, name string) string { return filepath.Join(dir, rank, tracing.CaptureDir, name) }
	tests := []struct {
		name  string
		trace string
		bs    int
		want  string
	}{
		{"plain decode first", trace0, 8, at("rank_0", "bs_8_q_1_rank0.json.gz")},
		{"the trace's rank", trace1, 8, at("rank_1", "bs_8_q_1_rank1.json.gz")},
		{"older name", trace0, 16, at("rank_0", "bs_16_rank0.json.gz")},
		{"current name before the older", trace1, 32, at("rank_1", "bs_32_q_1_rank1.json.gz")},
		{"no graph of that size", trace0, 4, ""},
		{"no graph", trace0, 0, ""},
		{"no capture directory", filepath.Join(dir, "x.json.gz"), 8, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, analysis.FindCapture(tt.trace, tt.bs))
		})
	}
}

// CaptureMissing names what a capture folder holds when it has nothing for
// the replayed graph batch size, and stays quiet otherwise.
func TestCaptureMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	caps := filepath.Join(dir, "rank_0", tracing.CaptureDir)
	require.NoError(t, os.MkdirAll(caps, 0o755))
	for _, n := range []string{"bs_16_q_1_rank0.json.gz", "bs_4_rank0.json.gz", "bs_16_q_2_rank0.json.gz", "bs_8_q_1_rank1.json.gz"} {
		require.NoError(t, os.WriteFile(filepath.Join(caps, n), nil, 0o644))
	}
	empty := filepath.Join(dir, "rank_1", tracing.CaptureDir)
	require.NoError(t, os.MkdirAll(empty, 0o755))
	trace0 := filepath.Join(dir, "rank_0", "m_ts_20260101_120000_1.pt.trace.json.gz")
	trace1 := filepath.Join(dir, "rank_1", "m_ts_20260101_120000_1.pt.trace.json.gz")
	tests := []struct {
		name  string
		trace string
		bs    int
		want  string
	}{
		{"other sizes only", trace0, 8, caps + " holds captures of graph batch sizes 4, 16 (rank 0), none of graph batch size 8"},
		{"an empty folder", trace1, 8, empty + " holds no capture trace of this rank (rank 1), none of graph batch size 8"},
		{"the size is there", trace0, 16, ""},
		{"no graph", trace0, 0, ""},
		{"no capture folder", filepath.Join(dir, "x.json.gz"), 8, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := analysis.CaptureMissing(tt.trace, tt.bs)
			if tt.want == "" {
				require.Empty(t, got)
				return
			}
			require.Contains(t, got, tt.want)
		})
	}
}
