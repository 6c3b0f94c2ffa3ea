package synth_test

import (
	"context"
	"fmt"
	"io"

	"github.com/profile-model/profile-model/profiling/synth"
)

// Generate writes an ATOM-style trace of 10 decode steps at batch size 8 and
// one prefill step, and returns the truth of what it wrote.
func ExampleGenerate() {
	truth, err := synth.Generate(context.Background(), io.Discard, synth.GenerateOptions{
		Layers: 4, DecodeSteps: 10, PrefillSteps: 1, BS: 8, Seed: 1, PythonPerStep: -1,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("steps:", truth.Steps, "decode bs:", truth.DecodeBS)
	fmt.Println("layers per step:", truth.Layers, "kernels per layer:", truth.KernelsPerLayer)
	fmt.Println("kernels written:", truth.Kernels)
	// Output:
	// steps: map[decode:10 prefill:1] decode bs: 8
	// layers per step: 4 kernels per layer: [19]
	// kernels written: 896
}
