package bench

import "fmt"

// The bounds of a sweep's workload, the same for its flags and for the
// fields of a sweep plan: what the client can hold in memory (it keeps a
// record per request of a level) and what a level can run.
const (
	MaxTokens        = 1 << 24 // isl and osl
	MaxConcurrency   = 1 << 20 // one level's concurrency
	MaxPromptsMul    = 1 << 20 // num_prompts_mul
	MaxPrompts       = 1 << 20 // measured requests of one level (num_prompts, or conc × num_prompts_mul)
	MaxWarmups       = 1 << 20 // warmup requests before a level
	MaxConcurrencies = 1024    // levels of one sweep
)

// LevelPrompts is the number of measured requests of level conc: prompts
// when positive, else conc × mul (mul < 1 counts as 1). It is an error
// beyond MaxPrompts, computed without overflow.
func LevelPrompts(conc, mul, prompts int) (int, error) {
	if prompts > 0 {
		if prompts > MaxPrompts {
			return 0, fmt.Errorf("num_prompts %d: at most %d requests a level", prompts, MaxPrompts)
		}
		return prompts, nil
	}
	mul = max(mul, 1)
	if conc > MaxPrompts/mul {
		return 0, fmt.Errorf("concurrency %d × num_prompts_mul %d: more than %d requests a level", conc, mul, MaxPrompts)
	}
	return conc * mul, nil
}
