package bench_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/bench"
)

// Input lengths are drawn uniformly in [⌊L·r⌋, L]; latency percentiles
// interpolate between ranks as numpy does, so figures compare with vLLM's
// benchmark client.
func ExampleLengths() {
	rng := rand.New(rand.NewPCG(1, 2))
	lens := bench.Lengths(rng, 1000, 1024, 0.8)
	lo, hi := lens[0], lens[0]
	for _, l := range lens {
		lo, hi = min(lo, l), max(hi, l)
	}
	fmt.Println(len(lens), lo >= 819, hi <= 1024)
	fmt.Println(bench.Percentile([]float64{10, 20, 30, 40}, 50), "ms at p"+results.PctName(50))
	// Output:
	// 1000 true true
	// 25 ms at p50
}
