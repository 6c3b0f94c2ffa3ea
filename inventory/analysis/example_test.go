package analysis_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory/analysis"
)

// tinyTrace writes a Kineto trace of three decode steps, each two layers of
// three kernels between an embedding and a sampler, as a GPU would record
// them under ATOM's step annotations.
func tinyTrace(dir string) string {
	var ev []string
	ts, corr := 1000, 1
	kernel := func(name string, dur int) {
		ev = append(ev, fmt.Sprintf(`{"ph":"X","cat":"kernel","name":%q,"pid":0,"tid":7,"ts":%d,"dur":%d,"args":{"device":0,"stream":7,"correlation":%d}}`, name, ts, dur, corr))
		ts += dur + 1
		corr++
	}
	for step := 0; step < 3; step++ {
		start := ts
		kernel("triton_poi_fused_embedding_0", 4)
		for layer := 0; layer < 2; layer++ {
			kernel("pa_bf16_asm", 20)
			kernel("kernel_moe_gemm<bf16>", 50)
			kernel("add_rmsnorm_quant_kernel", 5)
		}
		kernel("mix_sample_outer_exponential", 8)
		ev = append(ev, fmt.Sprintf(`{"ph":"X","cat":"gpu_user_annotation","name":"decode[bs=4 tok=4]","pid":0,"tid":7,"ts":%d,"dur":%d}`, start, ts-start))
		ts += 100
	}
	path := filepath.Join(dir, "tiny.json")
	doc := `{"deviceProperties":[{"id":0,"name":"AMD Instinct MI355X"}],"traceEvents":[` + strings.Join(ev, ",") + `]}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		panic(err)
	}
	return path
}

func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)

	res, err := analysis.Load(context.Background(), tinyTrace(dir), analysis.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("device:", res.Summary.Device, "decode bs:", res.DecodeBS())
	lt := res.Decode
	fmt.Println("layers per step:", lt.Layers, "kernels per layer:", lt.KernelsPerLayer)
	for _, p := range lt.Positions {
		fmt.Printf("pos %d %-22s %5.1f µs\n", p.Pos, p.ShortName, p.AvgUS)
	}
	files, _ := res.Write(results.InDir(dir, res.DecodeBS()))
	for _, f := range files {
		fmt.Println("wrote", filepath.Base(f))
	}
	// Output:
	// device: AMD Instinct MI355X decode bs: 4
	// layers per step: 2 kernels per layer: [3]
	// pos 0 PA (paged_attn)         20.0 µs
	// pos 1 MoE_GEMM (CK)           50.0 µs
	// pos 2 RMSNorm+Quant            5.0 µs
	// wrote conc4_layer.csv
	// wrote conc4_compat_layer.csv
	// wrote conc4_kernels.csv
	// wrote conc4_categories.csv
}
