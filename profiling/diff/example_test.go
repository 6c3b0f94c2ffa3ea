package diff_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/profiling/diff"
)

// Two per-layer tables of an MoE decode layer: in the second, the two CK
// MoE GEMMs are replaced by one fused ASM kernel.
func Example() {
	dir, err := os.MkdirTemp("", "diff-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	table := func(name string, rows ...inventory.LayerRow) string {
		for i := range rows {
			rows[i].Pos, rows[i].Count = i, 62
		}
		path := filepath.Join(dir, name, "conc8_layer.csv")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			panic(err)
		}
		if err := os.WriteFile(path, inventory.FormatLayerCSV(rows), 0o644); err != nil {
			panic(err)
		}
		return path
	}
	gate := inventory.LayerRow{ShortName: "MoE_gate (topk)", Kernel: "aiter::grouped_topk_kernel<float>", AvgUS: 6.5}
	up := inventory.LayerRow{ShortName: "MoE_GEMM (CK)", Kernel: "ck::kernel_moe_gemm<gate_up>", AvgUS: 70}
	down := inventory.LayerRow{ShortName: "MoE_GEMM (CK)", Kernel: "ck::kernel_moe_gemm<down>", AvgUS: 36}
	fused := inventory.LayerRow{ShortName: "MoE_GEMM_fused (ASM)", Kernel: "fmoe_bf16_blockscaleFp8_g1u1", AvgUS: 95}

	a, err := diff.LoadLevel(table("a", gate, up, down), nil)
	if err != nil {
		panic(err)
	}
	b, err := diff.LoadLevel(table("b", gate, fused), nil)
	if err != nil {
		panic(err)
	}
	r := diff.Compare(a, b)
	for _, c := range r.Changes {
		fmt.Printf("%s (%s): %v -> %v\n", c.Kind, c.Category, c.A, c.B)
	}
	k := r.Kernels[0]
	fmt.Printf("%v -> %v by %s: %+.1f µs per layer\n", k.AShort, k.BShort, k.Match, k.LayerUS.Delta)
	// Output:
	// fused (MoE expert GEMM): [MoE_GEMM (CK) MoE_GEMM (CK)] -> [MoE_GEMM_fused (ASM)]
	// [MoE_GEMM (CK)] -> [MoE_GEMM_fused (ASM)] by position: -11.0 µs per layer
}
