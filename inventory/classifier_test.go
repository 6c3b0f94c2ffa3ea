package inventory

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/tracing"
)

// The launching op decides a kernel whose name says nothing, also for its
// graph-replayed runs (no External id) through the same kernel name; a
// name that says what it computes wins over an op that is one operation
// (aten::mm), an op that is a whole computation (a convolution, a fused
// MoE) wins over the name; the phase of the steps decides the kind of
// attention, whatever the name says.
func TestClassifierLaunchOpAndContext(t *testing.T) {
	t.Parallel()
	tr := &tracing.Trace{
		Steps: []tracing.Step{{Kind: tracing.StepDecode}, {Kind: tracing.StepPrefill}},
	}
	ops := map[int64]string{11: "aten::mm", 12: "vllm::unified_attention_with_output", 13: "aten::cudnn_convolution", 14: "my_lib::frobnicate", 15: "_C::cutlass_scaled_mm_fp8",
		16: "flashinfer::trtllm_fp8_block_scale_moe"}
	k := func(name string, ext int64, step int32) {
		tr.AddKernel(name, tracing.Kernel{Dur: 1000, External: ext, Step: step, Graph: -1})
	}
	k("zq_kernel_7", 11, -1)                 // eager, launched by aten::mm
	k("zq_kernel_7", 0, 0)                   // replayed: no op of its own
	k("zz_kernel_9", 12, -1)                 // launched by a vLLM attention op
	k("sm90_xmma_gemm_bf16_tn", 13, -1)      // a GEMM name under a convolution op
	k("qq_kernel", 14, -1)                   // an op that says nothing
	k("my_attention_kernel", 0, 0)           // attention in decode steps
	k("other_attention_kernel", 0, -1)       // attention outside them
	k("zy_kernel_3", 15, -1)                 // fp8 from the op's name
	k("bmm_E4m3_E4m3E4m3_Fp32_t128", 16, -1) // a batched GEMM a fused-MoE op launched
	k("fmha_decode_paged_kernel", 0, 1)      // a "decode" family name in prefill steps
	k("flash_fwd_prefill_kernel", 0, 0)      // a "prefill" family name in decode steps
	tr.SetOps(ops)
	none := DefaultRules().Filter(func(Rule) bool { return false })
	c := NewClassifier(tr, none)
	tests := []struct {
		kernel string
		cat    string
		source Source
	}{
		{"zq_kernel_7", "Dense GEMM (BF16)", SourceLaunchOp},
		{"zz_kernel_9", "Flash attention (prefill)", SourceLaunchOp},
		{"sm90_xmma_gemm_bf16_tn", "Convolution", SourceLaunchOp},
		{"bmm_E4m3_E4m3E4m3_Fp32_t128", "MoE expert GEMM", SourceLaunchOp},
		{"fmha_decode_paged_kernel", "Flash attention (prefill)", SourceName},
		{"flash_fwd_prefill_kernel", "Paged attention (decode)", SourceName},
		{"qq_kernel", Other, SourceNone},
		{"my_attention_kernel", "Paged attention (decode)", SourceName},
		{"other_attention_kernel", "Flash attention (prefill)", SourceName},
		{"zy_kernel_3", "Dense GEMM (FP8/FP4)", SourceLaunchOp},
	}
	for _, tt := range tests {
		got := c.Classify(tt.kernel)
		require.Equal(t, tt.cat, got.Category, tt.kernel)
		require.Equal(t, tt.source, got.Source, tt.kernel)
	}
}

// Position hints: an unknown kernel that runs where the other layer kind
// runs paged attention is attention; one where nothing is known stays Other.
func TestClassifierLearnsPositions(t *testing.T) {
	t.Parallel()
	none := DefaultRules().Filter(func(Rule) bool { return false })
	c := NewClassifier(nil, none)
	lt := &LayerTable{Positions: []Position{{Kernel: "zq_kernel_7"}, {Kernel: "pa_decode_kernel"}}}
	c.pending = [][2]string{{"zq_kernel_7", "pa_decode_kernel"}, {"qq_kernel", "zz_kernel"}}
	require.Equal(t, 1, c.Learn(lt))
	got := c.Classify("zq_kernel_7")
	require.Equal(t, "Paged attention (decode)", got.Category)
	require.Equal(t, SourcePosition, got.Source)
	require.Equal(t, SourcePosition, lt.Positions[0].Source, "the table is relabelled")
	require.Equal(t, SourceNone, c.Classify("qq_kernel").Source)
}
