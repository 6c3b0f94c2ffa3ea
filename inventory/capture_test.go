package inventory

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/tracing"
)

func TestGeneralizePaths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		paths []string
		want  string
	}{
		{"none", nil, ""},
		{"one", []string{"model.layers.3.mlp"}, "model.layers.3.mlp"},
		{"layer index differs", []string{"model.layers.0.mlp.experts", "model.layers.1.mlp.experts", "model.layers.12.mlp.experts"}, "model.layers.*.mlp.experts"},
		{"class instances differ", []string{"M_0.DecoderLayer_3.SiluAndMul_3", "M_0.DecoderLayer_4.SiluAndMul_4"}, "M_0.DecoderLayer_*.SiluAndMul_*"},
		{"same everywhere", []string{"lm_head", "lm_head"}, "lm_head"},
		{"other module", []string{"model.layers.0.mlp", "model.layers.1.self_attn"}, "model.layers.0.mlp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, generalizePaths(tt.paths))
		})
	}
}

// capture builds a capture whose kernels are names, each launched by a
// module named after its layer and position.
func capture(layers [][]string, prologue ...string) *tracing.Capture {
	c := &tracing.Capture{Path: "cap.json"}
	for _, n := range prologue {
		c.Kernels = append(c.Kernels, tracing.CapturedKernel{Name: n, Module: "model.embed", Op: "aten::embedding", InputDims: "[[4]]"})
	}
	for l, names := range layers {
		for p, n := range names {
			c.Kernels = append(c.Kernels, tracing.CapturedKernel{Name: n, Module: "model.layers." + string(rune('0'+l)) + "." + n,
				Op: "op_" + n, InputDims: "[[4," + string(rune('0'+p)) + "]]", InputTypes: `["bf16"]`})
		}
	}
	return c
}

func table(kinds ...[]string) *LayerTable {
	t := &LayerTable{Mode: ModeRobust}
	pos := 0
	for k, names := range kinds {
		t.KernelsPerLayer = append(t.KernelsPerLayer, len(names))
		for _, n := range names {
			t.Positions = append(t.Positions, Position{Pos: pos, LayerKind: k, ShortName: n, Kernel: n})
			pos++
		}
	}
	return t
}

func TestAddCapture(t *testing.T) {
	t.Parallel()
	dense := []string{"norm", "qkv", "attn", "o", "up", "down"}
	sliding := []string{"norm", "qkv", "swa", "o", "up", "down"}
	t.Run("one kind", func(t *testing.T) {
		t.Parallel()
		lt := table(dense)
		ws := lt.AddCapture(capture([][]string{dense, dense, dense}, "embed", "norm"))
		require.Empty(t, ws)
		for p, pos := range lt.Positions {
			require.Equal(t, "model.layers.*."+dense[p], pos.Module)
			require.Equal(t, "op_"+dense[p], pos.Op)
			require.Equal(t, "[[4,"+string(rune('0'+p))+"]]", pos.InputDims)
			require.Equal(t, `["bf16"]`, pos.InputTypes)
		}
		require.True(t, lt.HasCapture())
	})
	t.Run("alternating kinds", func(t *testing.T) {
		t.Parallel()
		lt := table(sliding, dense)
		ws := lt.AddCapture(capture([][]string{sliding, dense, sliding, dense}))
		require.Empty(t, ws, "each kind matches its own layers exactly")
		require.Equal(t, "model.layers.*.swa", lt.Positions[2].Module)
		require.Equal(t, "model.layers.*.attn", lt.Positions[8].Module)
	})
	t.Run("one layer differs", func(t *testing.T) {
		t.Parallel()
		lt := table(dense)
		other := []string{"norm", "qkv", "attn", "o", "up", "down_v2"}
		ws := lt.AddCapture(capture([][]string{dense, dense}))
		require.Empty(t, ws)
		lt = table(dense)
		ws = lt.AddCapture(capture([][]string{other, other}))
		require.Len(t, ws, 1)
		require.Equal(t, diag.CaptureMismatch, ws[0].Code)
		require.Contains(t, ws[0].Message, "pos 5 (down) in 2 of 2 layers")
		require.Empty(t, lt.Positions[5].Module)
		require.Equal(t, "model.layers.*.up", lt.Positions[4].Module)
		require.Equal(t, ws, lt.Warnings)
	})
	t.Run("another model", func(t *testing.T) {
		t.Parallel()
		lt := table(dense)
		ws := lt.AddCapture(capture([][]string{{"a", "b", "c"}, {"a", "b", "c"}}))
		require.Len(t, ws, 1)
		require.Contains(t, ws[0].Message, "no run of its 6 captured kernels matches layer kind 0")
		require.False(t, lt.HasCapture())
	})
	t.Run("nameless launches are matched by layer scope", func(t *testing.T) {
		t.Parallel()
		lt := table(dense)
		c := capture([][]string{dense, dense, dense}, "embed", "norm")
		c.Kernels = append(c.Kernels, tracing.CapturedKernel{Module: "model.norm"}, tracing.CapturedKernel{Module: "lm_head"})
		for i := range c.Kernels {
			c.Kernels[i].Name = ""
		}
		ws := lt.AddCapture(c)
		require.Len(t, ws, 1)
		require.Equal(t, diag.CaptureUnchecked, ws[0].Code)
		require.Contains(t, ws[0].Message, "from 3 layer scopes of 6 launches")
		for p, pos := range lt.Positions {
			require.Equal(t, "model.layers.*."+dense[p], pos.Module)
			require.Equal(t, "op_"+dense[p], pos.Op)
		}
	})
	t.Run("nameless launches under PyTorch module scopes", func(t *testing.T) {
		t.Parallel()
		lt := table([]string{"norm", "qkv", "attn"})
		c := &tracing.Capture{Path: "cap.json"}
		c.Kernels = append(c.Kernels, tracing.CapturedKernel{Module: "M_0.Embedding_0"})
		for l := range 4 {
			layer := fmt.Sprintf("M_0.Model_0.DecoderLayer_%d.", l)
			c.Kernels = append(c.Kernels,
				tracing.CapturedKernel{Module: layer + fmt.Sprintf("RMSNorm_%d", 2*l)},
				tracing.CapturedKernel{Module: layer + fmt.Sprintf("Attention_%d.Linear_%d", l, 3*l), Op: "aten::mm"},
				tracing.CapturedKernel{Module: layer + fmt.Sprintf("Attention_%d", l), Op: "attn_op"})
		}
		ws := lt.AddCapture(c)
		require.Len(t, ws, 1)
		require.Equal(t, diag.CaptureUnchecked, ws[0].Code)
		require.Equal(t, "M_0.Model_0.DecoderLayer_*.Attention_*.Linear_*", lt.Positions[1].Module)
		require.Equal(t, "aten::mm", lt.Positions[1].Op)
		require.Equal(t, "attn_op", lt.Positions[2].Op)
	})
	t.Run("nameless launches of another model", func(t *testing.T) {
		t.Parallel()
		lt := table(dense)
		c := capture([][]string{{"a", "b"}, {"a", "b"}})
		for i := range c.Kernels {
			c.Kernels[i].Name = ""
		}
		ws := lt.AddCapture(c)
		require.Len(t, ws, 1)
		require.Equal(t, diag.CaptureMismatch, ws[0].Code)
		require.False(t, lt.HasCapture())
	})
	t.Run("compat tables are left alone", func(t *testing.T) {
		t.Parallel()
		lt := table(dense)
		lt.Mode = ModeCompat
		require.Empty(t, lt.AddCapture(capture([][]string{dense})))
		require.False(t, lt.HasCapture())
		require.Equal(t, formatCompatLayerCSV(lt.Rows()), lt.CSV())
	})
}

// A layer whose side-stream kernel starts on the GPU before the main
// stream's kernel launched ahead of it: the table's order (by start) and
// the capture's (by launch) differ, and each position still finds its
// captured kernel, the nearest of its name.
func TestWindowMatchAcrossStreams(t *testing.T) {
	t.Parallel()
	captured := []string{"attn", "copy", "router", "topk", "gemm", "topk"}
	byStart := []string{"attn", "copy", "topk", "router", "gemm", "topk"}
	require.Equal(t, []int{0, 1, 3, 2, 4, 5}, windowMatch(captured, byStart))
	require.Equal(t, []int{0, -1}, windowMatch([]string{"a", "b"}, []string{"a", "c"}))
	starts, exact := captureWindows(append(captured, captured...), byStart)
	require.True(t, exact)
	require.Equal(t, []int{0, 6}, starts)
}
