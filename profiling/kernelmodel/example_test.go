package kernelmodel_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/profile-model/profile-model/profiling/kernelmodel"
)

// The built-in model prices a decode step of 8 sequences with 1024 tokens of
// context each: its kernels in GPU order and how long they keep the GPU busy.
func Example() {
	m := kernelmodel.Default()
	for _, p := range m.DecodeLayer(8, 0)[:3] {
		fmt.Printf("pos %d %-20s avg %.1f µs\n", p.Pos, p.ShortName, p.AvgUS)
	}
	rng := rand.New(rand.NewPCG(1, 2)) // same seed, same draws
	runs := m.DecodeStep(8, 8*1024, rng)
	fmt.Println(m.Layers, "layers,", len(runs), "kernels")
	fmt.Println("first:", runs[0].Name, "last:", runs[len(runs)-1].ShortName)
	fmt.Println("busy for", kernelmodel.StepTime(runs), "µs")
	// Output:
	// pos 0 PA (paged_attn)      avg 10.6 µs
	// pos 1 FP8_quant            avg 5.5 µs
	// pos 2 GEMM_FP8 (CK dense)  avg 17.1 µs
	// 62 layers, 1184 kernels
	// first: __amd_rocclr_copyBuffer last: Sampling
	// busy for 15687.331 µs
}
