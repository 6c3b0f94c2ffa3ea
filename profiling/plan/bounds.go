package plan

import (
	"fmt"

	"github.com/profile-model/profile-model/profiling/bench"
	"github.com/profile-model/profile-model/profiling/engine"
)

// The most variants of each kind a plan may have, and the most levels of
// all its pairs together: a plan beyond them would run for months, and
// pairing them alone would hold millions of pairs in memory.
const (
	MaxVariants = 256
	MaxLevels   = 4096
)

// checkBounds checks every numeric field of the plan, at the top and in
// each variant, against the bounds of the flag that sets it (zero: not
// set, the plan's or the engine's default), and the plan's size.
func (p *Plan) checkBounds(bad func(format string, a ...any)) {
	intIn := func(where, field, flag string, v, lo, hi int) {
		if v != 0 && (v < lo || v > hi) {
			bad("%s%s %d: out of range (want %d to %d, as %s)", where, field, v, lo, hi, flag)
		}
	}
	floatIn := func(where, field, flag string, v, lo, hi float64) {
		if v != 0 && !(v >= lo && v <= hi) {
			bad("%s%s %v: out of range (want %g to %g, as %s)", where, field, v, lo, hi, flag)
		}
	}
	server := func(where string, tp, maxSeqs, maxLen int, level *int, sizes []int, scale float64) {
		intIn(where, "tp", "-tp", tp, 1, engine.MaxTP)
		intIn(where, "max_num_seqs", "--max-num-seqs", maxSeqs, 1, engine.MaxNumSeqs)
		intIn(where, "max_model_len", "--max-model-len", maxLen, 1, engine.MaxModelLen)
		if level != nil && *level < 0 {
			bad("%slevel %d: must not be negative (0 disables torch.compile)", where, *level)
		}
		if len(sizes) > engine.MaxCaptureSize {
			bad("%scudagraph_capture_sizes: %d sizes, at most %d", where, len(sizes), engine.MaxCaptureSize)
		}
		for _, c := range sizes {
			if c < 1 || c > engine.MaxCaptureSize {
				bad("%scudagraph_capture_sizes: %d: out of range (want 1 to %d)", where, c, engine.MaxCaptureSize)
				break
			}
		}
		floatIn(where, "time_scale", "--time-scale", scale, engine.MinTimeScale, engine.MaxTimeScale)
	}
	workload := func(where string, isl, osl int, ratio *float64, concs []int, mul, prompts int, warmups *int) {
		intIn(where, "isl", "--isl", isl, 1, bench.MaxTokens)
		intIn(where, "osl", "--osl", osl, 1, bench.MaxTokens)
		if ratio != nil && !(*ratio >= 0 && *ratio <= 1) {
			bad("%srandom_range_ratio %v: out of range (want 0 to 1, as --random-range-ratio)", where, *ratio)
		}
		if len(concs) > bench.MaxConcurrencies {
			bad("%sconcurrencies: %d levels, at most %d", where, len(concs), bench.MaxConcurrencies)
		}
		for _, c := range concs {
			if c < 1 || c > bench.MaxConcurrency {
				bad("%sconcurrencies: %d: out of range (want 1 to %d, as --conc)", where, c, bench.MaxConcurrency)
				break
			}
		}
		intIn(where, "num_prompts_mul", "--num-prompts-mul", mul, 1, bench.MaxPromptsMul)
		intIn(where, "num_prompts", "a level's prompts", prompts, 1, bench.MaxPrompts)
		if warmups != nil {
			if *warmups < 0 || *warmups > bench.MaxWarmups {
				bad("%swarmups %d: out of range (want 0 to %d, as --warmups)", where, *warmups, bench.MaxWarmups)
			}
		}
	}
	server("", p.TP, p.MaxNumSeqs, p.MaxModelLen, p.Level, p.CaptureSizes, p.TimeScale)
	workload("", p.ISL, p.OSL, p.RangeRatio, p.Concurrencies, p.NumPromptsMul, p.NumPrompts, p.Warmups)
	if len(p.Servers) > MaxVariants || len(p.Benches) > MaxVariants {
		bad("%d server and %d bench variants: at most %d of each (split the plan)", len(p.Servers), len(p.Benches), MaxVariants)
		return
	}
	for i, s := range p.Servers {
		where := fmt.Sprintf("servers[%d] (%s): ", i, s.Name)
		server(where, s.TP, s.MaxNumSeqs, s.MaxModelLen, s.Level, s.CaptureSizes, s.TimeScale)
		intIn(where, "dp", "data-parallel replicas", s.DP, 1, engine.MaxTP)
	}
	levels := 0
	for i, b := range p.Benches {
		where := fmt.Sprintf("benches[%d] (%s): ", i, b.Name)
		workload(where, b.ISL, b.OSL, b.RangeRatio, b.Concurrencies, b.NumPromptsMul, b.NumPrompts, b.Warmups)
		w := p.workload(b)
		for _, c := range w.Concurrencies {
			if c >= 1 && c <= bench.MaxConcurrency {
				if _, err := bench.LevelPrompts(c, w.NumPromptsMul, w.NumPrompts); err != nil {
					bad("%s%v", where, err)
					break
				}
			}
		}
		levels += len(w.Concurrencies)
	}
	// Every server runs every bench at most (links only leave pairs out).
	if all := levels * len(p.Servers); all > MaxLevels {
		bad("%d server variants × %d levels of the bench variants: %d levels, at most %d (split the plan)", len(p.Servers), levels, all, MaxLevels)
	}
}
