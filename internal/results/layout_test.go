package results

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNames(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, path string
		bs         int
		want       string
	}{
		{"prefix added", "layer.csv", 8, "conc8_layer.csv"},
		{"in a directory", "out/table.csv", 16, filepath.Join("out", "conc16_table.csv")},
		{"kept when present", "out/conc16_table.csv", 16, "out/conc16_table.csv"},
		{"unknown batch size", "kernels.csv", 0, "kernels.csv"},
	} {
		require.Equal(t, tt.want, WithPrefix(tt.path, tt.bs), tt.name)
	}
	require.Equal(t, "conc8_categories.csv", CategoriesOf("conc8_kernels.csv"))
	require.Equal(t, filepath.Join("d", "conc8_inv_categories.csv"), CategoriesOf("d/conc8_inv.csv"))
	require.Equal(t, filepath.Join("d", "prefill_layer.csv"), PrefillOf(filepath.Join("d", "layer.csv"), 0))
	require.Equal(t, "conc16_prefill_t.csv", PrefillOf("conc16_t.csv", 16))
	require.Equal(t, "prefill_concise.csv", PrefillOf("concise.csv", 0), "no batch size: no conc prefix to keep first")
	require.Equal(t, "m_ts_20260101_120000_1", TraceStem("rank_0/m_ts_20260101_120000_1.pt.trace.json.gz"))
	require.Equal(t, "x", TraceStem("x.json"))

	f := InDir("lv", 4)
	require.Equal(t, TraceFiles{
		Layer: "lv/conc4_layer.csv", PrefillLayer: "lv/conc4_prefill_layer.csv", CompatLayer: "lv/conc4_compat_layer.csv",
		Kernels: "lv/conc4_kernels.csv", Categories: "lv/conc4_categories.csv",
	}, f)
	r := Run("runs/x")
	require.Equal(t, "runs/x/conc8.json", r.LevelResult(8))
	require.Equal(t, "runs/x/levels/conc8", r.Level(8))
}

// TestNewRunDir: the directory is named after the model's base name and
// the UTC time, and two runs in the same second get two directories.
func TestNewRunDir(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "runs")
	now := time.Date(2026, 11, 29, 19, 0, 0, 0, time.FixedZone("CET", 3600))
	a, err := NewRunDir(out, "MiniMaxAI/MiniMax-M2.5/", now)
	require.NoError(t, err)
	b, err := NewRunDir(out, "MiniMaxAI/MiniMax-M2.5", now)
	require.NoError(t, err)
	require.Equal(t, "MiniMax-M2.5-20261129T180000Z", filepath.Base(a))
	require.Equal(t, "MiniMax-M2.5-20261129T180000Z-2", filepath.Base(b))
	c, err := NewRunDir(out, "my model:v1", now)
	require.NoError(t, err)
	require.Equal(t, "my_model_v1-20261129T180000Z", filepath.Base(c), "characters unsafe in a file name become _")
	for _, d := range []string{a, b, c} {
		fi, err := os.Stat(d)
		require.NoError(t, err)
		require.True(t, fi.IsDir())
	}
}

// TestCategoryUnit: the one spelling of a category in benchmark units,
// shared by the sweep benchmarks and diff's benchmark files.
func TestCategoryUnit(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"MoE expert GEMM":                "moe-expert-gemm",
		"Dense GEMM (FP8/FP4)":           "dense-gemm-fp8-fp4",
		"Dense GEMM (BF16)":              "dense-gemm-bf16",
		"RMSNorm / LayerNorm":            "rmsnorm-layernorm",
		"Paged attention (decode)":       "paged-attention-decode",
		"Memcpy / memset":                "memcpy-memset",
		"Activation (SiLU/GELU and mul)": "activation-silu-gelu-and-mul",
		"Other":                          "other",
		"  (leading) and trailing!! ":    "leading-and-trailing",
	} {
		require.Equal(t, want, CategoryUnit(in), in)
	}
}
