package analysis

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/tracing"
)

func TestRankOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path string
		want RankID
	}{
		{"traces/rank_3/M_ts_20260101_000000_001.pt.trace.json.gz", RankID{-1, -1, 3}},
		{"traces/dp1_tp2/M.pt.trace.json.gz", RankID{-1, 1, 2}},
		{"traces/pp1_dp0_tp7/M.pt.trace.json.gz", RankID{1, 0, 7}},
		{"out/rank-12.json", RankID{-1, -1, 12}},
		{"traces/Llama-3-8B.pt.trace.json.gz", RankID{-1, -1, -1}},
		{"traces/rank_0/tp2.json", RankID{-1, -1, 2}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, RankOf(tt.path), tt.path)
	}
}

// RankFiles finds the traces of rank directories and orders them by rank,
// not by name (rank_10 after rank_2).
func TestRankFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, r := range []string{"rank_10", "rank_2", "rank_0"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, r), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, r, "m.pt.trace.json.gz"), nil, 0o644))
	}
	files, err := RankFiles([]string{dir})
	require.NoError(t, err)
	require.Equal(t, []string{
		filepath.Join(dir, "rank_0", "m.pt.trace.json.gz"),
		filepath.Join(dir, "rank_2", "m.pt.trace.json.gz"),
		filepath.Join(dir, "rank_10", "m.pt.trace.json.gz"),
	}, files)
	_, err = RankFiles([]string{t.TempDir()})
	require.ErrorContains(t, err, "no trace")

	// A folder of capture traces alone (or its rank directory) says so.
	caps := filepath.Join(t.TempDir(), "rank_0", tracing.CaptureDir)
	require.NoError(t, os.MkdirAll(caps, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(caps, "bs_8_q_1_rank0.json.gz"), nil, 0o644))
	for _, d := range []string{caps, filepath.Dir(caps)} {
		_, err = RankFiles([]string{d})
		require.ErrorContains(t, err, d+": only capture traces (capture_traces/), no execution trace")
	}
}

func FuzzRankOf(f *testing.F) {
	for _, s := range []string{"rank_3/x.json", "pp1_dp2_tp3", "rank99999999999999999999", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		id := RankOf(path)
		for _, v := range []int{id.PP, id.DP, id.TP} {
			if v < -1 {
				t.Fatalf("RankOf(%q) = %+v", path, id)
			}
		}
		_ = id.String()
	})
}
