package analysis

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/units"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/tracing"
)

// The kernels header counts kernels and their time by one definition (GPU
// kernels, no copies), and says what the copies are apart.
func TestKernelsHeaderCountsOneKind(t *testing.T) {
	t.Parallel()
	row := func(name string, kind tracing.ActivityKind, us int64) inventory.KernelRow {
		return inventory.KernelRow{Kernel: name, Kind: kind.String(), Count: 1, Total: units.Duration(us * 1000)}
	}
	cases := []struct {
		name string
		inv  inventory.Inventory
		want string
	}{
		{"with copies", inventory.Inventory{
			Rules: "r", KernelTime: 30000, GPUTime: 37000,
			Kernels: inventory.KernelRows([]inventory.KernelRow{row("a", tracing.KindKernel, 20), row("b", tracing.KindKernel, 10), row("Memcpy HtoD", tracing.KindMemcpy, 5), row("Memset", tracing.KindMemset, 2)}),
		}, "t: 2 distinct kernels, 30.000 µs kernel time (memcpy/memset not included: 2 distinct, 7.000 µs), 0.00% in Other (rules: r)"},
		{"kernels only", inventory.Inventory{
			Rules: "r", KernelTime: 20000, GPUTime: 20000,
			Kernels: inventory.KernelRows([]inventory.KernelRow{row("a", tracing.KindKernel, 20)}),
		}, "t: 1 distinct kernels, 20.000 µs kernel time (no memcpy/memset in the trace), 0.00% in Other (rules: r)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			WriteKernelsText(&b, "t", &c.inv, 10, "more.csv")
			first, _, _ := strings.Cut(b.String(), "\n")
			require.Equal(t, c.want, first)
		})
	}
}

// TestLayersTextLinesCapped: no line of the layers text grows past a
// screen's worth: an irregular layer that differs in hundreds of places
// lists what fits and how many more there are, and a long warning is cut
// saying so (the xDiT trace printed one 88 KB line).
func TestLayersTextLinesCapped(t *testing.T) {
	t.Parallel()
	lt := &inventory.LayerTable{Mode: inventory.ModeRobust, StepKind: "decode", Steps: 1, Layers: 2, KernelsPerLayer: []int{1},
		Positions: []inventory.Position{{ShortName: "GEMM", Category: "Dense GEMM (BF16)", Count: 2}}}
	irr := inventory.IrregularLayer{Layer: 1, Kernels: 301}
	for i := range 300 {
		irr.Diffs = append(irr.Diffs, inventory.LayerDiff{Op: "extra", Pos: 1, Kernel: strings.Repeat("k", 20+i%7)})
	}
	lt.Irregular = []inventory.IrregularLayer{irr}
	lt.Warnings = append(lt.Warnings, diag.New(diag.IrregularLayers, strings.Repeat("é", 5000)))
	var b bytes.Buffer
	WriteLayersText(&b, lt)
	out := b.String()
	for _, line := range strings.Split(out, "\n") {
		require.LessOrEqual(t, len(line), 2*maxLine, "line %.80q...", line)
	}
	require.Regexp(t, `\.\.\. and \d+ more differences \(--json lists them\)`, out)
	require.Contains(t, out, "more bytes; --json has the whole message")
	require.True(t, utf8.ValidString(out), "cut at a character boundary")
}

// TestLayersTextKindNames: named layer kinds say what they are and how
// many layers of each a step runs.
func TestLayersTextKindNames(t *testing.T) {
	t.Parallel()
	lt := &inventory.LayerTable{Mode: inventory.ModeRobust, StepKind: "decode", Steps: 2, Layers: 48, KernelsPerLayer: []int{1, 1},
		KindNames: []string{"linear_attention", "full_attention"}, KindLayers: []int{36, 12},
		Positions: []inventory.Position{{ShortName: "gdn", Count: 72, AvgUS: 3}, {Pos: 1, LayerKind: 1, ShortName: "attn", Count: 24, AvgUS: 5}}}
	var b bytes.Buffer
	WriteLayersText(&b, lt)
	require.Contains(t, b.String(), "layer kind 0: 1 kernels, 3.0 µs per layer (linear_attention, 36 layers per step)\n")
	require.Contains(t, b.String(), "layer kind 1: 1 kernels, 5.0 µs per layer (full_attention, 12 layers per step)\n")
}
