package report

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/inventory"
)

// pos makes a position: kernel full name, short name, category, time.
func pos(kernel, short, cat string, us float64) inventory.Position {
	return inventory.Position{Kernel: kernel, ShortName: short, Category: cat, AvgUS: us, Count: 10}
}

func TestAlignLevels(t *testing.T) {
	attn := pos("pa_bf16<1>", "PA", "Paged attention (decode)", 10)
	gemm8 := pos("gemm<tile=8>", "GEMM", "Dense GEMM", 17)
	gemm16 := pos("gemm<tile=16>", "GEMM", "Dense GEMM", 17.5)
	up := pos("moe_up", "MoE_up", "MoE expert GEMM", 40)
	down := pos("moe_down", "MoE_down", "MoE expert GEMM", 20)
	fused := pos("fmoe", "MoE_fused", "MoE expert GEMM", 50)
	norm := pos("rmsnorm", "RMSNorm", "RMSNorm", 5)
	extra := pos("copy", "Copy", "Elementwise / copy", 3)
	for _, tt := range []struct {
		name    string
		levels  [][]inventory.Position
		rows    []string // per row: short names per level, "-" where absent
		changes []string
	}{
		{
			name:   "same kernels",
			levels: [][]inventory.Position{{attn, gemm8, norm}, {attn, gemm8, norm}},
			rows:   []string{"PA PA", "GEMM GEMM", "RMSNorm RMSNorm"},
		},
		{
			name:    "another instance of the same kernel",
			levels:  [][]inventory.Position{{attn, gemm8, norm}, {attn, gemm16, norm}},
			rows:    []string{"PA PA", "GEMM GEMM", "RMSNorm RMSNorm"},
			changes: []string{"1: old GEMM new GEMM"},
		},
		{
			name:    "two kernels fused into one of the same role",
			levels:  [][]inventory.Position{{attn, up, down, norm}, {attn, fused, norm}},
			rows:    []string{"PA PA", "MoE_up MoE_fused", "MoE_down -", "RMSNorm RMSNorm"},
			changes: []string{"1: old MoE_up+MoE_down new MoE_fused"},
		},
		{
			name:    "one kernel split into two",
			levels:  [][]inventory.Position{{attn, fused, norm}, {attn, up, down, norm}},
			rows:    []string{"PA PA", "MoE_fused MoE_up", "- MoE_down", "RMSNorm RMSNorm"},
			changes: []string{"1: old MoE_fused new MoE_up+MoE_down"},
		},
		{
			name:    "a kernel appears, then vanishes",
			levels:  [][]inventory.Position{{attn, norm}, {attn, extra, norm}, {attn, norm}},
			rows:    []string{"PA PA PA", "- Copy -", "RMSNorm RMSNorm RMSNorm"},
			changes: []string{"1: old  new Copy", "2: old Copy new "},
		},
		{
			name:   "a level without a table",
			levels: [][]inventory.Position{{attn, norm}, nil, {attn, norm}},
			rows:   []string{"PA - PA", "RMSNorm - RMSNorm"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rows, changes := alignLevels(tt.levels)
			var got []string
			for i, r := range rows {
				require.Equal(t, i, r.Pos)
				var cells []string
				for _, c := range r.Cells {
					if c == nil {
						cells = append(cells, "-")
					} else {
						cells = append(cells, c.ShortName)
					}
				}
				got = append(got, strings.Join(cells, " "))
			}
			require.Equal(t, tt.rows, got)
			var gotCh []string
			for _, c := range changes {
				var o, n []string
				for _, r := range c.Old {
					o = append(o, r.last(c.Level).ShortName)
				}
				for _, r := range c.New {
					n = append(n, r.Cells[c.Level].ShortName)
				}
				gotCh = append(gotCh, strings.Join([]string{string(rune('0' + c.Level)), ": old ", strings.Join(o, "+"), " new ", strings.Join(n, "+")}, ""))
			}
			require.Equal(t, tt.changes, gotCh)
		})
	}
}

func TestTrend(t *testing.T) {
	names := []string{"conc 4", "conc 8", "conc 16", "conc 32"}
	xs := []float64{4, 8, 16, 32}
	for _, tt := range []struct {
		name     string
		ys       []float64
		changes  []int
		category string
		want     string
	}{
		{"one level", []float64{5}, nil, "", "only at conc 4"},
		{"flat within 10%", []float64{10, 10.4, 10.2, 10.8}, nil, "", "flat"},
		{"flat within 0.5 µs", []float64{3, 3.4, 3.2, 3.1}, nil, "", "flat"},
		{"linear", []float64{20, 40, 80, 160}, nil, "", "linear in batch"},
		{"linear attention", []float64{10, 11, 13, 17}, nil, "Paged attention (decode)", "grows with context"},
		{"falls", []float64{40, 35, 25, 5}, nil, "", "falls with batch"},
		{"jump without a kernel change", []float64{10, 10, 30, 30.5}, nil, "", "step change at conc 16"},
		{"kernel changes with a jump", []float64{10, 11, 30, 31}, []int{2}, "", "step change at conc 16"},
		{"kernel changes without a jump", []float64{10, 10.2, 10.1, 10}, []int{2}, "", "flat"},
		// A kernel split at the third level after another instance at the
		// second: the step is where the split is, not at the first change
		// (the report once said "step change at conc 8" here).
		{"step located at the split", []float64{8.5, 10.1, 5.5, 5.5}, []int{1, 2}, "", "step change at conc 16"},
		// A smooth rise (R² 1.00) with another kernel instance on the way
		// is linear, not a step.
		{"smooth rise across a kernel change", []float64{7.8, 8.6, 10.1}, []int{2}, "", "linear in batch"},
		// Sxy 165, Sxx 460, Syy 718.75: R² = 165²/(460·718.75) = 0.08.
		{"curved", []float64{10, 40, 45, 30}, nil, "", "not linear (R² 0.08)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s series
			for i, y := range tt.ys {
				s.add(xs[i], y, i)
			}
			require.Equal(t, tt.want, trend(s, fitLine(s.xs, s.ys), tt.changes, tt.category, names))
		})
	}
}

func TestFitLine(t *testing.T) {
	f := fitLine([]float64{1, 2, 3}, []float64{3, 5, 7})
	require.InDelta(t, 2, f.Slope, 1e-12)
	require.InDelta(t, 1, f.Intercept, 1e-12)
	require.InDelta(t, 1, f.R2, 1e-12)
	f = fitLine([]float64{1, 2, 3}, []float64{1, 3, 2})
	require.InDelta(t, 0.5, f.Slope, 1e-12)
	require.InDelta(t, 0.25, f.R2, 1e-12) // SSres 1.5 of SStot 2
	f = fitLine([]float64{4, 4}, []float64{2, 2})
	require.Zero(t, f.Slope)
	require.Equal(t, 1.0, f.R2)
}
