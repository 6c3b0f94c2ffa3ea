package bench

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClassifyTrace: each engine's trace names, the rank they carry, and
// what is no trace.
func TestClassifyTrace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		ok, done, named bool
		frontEnd        bool
		rank            rankKey
	}{
		{"MiniMax-M2.5_ts_20260822_101500_123.pt.trace.json.gz", true, true, false, false, rankKey{}},
		{"MiniMax-M2.5_ts_20260822_101500_123.pt.trace.json", true, false, false, false, rankKey{}},
		{"vllm-instance-0-rank-3.1755000000000000000.pt.trace.json.gz", true, true, true, false, rankKey{tp: 3}},
		{"inst-world-rank-5-rank-1.17.pt.trace.json.gz", true, true, true, false, rankKey{tp: 1}},
		{"host_4242.async_llm.1755000000000000000.pt.trace.json.gz", true, true, false, true, rankKey{}},
		{"host_4242.1755000000000000000.pt.trace.json.gz", true, true, false, false, rankKey{}},
		{"1755000000.123456-TP-2.trace.json.gz", true, true, true, false, rankKey{tp: 2}},
		{"prof-abc-TP-1-DP-2-PP-3-EP-1-decode.trace.json.gz", true, true, true, false, rankKey{pp: 3, dp: 2, tp: 1}},
		{"profiler_out_0.txt", false, false, false, false, rankKey{}},
		{"1755.1-TP-0-memory.pickle", false, false, false, false, rankKey{}},
	} {
		got, ok := classifyTrace(tc.name)
		require.Equal(t, tc.ok, ok, tc.name)
		if !ok {
			continue
		}
		require.Equal(t, traceName{rank: tc.rank, named: tc.named, frontEnd: tc.frontEnd, done: tc.done}, got, tc.name)
	}
	for name, want := range map[string]rankKey{"rank_0": {}, "rank_3": {tp: 3}, "dp1_tp2": {dp: 1, tp: 2}, "pp1_rank_0": {pp: 1}, "pp2_dp1_tp3": {pp: 2, dp: 1, tp: 3}} {
		got, ok := parseRankDir(name)
		require.True(t, ok, name)
		require.Equal(t, want, got, name)
	}
	for _, name := range []string{"capture_traces", "rank_", "prefill", "rank_x"} {
		_, ok := parseRankDir(name)
		require.False(t, ok, name)
	}
}

// gz is a whole gzip stream of data.
func gz(t *testing.T, data string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, err := w.Write([]byte(data))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return b.Bytes()
}

// TestWaitExportLayouts: the wait returns every rank's trace in rank order
// (rank 10 after rank 2, pipeline stage 0 before 1), leaves out vLLM's
// API-process trace, and waits for a flat directory's ranks and for a
// file of stable size that is not a whole gzip stream yet.
func TestWaitExportLayouts(t *testing.T) {
	t.Parallel()
	whole := gz(t, `{"traceEvents":[]}`)
	for _, tc := range []struct {
		name  string
		files []string // written before the wait
		late  []string // written whole once the wait has polled a while
		cut   string   // written cut short, completed late
		ranks int
		want  []string
	}{
		{"atom", []string{"rank_0/a.pt.trace.json.gz", "rank_10/a.pt.trace.json.gz", "rank_2/a.pt.trace.json.gz"}, nil, "", 3,
			[]string{"rank_0/a.pt.trace.json.gz", "rank_2/a.pt.trace.json.gz", "rank_10/a.pt.trace.json.gz"}},
		{"atom pipeline", []string{"pp1_rank_0/a.pt.trace.json.gz", "pp0_rank_1/a.pt.trace.json.gz", "pp0_rank_0/a.pt.trace.json.gz"}, nil, "", 1,
			[]string{"pp0_rank_0/a.pt.trace.json.gz", "pp0_rank_1/a.pt.trace.json.gz", "pp1_rank_0/a.pt.trace.json.gz"}},
		{"atom rank 1 still gzipping", []string{"rank_0/a.pt.trace.json.gz"}, nil, "rank_1/a.pt.trace.json.gz", 2,
			[]string{"rank_0/a.pt.trace.json.gz", "rank_1/a.pt.trace.json.gz"}},
		{"vllm", []string{"host_9.async_llm.5.pt.trace.json.gz", "i-rank-1.5.pt.trace.json.gz"}, []string{"i-rank-0.5.pt.trace.json.gz"}, "", 2,
			[]string{"i-rank-0.5.pt.trace.json.gz", "i-rank-1.5.pt.trace.json.gz"}},
		{"sglang", []string{"17.5-TP-1.trace.json.gz"}, []string{"17.5-TP-0.trace.json.gz"}, "", 2,
			[]string{"17.5-TP-0.trace.json.gz", "17.5-TP-1.trace.json.gz"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			write := func(rel string, data []byte) {
				p := filepath.Join(dir, rel)
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, data, 0o644))
			}
			for _, f := range tc.files {
				write(f, whole)
			}
			if tc.cut != "" {
				write(tc.cut, whole[:len(whole)/2])
			}
			const poll = 10 * time.Millisecond
			done := make(chan struct{})
			go func() {
				time.Sleep(20 * poll) // long after a stable size would have been taken
				for _, f := range tc.late {
					write(f, whole)
				}
				if tc.cut != "" {
					write(tc.cut, whole)
				}
				close(done)
			}()
			got, err := waitExport(context.Background(), dir, map[string]int64{}, tc.ranks, 10*time.Second, poll, 10*time.Second, nil)
			require.NoError(t, err)
			select {
			case <-done:
			default:
				if len(tc.late) > 0 || tc.cut != "" {
					t.Fatalf("the wait returned %v before every rank's trace was whole", got)
				}
			}
			for i := range tc.want {
				tc.want[i] = filepath.Join(dir, tc.want[i])
			}
			require.Equal(t, tc.want, got)
		})
	}
}
