package inventory

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLayerCSVRoundTrip(t *testing.T) {
	t.Parallel()
	rows := []LayerRow{
		{Pos: 0, ShortName: "PA (paged_attn)", Kernel: "aiter::pa_bf16_x", AvgUS: 10.64, StdUS: 0.55, MinUS: 9.2, MaxUS: 13.5, Pct: 4.2, Count: 1342},
		{Pos: 1, ShortName: "GEMM_FP8 (CK dense)", Kernel: "ck::kernel<a, b>(c, d)", AvgUS: 17.9, StdUS: 0.6, MinUS: 16.8, MaxUS: 21.1, Pct: 7.1, Count: 1342},
	}
	text := string(FormatLayerCSV(rows))
	require.Equal(t, "pos,short_name,kernel,avg_us,std_us,min_us,max_us,pct,count\n"+
		"0,PA (paged_attn),aiter::pa_bf16_x,10.6,0.6,9.2,13.5,4.2,1342\n"+
		"1,GEMM_FP8 (CK dense),\"ck::kernel<a, b>(c, d)\",17.9,0.6,16.8,21.1,7.1,1342\n", text)
	back, err := ParseLayerCSV(strings.NewReader(text))
	require.NoError(t, err)
	require.Len(t, back, 2)
	require.Equal(t, rows[1].Kernel, back[1].Kernel)
	require.InDelta(t, 10.6, back[0].AvgUS, 1e-9)
}

func TestLayerCSVErrors(t *testing.T) {
	t.Parallel()
	header := strings.Join(layerHeader, ",") + "\n"
	for _, tt := range []struct{ name, in, want string }{
		{"empty", "", "line 1: not a per-layer CSV"},
		{"kernels CSV", "kernel,count,total_us,avg_us,pct\nx,1,2,3,4\n", "line 1: not a per-layer CSV"},
		{"short row", header + "0,a,b,1,2\n", "line 2: 5 fields, want 9"},
		{"not a number", header + "0,a,b,x,1,1,1,1,1\n", `line 2: column avg_us: "x" is not a number`},
		{"no rows", header, "no rows"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseLayerCSV(strings.NewReader(tt.in))
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// The compatible CSV is written as Python's csv module writes it: CRLF,
// quotes only around a comma, a quote or a line break, quotes doubled, a
// leading space left alone (Go's encoding/csv would quote it).
func TestFormatCompatLayerCSVQuoting(t *testing.T) {
	t.Parallel()
	rows := []LayerRow{
		{Pos: 0, ShortName: "PA (paged_attn)", Kernel: "aiter::pa<1, 2>", AvgUS: 10.25, StdUS: 0.05, MinUS: 9, MaxUS: 11, Pct: 50, Count: 3},
		{Pos: 1, ShortName: " lead", Kernel: `say "hi"`, AvgUS: 0.04, Count: 3},
	}
	want := "pos,short_name,kernel,avg_us,std_us,min_us,max_us,pct,count\r\n" +
		"0,PA (paged_attn),\"aiter::pa<1, 2>\",10.2,0.1,9.0,11.0,50.0,3\r\n" +
		"1, lead,\"say \"\"hi\"\"\",0.0,0.0,0.0,0.0,0.0,3\r\n"
	require.Equal(t, want, string(formatCompatLayerCSV(rows)))
	back, err := ParseLayerCSV(strings.NewReader(want))
	require.NoError(t, err)
	require.Equal(t, `say "hi"`, back[1].Kernel)
}
