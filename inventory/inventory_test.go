package inventory

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/internal/units"
	"github.com/profile-model/profile-model/tracing"
	"github.com/stretchr/testify/require"
)

func TestBuildInventory(t *testing.T) {
	t.Parallel()
	tr := makeTrace(tracing.StepDecode,
		[]k{{name: "aiter::pa_bf16_x", dur: 10_001}, {name: "my_kernel", dur: 500}, {name: "aiter::pa_bf16_x", dur: 9_999}},
		[]k{{name: "Cijk_Alik_Bljk_BBS", dur: 20_000}, {name: "aiter::pa_bf16_x", dur: 10_000}})
	tr.AddKernel("Memcpy DtoD (Device -> Device)", tracing.Kernel{Kind: tracing.KindMemcpy, Dur: 1_000, Start: 1e9})
	inv, err := BuildInventory(context.Background(), tr, nil, nil)
	require.NoError(t, err)
	names := []string{}
	for _, r := range inv.Kernels.All() {
		names = append(names, r.Kernel)
	}
	require.Equal(t, []string{"aiter::pa_bf16_x", "Cijk_Alik_Bljk_BBS", "Memcpy DtoD (Device -> Device)", "my_kernel"}, names, "sorted by total time")
	pa := inv.Kernels.At(0)
	require.Equal(t, 3, pa.Count)
	require.Equal(t, units.Duration(30_000), pa.Total)
	require.InDelta(t, 10.0, pa.AvgUS, 1e-12)
	require.InDelta(t, 9.999, pa.MinUS, 1e-12)
	require.InDelta(t, 10.001, pa.MaxUS, 1e-12)
	require.InDelta(t, 0.001, pa.StdUS, 1e-9)
	require.Equal(t, "Paged attention (decode)", pa.Category)
	require.Equal(t, units.Duration(50_500), inv.KernelTime, "copies are not kernel time")
	require.Equal(t, units.Duration(51_500), inv.GPUTime)
	require.InDelta(t, 500.0/50_500*100, inv.OtherPct, 1e-9)
	require.Equal(t, units.Duration(1_000), inv.Categories["Memcpy / memset"])
	require.Equal(t, 2, inv.DecodeSteps)
	require.Equal(t, "Paged attention (decode)", inv.ByCategory[0].Category)
	require.InDelta(t, 15.0, inv.ByCategory[0].DecodeStepUS, 1e-9, "30 µs over two decode steps")
	csv := string(inv.KernelsCSV())
	require.True(t, strings.HasPrefix(csv, strings.Join(KernelsHeader, ",")+"\n"))
	require.Contains(t, csv, "aiter::pa_bf16_x,PA (paged_attn),Paged attention (decode),aiter ASM,3,30.000,10.000,9.999,10.001,0.001,58.25,rule\n")
	require.Contains(t, csv, "my_kernel,my_kernel,Other,unknown,1,0.500,0.500,0.500,0.500,0.000,0.97,none\n", "what nothing categorised says so")
	require.Equal(t, csv, string(inv.KernelsCSV()), "deterministic")
}

// llmTraces are the corpus traces of LLM inference (Other must stay under 1% on them).
var llmTraces = []string{
	"sglang-qwen3-8b-decode-mi300x.json.gz",
	"sglang-qwen3-8b-prefilldecode-mi300x.json.gz",
	"vllm-decode-fullgraph-mi300x.json.gz",
	"qwen1.5-0.5b-forward-mi300x.json.gz",
	"qwen1.5-0.5b-forward-h100.json.gz",
}

// Every LLM trace of the corpus has under 1% of its kernel time in Other,
// and the per-kernel totals add up to inspect's kernel time exactly.
func TestCorpusCoverage(t *testing.T) {
	t.Parallel()
	dir := corpus.Dir(t)
	files, err := filepath.Glob(filepath.Join(dir, "traces", "*.json.gz"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tr, err := tracing.Load(context.Background(), path, tracing.Options{})
			require.NoError(t, err)
			inv, err := BuildInventory(context.Background(), tr, nil, nil)
			require.NoError(t, err)
			var sum int64
			for _, r := range inv.Kernels.All() {
				if r.Kind == "kernel" {
					sum += int64(r.Total)
				}
			}
			require.Equal(t, int64(tr.Summarize().KernelTime), sum, "kernel totals add up to inspect's kernel_time_us")
			var top []string
			for i, c := range inv.ByCategory {
				if i < 10 {
					top = append(top, fmt.Sprintf("%s %.1f%%", c.Category, c.Pct))
				}
			}
			t.Logf("coverage %s: other %.3f%% of kernel time; top categories: %s", name, inv.OtherPct, strings.Join(top, ", "))
			if slices.Contains(llmTraces, name) {
				require.Less(t, inv.OtherPct, 1.0, "share of kernel time in Other; uncategorised: %v", others(inv))
			}
		})
	}
}

func others(inv *Inventory) []string {
	var out []string
	for _, r := range inv.Kernels.All() {
		if r.Category == Other && len(out) < 10 {
			out = append(out, fmt.Sprintf("%s (%.2f%%)", r.Kernel, r.Pct))
		}
	}
	return out
}
