package kernelmodel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/internal/units"
)

// TestDefaultFollowsCorpusTables: at each table's batch size, the
// built-in model has the table's kernels in the table's order, and its
// expected times are within the fit error of the measured averages.
func TestDefaultFollowsCorpusTables(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(corpus.Dir(t), "atom-minimax-m2.5")
	m := Default()
	for _, bs := range []int{4, 8, 16, 32} {
		rows, err := readLayerCSV(filepath.Join(dir, fmt.Sprintf("conc%d_layer.csv", bs)))
		if err != nil {
			t.Fatal(err)
		}
		layer := m.DecodeLayer(bs, 0)
		if len(layer) != len(rows) {
			t.Fatalf("bs %d: model has %d positions, conc%d_layer.csv %d", bs, len(layer), bs, len(rows))
		}
		var sumModel, sumTable float64
		for i, r := range rows {
			lp := layer[i]
			if lp.Kernel != r.Kernel || lp.ShortName != r.ShortName {
				t.Errorf("bs %d pos %d: model %q (%s), table %q (%s)", bs, i, lp.Kernel[:min(40, len(lp.Kernel))], lp.ShortName, r.Kernel[:min(40, len(r.Kernel))], r.ShortName)
			}
			// Launch-bound kernels are fitted to a mean; the MoE GEMMs to
			// their expert count. 10% or 1 µs covers the fit residuals.
			if d := math.Abs(lp.AvgUS - r.AvgUS); d > math.Max(1, 0.1*r.AvgUS) {
				t.Errorf("bs %d pos %d %s: model avg %.1f µs, table %.1f µs", bs, i, r.ShortName, lp.AvgUS, r.AvgUS)
			}
			sumModel += lp.AvgUS
			sumTable += r.AvgUS
		}
		if math.Abs(sumModel-sumTable) > 0.05*sumTable {
			t.Errorf("bs %d: layer time %.1f µs, table %.1f µs (more than 5%% apart)", bs, sumModel, sumTable)
		}
	}
}

func TestDefaultScaling(t *testing.T) {
	t.Parallel()
	m := Default()
	find := func(layer []LayerPosition, short string) float64 {
		for _, p := range layer {
			if p.ShortName == short {
				return p.AvgUS
			}
		}
		t.Fatalf("no %s position", short)
		return 0
	}
	small, large := m.DecodeLayer(4, 0), m.DecodeLayer(64, 0)
	if g4, g64 := find(small, "MoE_GEMM (CK)"), find(large, "MoE_GEMM (CK)"); g64 < 2*g4 {
		t.Errorf("MoE GEMM: %.1f µs at bs 4, %.1f at bs 64; want it to grow with batch size", g4, g64)
	}
	if r4, r64 := find(small, "RoPE"), find(large, "RoPE"); math.Abs(r64-r4) > 0.5 {
		t.Errorf("RoPE: %.1f µs at bs 4, %.1f at bs 64; want it launch-bound (flat)", r4, r64)
	}
	short, long := find(m.DecodeLayer(8, 8*1000), "PA (paged_attn)"), find(m.DecodeLayer(8, 8*8000), "PA (paged_attn)")
	if long < 2.5*short {
		t.Errorf("paged attention: %.1f µs at 1k context, %.1f at 8k; want it to grow with context", short, long)
	}
}

func TestDecodeAndPrefillSteps(t *testing.T) {
	t.Parallel()
	m := Default()
	rng := rand.New(rand.NewPCG(1, 2))
	dec := m.DecodeStep(8, 8*1000, rng)
	layer := m.DecodeLayer(8, 8*1000)
	if want := 2 + 1 + m.Layers*len(layer) + 2 + 1; len(dec) != want {
		t.Fatalf("decode step has %d kernels, want %d", len(dec), want)
	}
	sections := map[Section]int{}
	for _, r := range dec {
		sections[r.Section]++
		if r.Dur <= 0 || r.Gap < 0 {
			t.Fatalf("kernel %s: dur %v µs, gap %v µs", r.ShortName, r.Dur, r.Gap)
		}
	}
	if sections[SectionPrep] != 2 || sections[SectionSample] != 1 || !strings.Contains(dec[len(dec)-1].Name, "mix_sample") {
		t.Errorf("decode sections = %v, last kernel %q; want 2 prep, the sampler last", sections, dec[len(dec)-1].Name)
	}
	var total units.Duration
	for _, r := range dec {
		total += r.Gap + r.Dur
	}
	if StepTime(dec) != total {
		t.Errorf("StepTime = %v µs, sum of gaps and durations %v µs", StepTime(dec), total)
	}
	pre := m.PrefillStep(8, 8000, rng)
	var fmha, fmoe, pa, ckMoE int
	for _, r := range pre {
		switch {
		case strings.Contains(r.Name, "fmha_fwd"):
			fmha++
		case strings.Contains(r.Name, "fmoe_bf16_blockscaleFp8"):
			fmoe++
		case strings.Contains(r.Name, "pa_bf16"):
			pa++
		case strings.Contains(r.Name, "kernel_moe_gemm"):
			ckMoE++
		}
		if r.Section == SectionForward && r.Launch == "" {
			t.Fatalf("prefill kernel %s has no launch call", r.ShortName)
		}
	}
	if fmha != m.Layers || fmoe != m.Layers || pa != 0 || ckMoE != 0 {
		t.Errorf("prefill: fmha %d, fused MoE %d, paged attention %d, CK MoE GEMM %d; want %d, %d, 0, 0", fmha, fmoe, pa, ckMoE, m.Layers, m.Layers)
	}
	bigger := StepTime(m.PrefillStep(8, 16000, rng))
	if bigger <= StepTime(pre) {
		t.Errorf("prefill of 16000 tokens (%v µs) not longer than of 8000 (%v µs)", bigger, StepTime(pre))
	}
}

func TestDeterministicWithSeed(t *testing.T) {
	t.Parallel()
	m := Default()
	a := m.DecodeStep(16, 0, rand.New(rand.NewPCG(7, 7)))
	b := m.DecodeStep(16, 0, rand.New(rand.NewPCG(7, 7)))
	c := m.DecodeStep(16, 0, rand.New(rand.NewPCG(8, 8)))
	same, differ := true, false
	for i := range a {
		same = same && a[i] == b[i]
		differ = differ || a[i].Dur != c[i].Dur
	}
	if !same || !differ {
		t.Errorf("same seed gives the same step: %v; another seed differs: %v", same, differ)
	}
}

const tableHeader = "pos,short_name,kernel,avg_us,std_us,min_us,max_us,pct,count\n"

func writeTable(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(tableHeader+body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFromLayerCSV(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := writeTable(t, dir, "conc4_layer.csv", "0,PA (paged_attn),aiter::pa_bf16_x,10.0,1.0,8.0,12.0,50,10\n1,MoE_GEMM (CK),ck::kernel_moe_gemm<x>,40.0,2.0,30.0,50.0,50,10\n")
	b := writeTable(t, dir, "conc8_layer.csv", "0,PA (paged_attn),aiter::pa_bf16_x,12.0,1.0,10.0,14.0,50,10\n1,MoE_GEMM (CK),ck::kernel_moe_gemm<x>,80.0,4.0,60.0,100.0,50,10\n")
	m, err := FromLayerCSV(b, a)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		bs      int
		pa, moe float64
	}{
		{2, 10, 40}, // below the tables: the smallest
		{4, 10, 40},
		{6, 11, 60}, // halfway
		{8, 12, 80},
		{32, 12, 80}, // above: the largest
	}
	for _, c := range cases {
		l := m.DecodeLayer(c.bs, 0)
		if len(l) != 2 || math.Abs(l[0].AvgUS-c.pa) > 1e-9 || math.Abs(l[1].AvgUS-c.moe) > 1e-9 {
			t.Errorf("bs %d: layer %+v, want avg %.1f and %.1f", c.bs, l, c.pa, c.moe)
		}
	}
	// Drawn durations stay in [min, max] of the (interpolated) table.
	rng := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		for _, r := range m.DecodeStep(6, 0, rng) {
			if r.Layer < 0 {
				continue
			}
			lo, hi := []float64{9, 45}[r.Pos], []float64{13, 75}[r.Pos]
			if us := r.Dur.US(); us < lo-1e-3 || us > hi+1e-3 {
				t.Fatalf("pos %d drew %.3f µs outside [%.1f, %.1f]", r.Pos, us, lo, hi)
			}
		}
	}
	one, err := FromLayerCSV(b)
	if err != nil {
		t.Fatal(err)
	}
	if l := one.DecodeLayer(1, 0); l[1].AvgUS != 80 {
		t.Errorf("one table: avg at bs 1 = %.1f, want the table's 80", l[1].AvgUS)
	}
}

func TestFromLayerCSVErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeTable(t, dir, "conc4_layer.csv", "0,PA,aiter::pa_bf16_x,10.0,1.0,8.0,12.0,50,10\n")
	noPrefix := writeTable(t, dir, "layer.csv", "0,PA,aiter::pa_bf16_x,10.0,1.0,8.0,12.0,50,10\n")
	sub := filepath.Join(dir, "other")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	dup := writeTable(t, sub, "conc4_layer.csv", "0,PA,aiter::pa_bf16_x,10.0,1.0,8.0,12.0,50,10\n")
	badNum := writeTable(t, dir, "conc8_layer.csv", "0,PA,aiter::pa_bf16_x,ten,1.0,8.0,12.0,50,10\n")
	badHeader := filepath.Join(dir, "conc16_layer.csv")
	if err := os.WriteFile(badHeader, []byte("a,b\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		paths []string
		want  string
	}{
		{"none", nil, "no layer CSV"},
		{"no batch size in the name", []string{good, noPrefix}, "conc{N}_"},
		{"same batch size twice", []string{good, dup}, "same batch size"},
		{"not a number", []string{badNum}, `line 2: column avg_us: "ten"`},
		{"wrong header", []string{badHeader}, "not a per-layer CSV"},
		{"missing file", []string{filepath.Join(dir, "conc2_layer.csv")}, "conc2_layer.csv"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := FromLayerCSV(c.paths...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

// TestPrefillFollowsInventories: a one-prompt prefill step of the built-in
// model prices the prefill-only kernels (fused MoE GEMM, flash attention)
// as the recorded inventories time them per call, where a prefill step
// held one prompt: isl1024 conc8 (927.66 tokens) and isl8192 conc16
// (7311.72 tokens).
func TestPrefillFollowsInventories(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(corpus.Dir(t), "atom-minimax-m2.5")
	m := Default()
	for _, tc := range []struct {
		inv    string
		tokens int
	}{
		{"level3_isl1024_conc8_kernels.csv", 928},
		{"level3_isl8192_conc16_kernels.csv", 7312},
	} {
		runs := m.PrefillStep(1, tc.tokens, nil)
		for _, k := range []struct{ short, prefix string }{
			{"MoE_GEMM_fused (ASM)", "aiter::fmoe_bf16"},
			{"FlashAttn", "aiter::fmha_fwd"},
		} {
			want := inventoryAvg(t, filepath.Join(dir, tc.inv), k.prefix)
			var got float64
			var n int
			for _, r := range runs {
				if r.ShortName == k.short {
					got += float64(r.Dur) / 1000
					n++
				}
			}
			if n != m.Layers {
				t.Fatalf("%d tokens: %d %s kernels, want one per layer (%d)", tc.tokens, n, k.short, m.Layers)
			}
			if got /= float64(n); math.Abs(got-want) > 0.15*want {
				t.Errorf("%d tokens: %s %.1f µs per call, %s has %.1f (more than 15%% apart)", tc.tokens, k.short, got, tc.inv, want)
			}
		}
	}
	// A prompt of 928 tokens costs about what the conc-8 run's prefill
	// steps cost in all: 174 ms of prefill kernels over its 3 steps.
	if got := StepTime(m.PrefillStep(1, 928, nil)).Time(); got < 50*time.Millisecond || got > 70*time.Millisecond {
		t.Errorf("928-token prefill step: %v, want 50-70 ms", got)
	}
}
