package profiling

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory"
)

// A small layer of three kernels and its inventory, in the files' formats.
var (
	goldenLayer = []inventory.LayerRow{
		{Pos: 0, ShortName: "PA", Kernel: "pa_bf16_kernel", AvgUS: 10},
		{Pos: 1, ShortName: "MoE_GEMM", Kernel: "kernel_moe_gemm<1>", AvgUS: 60},
		{Pos: 2, ShortName: "RoPE", Kernel: "kn_entry_2c_sbhd", AvgUS: 5},
	}
	goldenKernels = []kernelRow{
		{Kernel: "kernel_moe_gemm<1>", ShortName: "MoE_GEMM", Category: "MoE expert GEMM", Provider: "CK", AvgUS: 60},
		{Kernel: "pa_bf16_kernel", ShortName: "PA", Category: "Paged attention (decode)", Provider: "aiter ASM", AvgUS: 10},
		{Kernel: "kn_entry_2c_sbhd", ShortName: "RoPE", Category: "RoPE", Provider: "aiter", AvgUS: 5},
	}
)

func TestCompareLayer(t *testing.T) {
	t.Parallel()
	with := func(f func(rows []inventory.LayerRow) []inventory.LayerRow) []inventory.LayerRow {
		return f(append([]inventory.LayerRow(nil), goldenLayer...))
	}
	cases := []struct {
		name     string
		measured []inventory.LayerRow
		want     []Mismatch
	}{
		{name: "same", measured: goldenLayer},
		{name: "times within tolerance", measured: with(func(r []inventory.LayerRow) []inventory.LayerRow {
			r[0].AvgUS, r[1].AvgUS, r[2].AvgUS = 11.9, 51.5, 3.1 // +19% but < 2 µs; -14%; -1.9 µs
			return r
		})},
		{name: "one kernel 30% slower", measured: with(func(r []inventory.LayerRow) []inventory.LayerRow {
			r[1].AvgUS = 78
			return r
		}), want: []Mismatch{{File: "f", Pos: 1, ShortName: "MoE_GEMM", Kernel: "kernel_moe_gemm<1>", What: "avg_us", Golden: "60", Measured: "78", Note: "+30.0%; allowed ±9 µs: 15% or 2 µs"}}},
		{name: "renamed kernel", measured: with(func(r []inventory.LayerRow) []inventory.LayerRow {
			r[2].Kernel = "kn_entry_2c_sbhd_v2"
			return r
		}), want: []Mismatch{{File: "f", Pos: 2, ShortName: "RoPE", Kernel: "kn_entry_2c_sbhd", What: "kernel", Golden: "kn_entry_2c_sbhd", Measured: "kn_entry_2c_sbhd_v2"}}},
		{name: "kernel added mid-layer: one mismatch, no shift", measured: with(func(r []inventory.LayerRow) []inventory.LayerRow {
			out := []inventory.LayerRow{r[0], r[1], {Pos: 2, ShortName: "MoE_sort", Kernel: "MoeSorting", AvgUS: 7}, r[2]}
			out[3].Pos = 3
			return out
		}), want: []Mismatch{{File: "f", Pos: 2, ShortName: "MoE_sort", Kernel: "MoeSorting", What: "added"}}},
		{name: "kernel dropped", measured: with(func(r []inventory.LayerRow) []inventory.LayerRow {
			return []inventory.LayerRow{r[0], r[2]}
		}), want: []Mismatch{{File: "f", Pos: 1, ShortName: "MoE_GEMM", Kernel: "kernel_moe_gemm<1>", What: "missing"}}},
		{name: "short name changed", measured: with(func(r []inventory.LayerRow) []inventory.LayerRow {
			r[0].ShortName = "PA (paged_attn)"
			return r
		}), want: []Mismatch{{File: "f", Pos: 0, ShortName: "PA", Kernel: "pa_bf16_kernel", What: "short_name", Golden: "PA", Measured: "PA (paged_attn)"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := compareLayer("f", goldenLayer, tc.measured, DefaultTolerance)
			if d := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("mismatches (-want +got):\n%s", d)
			}
		})
	}
}

func TestCompareKernels(t *testing.T) {
	t.Parallel()
	with := func(f func(rows []kernelRow) []kernelRow) []kernelRow {
		return f(append([]kernelRow(nil), goldenKernels...))
	}
	cases := []struct {
		name     string
		measured []kernelRow
		want     []Mismatch
	}{
		{name: "same, in another order", measured: []kernelRow{goldenKernels[2], goldenKernels[0], goldenKernels[1]}},
		{name: "renamed: missing and added", measured: with(func(r []kernelRow) []kernelRow {
			r[2].Kernel = "kn_entry_2c_sbhd_v2"
			return r
		}), want: []Mismatch{
			{File: "f", Pos: -1, ShortName: "RoPE", Kernel: "kn_entry_2c_sbhd", What: "missing"},
			{File: "f", Pos: -1, ShortName: "RoPE", Kernel: "kn_entry_2c_sbhd_v2", What: "added"},
		}},
		{name: "category and provider", measured: with(func(r []kernelRow) []kernelRow {
			r[1].Category, r[1].Provider = "Other", "PyTorch"
			return r
		}), want: []Mismatch{
			{File: "f", Pos: -1, ShortName: "PA", Kernel: "pa_bf16_kernel", What: "category", Golden: "Paged attention (decode)", Measured: "Other"},
			{File: "f", Pos: -1, ShortName: "PA", Kernel: "pa_bf16_kernel", What: "provider", Golden: "aiter ASM", Measured: "PyTorch"},
		}},
		{name: "faster beyond tolerance", measured: with(func(r []kernelRow) []kernelRow {
			r[0].AvgUS = 42
			return r
		}), want: []Mismatch{{File: "f", Pos: -1, ShortName: "MoE_GEMM", Kernel: "kernel_moe_gemm<1>", What: "avg_us", Golden: "60", Measured: "42", Note: "-30.0%; allowed ±9 µs: 15% or 2 µs"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := compareKernels("f", goldenKernels, tc.measured, DefaultTolerance)
			if d := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("mismatches (-want +got):\n%s", d)
			}
		})
	}
}

func TestMismatchString(t *testing.T) {
	t.Parallel()
	long := "ck::kernel_moe_gemm<" + strings.Repeat("ck::Sequence<16, 16, 1>, ", 20) + "Variant1>(Argument)"
	long2 := strings.Replace(long, "Variant1", "Variant2", 1)
	cases := []struct {
		m    Mismatch
		want string
	}{
		{Mismatch{File: "conc8_layer.csv", Pos: 9, ShortName: "MoE_GEMM (CK)", Kernel: "k", What: "avg_us", Golden: "66.9", Measured: "87", Note: "+30.0%; allowed ±10.035 µs: 15% or 2 µs"},
			"conc8_layer.csv pos 9: MoE_GEMM (CK) [k]: avg 87 µs, golden 66.9 µs (+30.0%; allowed ±10.035 µs: 15% or 2 µs)"},
		{Mismatch{File: "conc8_kernels.csv", Pos: -1, ShortName: "RoPE", Kernel: "kn_v2", What: "added"},
			"conc8_kernels.csv: RoPE [kn_v2]: measured, not in the golden"},
		{Mismatch{File: "conc8_layer.csv", Pos: 3, ShortName: "MoE_GEMM (CK)", Kernel: long, What: "kernel", Golden: long, Measured: long2},
			"conc8_layer.csv pos 3: MoE_GEMM (CK): another kernel runs here: golden […<16, 16, 1>, Variant1>(Argument)], measured […<16, 16, 1>, Variant2>(Argument)]"},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, tc.m.String())
	}
}

// writeLevel writes a level's compared files as Run would.
func writeLevel(t *testing.T, dir string, bs int, layer []inventory.LayerRow, kernels []kernelRow) {
	t.Helper()
	f := results.InDir(dir, bs)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(f.Layer, inventory.FormatLayerCSV(layer), 0o644))
	var b strings.Builder
	// The columns of an inventory written before category_source was added.
	b.WriteString("kernel,short_name,category,provider,count,total_us,avg_us,min_us,max_us,std_us,pct\n")
	for _, k := range kernels {
		fmt.Fprintf(&b, "%s,%s,%s,%s,10,100.000,%.3f,1.000,2.000,0.100,10.00\n", k.Kernel, k.ShortName, k.Category, k.Provider, k.AvgUS)
	}
	require.NoError(t, os.WriteFile(f.Kernels, []byte(b.String()), 0o644))
}

func TestCompareLevelFiles(t *testing.T) {
	t.Parallel()
	golden, level := filepath.Join(t.TempDir(), "golden"), t.TempDir()
	writeLevel(t, level, 8, goldenLayer, goldenKernels)
	wrote, err := WriteGolden(golden, level, 8)
	require.NoError(t, err)
	require.Equal(t, GoldenFiles(golden, 8), wrote)
	bss, err := GoldenBatchSizes(golden)
	require.NoError(t, err)
	require.Equal(t, []int{8}, bss)

	ms, err := CompareLevel(golden, level, 8, DefaultTolerance)
	require.NoError(t, err)
	require.Empty(t, ms, "a level matches the goldens written from it")

	slow := append([]inventory.LayerRow(nil), goldenLayer...)
	slow[1].AvgUS *= 1.3
	writeLevel(t, level, 8, slow, goldenKernels)
	ms, err = CompareLevel(golden, level, 8, DefaultTolerance)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	require.Equal(t, "conc8_layer.csv", ms[0].File)

	_, err = CompareLevel(golden, level, 16, DefaultTolerance)
	require.ErrorIs(t, err, os.ErrNotExist, "no golden of that batch size")

	require.NoError(t, os.WriteFile(results.InDir(level, 8).Kernels, []byte("kernel,count\nk,1\n"), 0o644))
	_, err = CompareLevel(golden, level, 8, DefaultTolerance)
	require.ErrorContains(t, err, "conc8_kernels.csv: line 1: not a kernel inventory: no short_name column")
}

// TestGoldenCatchesRegression runs the corpus-table sweep at concurrency 8
// with its tables modified as a bad release would change them — the
// gate-up MoE GEMM 30% slower, the RoPE kernel replaced by another — and
// checks that the golden check fails naming exactly those two kernels.
func TestGoldenCatchesRegression(t *testing.T) {
	if *update {
		t.Skip("-update rewrites the goldens; the regression check runs against them without it")
	}
	t.Parallel()
	s := sweepNamed(t, "sim-atom-corpus-tables")
	o := sweepOptions(t, s, []int{8}) // skips without the corpus
	dir := t.TempDir()
	changed := map[string]bool{} // every name of the two kernels, before and after
	var slowed, renamed, renamedTo string
	var tables []string
	for _, p := range s.SimKernels {
		rows, err := inventory.ReadLayerCSV(filepath.Join(o.Corpus, strings.TrimPrefix(p, CorpusPrefix)))
		require.NoError(t, err)
		gemm, rope := -1, -1
		for i, r := range rows {
			switch {
			case gemm < 0 && r.ShortName == "MoE_GEMM (CK)":
				gemm = i
			case strings.Contains(r.Kernel, "kn_entry_2c_sbhd_cached_indirect_inplace"):
				rope = i
			}
		}
		require.True(t, gemm >= 0 && rope >= 0, "%s: a MoE GEMM and the RoPE kernel", p)
		g := &rows[gemm]
		g.AvgUS, g.StdUS, g.MinUS, g.MaxUS = g.AvgUS*1.3, g.StdUS*1.3, g.MinUS*1.3, g.MaxUS*1.3
		slowed, renamed = g.Kernel, rows[rope].Kernel
		renamedTo = strings.Replace(renamed, "kn_entry_2c_sbhd_cached_indirect_inplace", "kn_entry_2c_sbhd_cached_indirect_inplace_v2", 1)
		rows[rope].Kernel = renamedTo
		changed[slowed], changed[renamed], changed[renamedTo] = true, true, true
		out := filepath.Join(dir, filepath.Base(p))
		require.NoError(t, os.WriteFile(out, inventory.FormatLayerCSV(rows), 0o644))
		tables = append(tables, out)
	}
	bad := *s
	bad.SimKernels = tables
	res := runSweep(t, &bad, o)
	li := levelOf(t, res, 8)
	require.Equal(t, 8, li.DecodeBS)
	ms, err := CompareLevel(s.GoldenDir(), filepath.Join(res.Dir, li.Dir), li.DecodeBS, s.Tolerance)
	require.NoError(t, err)
	var report strings.Builder
	FormatMismatches(&report, ms)
	t.Logf("the golden check of the regressed level reports:\n%s", report.String())

	type key struct{ file, what, kernel string }
	got := map[key]bool{}
	for _, m := range ms {
		require.True(t, changed[m.Kernel], "only the two changed kernels differ; got %s", m)
		got[key{m.File, m.What, m.Kernel}] = true
		if m.What == "avg_us" {
			require.Contains(t, m.Note, "+", "slower: %s", m)
		}
	}
	for _, want := range []key{
		{"conc8_layer.csv", "avg_us", slowed},     // the layer position of the slowed GEMM
		{"conc8_kernels.csv", "avg_us", slowed},   // and its inventory row
		{"conc8_layer.csv", "kernel", renamed},    // another kernel at RoPE's position
		{"conc8_kernels.csv", "added", renamedTo}, // a kernel the golden does not have
		// (The old RoPE kernel stays in the inventory: prefill steps run it.)
	} {
		require.True(t, got[want], "the report names %+v:\n%s", want, report.String())
	}
	require.Contains(t, report.String(), "MoE_GEMM (CK)")
	require.Contains(t, report.String(), "kn_entry_2c_sbhd_cached_indirect_inplace_v2")
}
