package results

import (
	"path/filepath"
	"testing"

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
