package results

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSummaryOlderFile: a summary.csv written before the status and
// not_sent columns existed still reads.
func TestSummaryOlderFile(t *testing.T) {
	t.Parallel()
	old := "conc,completed,failed,req_s,out_tok_s,total_tok_s,ttft_p50_ms,ttft_p99_ms,tpot_p50_ms,tpot_p99_ms,itl_p50_ms,e2el_p50_ms,decode_bs\n" +
		"8,30,2,1.50,2.00,3.00,4.00,5.00,6.00,7.00,8.00,9.00,8\n"
	rows, err := readSummary(strings.NewReader(old))
	require.NoError(t, err)
	require.Equal(t, []SummaryRow{{Conc: 8, Completed: 30, Failed: 2, ReqS: 1.5, OutTokS: 2, TotalTokS: 3, TTFTP50MS: 4, TTFTP99MS: 5,
		TPOTP50MS: 6, TPOTP99MS: 7, ITLP50MS: 8, E2ELP50MS: 9, DecodeBS: 8}}, rows)
}

// TestSummaryAgreesWithLevel: the row's status, failed and not_sent are
// the level result's, not a sum of them.
func TestSummaryAgreesWithLevel(t *testing.T) {
	t.Parallel()
	l := sampleLevel(false)
	l.Status, l.Failed, l.NotSent = StatusFailed, 3, 5
	var doc bytes.Buffer
	require.NoError(t, l.Write(&doc))
	back, err := parseLevel(doc.Bytes())
	require.NoError(t, err)
	rows, err := readSummary(bytes.NewReader(FormatSummary([]SummaryRow{SummaryRowOf(back)})))
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, back.Status, rows[0].Status)
	require.Equal(t, back.Failed, rows[0].Failed)
	require.Equal(t, back.NotSent, rows[0].NotSent)
	require.Equal(t, []any{"failed", 3, 5}, []any{rows[0].Status, rows[0].Failed, rows[0].NotSent})
}

// TestBenchNotes: the comment lines are skipped by benchfmt, and the
// results after them read back.
func TestBenchNotes(t *testing.T) {
	t.Parallel()
	rs := []BenchResult{BenchResultOf(sampleLevel(false), 1024, 50)}
	var b bytes.Buffer
	require.NoError(t, WriteBenchNotes(&b, []string{"conc=16 left out: failed (3 of 64 requests failed: 3 stall)", "two\nlines: joined"}))
	require.NoError(t, WriteBench(&b, rs))
	require.True(t, strings.HasPrefix(b.String(), "# conc=16 left out: failed (3 of 64 requests failed: 3 stall)\n# two lines: joined\n"), b.String())
	back, err := ReadBench(&b, "bench.txt")
	require.NoError(t, err)
	require.Equal(t, rs, back)
}
