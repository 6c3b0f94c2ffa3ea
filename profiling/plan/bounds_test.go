package plan

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/bench"
	"github.com/profile-model/profile-model/profiling/engine"
)

// TestPlanBounds: every numeric field of a plan, at the top or in a
// variant, is refused beyond the bounds of its flag, naming the field and
// the flag; the values that once panicked (num_prompts_mul 2^62), ran out
// of memory (num_prompts 10^9, 3000 × 3000 variants) or printed negative
// counts are among them.
func TestPlanBounds(t *testing.T) {
	t.Parallel()
	base := `"name": "p", "engine": "sim", "model": "m", "isl": 8, "osl": 4, "concurrencies": [1, 2]`
	variants := func(kind string, n int) string {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf(`{"name": "v%d"}`, i)
		}
		return fmt.Sprintf(`, %q: [%s]`, kind, strings.Join(names, ","))
	}
	for _, tt := range []struct {
		name, extra string
		want        []string
	}{
		{"num_prompts_mul 2^62", `, "num_prompts_mul": 4611686018427387904`, []string{"num_prompts_mul 4611686018427387904", "--num-prompts-mul", fmt.Sprint(bench.MaxPromptsMul)}},
		{"bench num_prompts_mul negative", `, "benches": [{"name": "b", "num_prompts_mul": -3}]`, []string{"benches[0] (b): num_prompts_mul -3", "out of range"}},
		{"num_prompts 10^9", `, "num_prompts": 1000000000`, []string{"num_prompts 1000000000", fmt.Sprint(bench.MaxPrompts)}},
		{"conc × mul beyond a level", `, "benches": [{"name": "b", "concurrencies": [1048576], "num_prompts_mul": 4}]`, []string{"benches[0] (b)", "concurrency 1048576 × num_prompts_mul 4"}},
		{"isl", `, "benches": [{"name": "b", "isl": 16777217}]`, []string{"isl 16777217", "--isl"}},
		{"osl negative", `, "benches": [{"name": "b", "osl": -1}]`, []string{"osl -1", "--osl"}},
		{"warmups", `, "warmups": -5`, []string{"warmups -5", "--warmups"}},
		{"concurrency", `, "benches": [{"name": "b", "concurrencies": [1, 2097152]}]`, []string{"concurrencies: 2097152", "--conc"}},
		{"tp", `, "servers": [{"name": "a", "tp": 5000}]`, []string{"servers[0] (a): tp 5000", "-tp"}},
		{"max_num_seqs", `, "max_num_seqs": -2`, []string{"max_num_seqs -2", "--max-num-seqs"}},
		{"max_model_len", `, "servers": [{"name": "a", "max_model_len": 1000000000}]`, []string{"max_model_len 1000000000", "--max-model-len"}},
		{"time_scale", `, "time_scale": 1e9`, []string{"time_scale 1e+09", "--time-scale"}},
		{"dp", `, "servers": [{"name": "a", "dp": -1}]`, []string{"dp -1"}},
		{"3000 × 3000 variants", variants("servers", 3000) + variants("benches", 3000), []string{"3000 server and 3000 bench variants", fmt.Sprint(MaxVariants)}},
		{"levels of all pairs", variants("servers", 200) + variants("benches", 200), []string{"levels", fmt.Sprint(MaxLevels)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, err := Parse([]byte(`{`+base+tt.extra+`}`), "plan.json")
			require.Error(t, err)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
			require.Less(t, time.Since(start), 5*time.Second, "refused, but slowly")
		})
	}
	// At the bounds, a plan loads, and its dry run prints positive counts
	// and an estimate capped, not wrapped into a negative one.
	top := fmt.Sprintf(`{"name": "p", "engine": "atom", "model": "m", "tp": %d, "max_num_seqs": %d, "max_model_len": %d,
		"isl": %d, "osl": %d, "concurrencies": [1, %d], "num_prompts": %d, "warmups": %d}`,
		engine.MaxTP, engine.MaxNumSeqs, engine.MaxModelLen, bench.MaxTokens, bench.MaxTokens, bench.MaxConcurrency, bench.MaxPrompts, bench.MaxWarmups)
	p, err := Parse([]byte(top), "plan.json")
	require.NoError(t, err)
	require.Equal(t, MaxEstimate, p.Estimate())
	var out bytes.Buffer
	require.NoError(t, DryRun(&out, p, RunOptions{}))
	require.NotRegexp(t, `[\s(]-[0-9]`, out.String(), "a negative count or time")
	require.Contains(t, out.String(), fmt.Sprintf("(%d %d prompts", bench.MaxPrompts, bench.MaxPrompts))
	require.Contains(t, out.String(), "estimate: more than "+MaxEstimate.String())
}
