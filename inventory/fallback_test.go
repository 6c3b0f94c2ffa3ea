package inventory_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/tracing"
)

// Without the rule table's lines for a whole library family, the fallbacks
// (launching op, words of the name) still put every kernel of that family
// in the category the rules give it, on real traces.
func TestFallbacksCategoriseFamilyWithoutRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		trace     string
		providers []string // the rule-table providers removed
		// kernels whose name alone cannot say, and why
		unknowable map[string]string
	}{
		{"Tensile and hipBLASLt GEMMs on ROCm", "traces/sglang-qwen3-8b-prefilldecode-mi300x.json.gz", []string{"rocBLAS / hipBLASLt"}, nil},
		{"cuBLAS, CUTLASS and FlashAttention on H100", "traces/qwen1.5-0.5b-forward-h100.json.gz", []string{"cuBLAS / cuBLASLt", "CUTLASS", "FlashAttention"}, nil},
		{"cuDNN convolutions", "traces/resnet50-legacy-2021-v100.pt.trace.json.gz", []string{"cuDNN"}, nil},
		{"aiter and ck_tile on ROCm", "traces/sglang-qwen3-8b-decode-mi300x.json.gz", []string{"aiter", "aiter ASM", "ck_tile", "CK"}, nil},
		{"vLLM custom ops and Triton MoE", "traces/vllm-decode-fullgraph-mi300x.json.gz", []string{"vLLM custom ops", "Triton"},
			map[string]string{
				"_topk_forward":       "a bare top-k is MoE routing here but a plain reduction anywhere else; only a rule knows",
				"_sum_bitmatrix_rows": "a sum of bit-matrix rows says nothing of routing",
				"reduce_segments":     "a segmented reduction: the attention reduce only by where it runs",
			}},
		{"PyTorch ATen kernels", "traces/qwen1.5-0.5b-forward-mi300x.json.gz", []string{"PyTorch"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr, err := tracing.Load(context.Background(), corpus.Path(t, tt.trace), tracing.Options{})
			require.NoError(t, err)
			full := inventory.NewClassifier(tr, nil)
			removed := map[string]bool{}
			for _, p := range tt.providers {
				removed[p] = true
			}
			filtered := inventory.DefaultRules().Filter(func(r inventory.Rule) bool { return !removed[r.Provider] })
			without := inventory.NewClassifier(tr, filtered)
			seen := map[string]bool{}
			n := 0
			for _, k := range tr.Kernels {
				name := tr.NameOf(&k)
				if k.Kind != tracing.KindKernel || seen[name] {
					continue
				}
				seen[name] = true
				want := full.Classify(name)
				if want.Source != inventory.SourceRule || !removed[want.Provider] || tt.unknowable[name] != "" {
					continue
				}
				n++
				got := without.Classify(name)
				if r := filtered.Match(name); r != nil {
					require.False(t, removed[r.Provider], "%s: the family's rules were removed", name)
				}
				require.Equal(t, want.Category, got.Category, "%s (decided by %s)", name, got.Source)
			}
			require.Positive(t, n, "the trace has kernels of the family")
			t.Logf("%d distinct kernels of %v categorised without their rules", n, tt.providers)
		})
	}
}
