package tracing_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/units"
	"github.com/profile-model/profile-model/tracing"
)

func TestParseStepLabel(t *testing.T) {
	t.Parallel()
	cases := []struct {
		label  string
		ok     bool
		kind   tracing.StepKind
		bs     int
		padded int
		tokens int
		eager  bool
		why    string
	}{
		{"decode[bs=8 tok=8 ctx=1100]", true, tracing.StepDecode, 8, 0, 8, false, "ATOM decode"},
		{"decode[bs=5/8 tok=5]", true, tracing.StepDecode, 5, 8, 5, false, "ATOM real/padded graph batch"},
		{"prefill[bs=4 tok=4096]", true, tracing.StepPrefill, 4, 0, 4096, false, "ATOM prefill"},
		{"prefill[bs=16 tok=16]", true, tracing.StepDecode, 16, 0, 16, true, "older ATOM eager decode: one token per sequence"},
		{"eager_decode[bs=3 tok=3]", true, tracing.StepDecode, 3, 0, 3, true, "ATOM eager decode"},
		{"dummy_decode[bs=1 tok=1]", true, tracing.StepDummy, 1, 0, 1, false, "warm-up"},
		{"dummy_prefill[bs=2 tok=64]", true, tracing.StepDummy, 2, 0, 64, false, "warm-up"},
		{"draft[1/3 bs=8]", true, tracing.StepDraft, 8, 0, 0, false, "speculative draft"},
		{"capture_graph_bs_32", true, tracing.StepCapture, 32, 0, 0, false, "graph capture"},
		{"execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk3)", true, tracing.StepDecode, 32, 0, 32, false, "vLLM decode"},
		{"execute_15360_context_15(sq15360)_generation_0(sq0)", true, tracing.StepPrefill, 15, 0, 15360, false, "vLLM prefill"},
		{"execute_context_2(a)_generation_6(b)", true, tracing.StepMixed, 8, 0, 0, false, "vLLM chunked prefill, no token count"},
		{"execute_new_0_cached_32", true, tracing.StepDecode, 32, 0, 32, false, "vLLM before 2026-01-09: decode"},
		{"execute_new_4_cached_0", true, tracing.StepPrefill, 4, 0, 0, false, "vLLM before 2026-01-09: prefill"},
		{"execute_new_2_cached_30", true, tracing.StepMixed, 32, 0, 0, false, "vLLM before 2026-01-09: new and cached requests together are mixed"},
		{"execute_new_x_cached_3", false, "", 0, 0, 0, false, "not a number"},
		{"step[DECODE bs=32]", true, tracing.StepDecode, 32, 0, 32, false, "SGLang decode"},
		{"step[TARGET_VERIFY bs=16]", true, tracing.StepDecode, 16, 0, 16, false, "SGLang speculative decoding: the verify pass decodes"},
		{"step[DRAFT_EXTEND bs=16]", true, tracing.StepDraft, 16, 0, 0, false, "SGLang speculative decoding: the draft model"},
		{"step[DRAFT_EXTEND_V2 bs=16]", true, tracing.StepDraft, 16, 0, 0, false, "SGLang speculative decoding: the draft model (v2)"},
		{"step[EXTEND bs=15 toks=15360]", true, tracing.StepPrefill, 15, 0, 15360, false, "SGLang prefill"},
		{"ProfilerStep#12", true, tracing.StepProfiler, 0, 0, 0, false, "torch profiler step"},
		{"decode_helper", false, "", 0, 0, 0, false, "no brackets"},
		{"step[WHATEVER bs=1]", false, "", 0, 0, 0, false, "unknown SGLang mode"},
		{"nccl:all_reduce", false, "", 0, 0, 0, false, "other annotation"},
		{"ProfilerStep#", false, "", 0, 0, 0, false, "no number"},
	}
	for _, c := range cases {
		t.Run(c.label, func(t *testing.T) {
			t.Parallel()
			st, ok := tracing.ParseStepLabel(c.label)
			require.Equal(t, c.ok, ok, c.why)
			if !ok {
				return
			}
			assert.Equal(t, c.kind, st.Kind, c.why)
			assert.Equal(t, c.bs, st.BS, c.why)
			assert.Equal(t, c.padded, st.PaddedBS, c.why)
			assert.Equal(t, c.tokens, st.Tokens, c.why)
			assert.Equal(t, c.eager, st.Eager, c.why)
			assert.Equal(t, c.label, st.Label)
		})
	}
}

// TestParseStepLabelATOMFields reads every field of the labels ATOM's
// run_labels.py writes (and the detailed and two-batch-overlap suffixes).
func TestParseStepLabelATOMFields(t *testing.T) {
	t.Parallel()
	type want struct {
		Kind     tracing.StepKind
		BS       int
		PaddedBS int
		Tokens   int
		Eager    bool
		Fields   tracing.LabelFields
	}
	cases := []struct {
		label string
		want  want
		why   string
	}{
		{"decode[bs=8 tok=8 d=8]", want{Kind: tracing.StepDecode, BS: 8, Tokens: 8, Fields: tracing.LabelFields{DecodeSeqs: 8}}, "graph decode: p omitted when 0"},
		{"decode[bs=117/128 tok=117 d=117]", want{Kind: tracing.StepDecode, BS: 117, PaddedBS: 128, Tokens: 117, Fields: tracing.LabelFields{DecodeSeqs: 117}}, "padded graph batch"},
		{"decode[bs=6/8 tok=1030 p=1 d=5]", want{Kind: tracing.StepMixed, BS: 6, PaddedBS: 8, Tokens: 1030, Fields: tracing.LabelFields{PrefillSeqs: 1, DecodeSeqs: 5}}, "p>0: prefill and decode share the step"},
		{"decode[bs=4 tok=16 d=4 spec=3]", want{Kind: tracing.StepDecode, BS: 4, Tokens: 16, Fields: tracing.LabelFields{DecodeSeqs: 4, Spec: 3}}, "speculative verify step"},
		{"decode[bs=8 tok=8 p=0 d=8]", want{Kind: tracing.StepDecode, BS: 8, Tokens: 8, Fields: tracing.LabelFields{DecodeSeqs: 8}}, "explicit p=0 (earlier releases)"},
		{"decode[bs=64 tok=64 d=64 tbo=1]", want{Kind: tracing.StepDecode, BS: 64, Tokens: 64, Fields: tracing.LabelFields{DecodeSeqs: 64, TBO: true}}, "two-batch overlap"},
		{"decode[bs=8 tok=8 d=8 sqsq=8 sqsk=8448 sk=1056]", want{Kind: tracing.StepDecode, BS: 8, Tokens: 8, Fields: tracing.LabelFields{DecodeSeqs: 8, Detail: "sqsq=8 sqsk=8448 sk=1056"}}, "detailed annotation"},
		{"eager_decode[bs=3 tok=3 ctx=[1030, 1041, 1100]]", want{Kind: tracing.StepDecode, BS: 3, Tokens: 3, Eager: true, Fields: tracing.LabelFields{Ctx: []int{1030, 1041, 1100}}}, "eager decode, no p/d"},
		{"eager_decode[bs=1 tok=1 ctx=1077]", want{Kind: tracing.StepDecode, BS: 1, Tokens: 1, Eager: true, Fields: tracing.LabelFields{Ctx: []int{1077}}}, "one context length, no list"},
		{"prefill[bs=1 tok=1024 ctx=1024]", want{Kind: tracing.StepPrefill, BS: 1, Tokens: 1024, Fields: tracing.LabelFields{Ctx: []int{1024}}}, "single prefill"},
		{"prefill[bs=8 tok=7421 ctx=[927, 1002, 850]...+5]", want{Kind: tracing.StepPrefill, BS: 8, Tokens: 7421, Fields: tracing.LabelFields{Ctx: []int{927, 1002, 850}, CtxMore: 5}}, "more than five sequences: three listed, +K"},
		{"prefill[bs=8 tok=7421 ctx=[927, 1002, 850]...+5 tbo=1]", want{Kind: tracing.StepPrefill, BS: 8, Tokens: 7421, Fields: tracing.LabelFields{Ctx: []int{927, 1002, 850}, CtxMore: 5, TBO: true}}, "tbo after a truncated list"},
		{"prefill[bs=16 tok=16 ctx=[1030, 1041, 1100]...+13]", want{Kind: tracing.StepDecode, BS: 16, Tokens: 16, Eager: true, Fields: tracing.LabelFields{Ctx: []int{1030, 1041, 1100}, CtxMore: 13}}, "older release: eager decode labelled prefill"},
		{"dummy_decode[bs=1 tok=1 d=1]", want{Kind: tracing.StepDummy, BS: 1, Tokens: 1, Fields: tracing.LabelFields{DecodeSeqs: 1}}, "DP-sync dummy on the graph path"},
		{"dummy_eager_decode[bs=2 tok=2 ctx=[1, 1]]", want{Kind: tracing.StepDummy, BS: 2, Tokens: 2, Fields: tracing.LabelFields{Ctx: []int{1, 1}}}, "DP-sync dummy, eager"},
		{"dummy_prefill[bs=2 tok=64 ctx=[32, 32]]", want{Kind: tracing.StepDummy, BS: 2, Tokens: 64, Fields: tracing.LabelFields{Ctx: []int{32, 32}}}, "warm-up prefill"},
		{"draft[2/3 bs=8]", want{Kind: tracing.StepDraft, BS: 8, Fields: tracing.LabelFields{Draft: 2, DraftOf: 3}}, "speculative draft step i of k"},
		{"decode[bs=8]", want{Kind: tracing.StepDecode, BS: 8}, "no batch attached: only bs"},
	}
	for _, c := range cases {
		t.Run(c.label, func(t *testing.T) {
			t.Parallel()
			st, ok := tracing.ParseStepLabel(c.label)
			require.True(t, ok, c.why)
			got := want{st.Kind, st.BS, st.PaddedBS, st.Tokens, st.Eager, st.Fields}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("%s (%s): -want +got\n%s", c.label, c.why, d)
			}
		})
	}
}

// atomStep is one step of a hand-made ATOM-style trace.
type atomStep struct {
	label string
	graph bool // decode replayed from a graph; else eager launches
	drop  bool // the profiler buffer lost its GPU events
}

// atomTrace writes a small ATOM-style trace in Kineto's section order: CPU
// annotations and launches first, then kernels, then GPU annotations. Each
// step is 10 ms; a graph step replays 3 kernels and runs one eager sampling
// kernel after the graph, outside its GPU annotation; an eager step launches
// 2 kernels.
func atomTrace(steps []atomStep, gpuAnnotations bool) []byte {
	var cpu, gpu, gann []string
	corr := 1000
	for i, st := range steps {
		t0 := int64(i) * 10_000 // µs
		ext := 500 + i
		cpu = append(cpu, fmt.Sprintf(`{"ph": "X", "cat": "user_annotation", "name": %q, "pid": 10, "tid": 10, "ts": %d.000, "dur": 9000, "args": {"External id": %d}}`, st.label, t0, ext))
		var kernels []string
		if st.graph {
			corr++
			cpu = append(cpu, fmt.Sprintf(`{"ph": "X", "cat": "cuda_runtime", "name": "hipGraphLaunch", "pid": 10, "tid": 10, "ts": %d.500, "dur": 20, "args": {"correlation": %d}}`, t0+100, corr))
			for k := range 3 {
				kernels = append(kernels, fmt.Sprintf(`{"ph": "X", "cat": "kernel", "name": "layer_kernel_%d", "pid": 2, "tid": 1, "ts": %d.250, "dur": 100.5, "args": {"device": 2, "stream": 1, "correlation": %d, "kind": "Dispatch Task"}}`, k, t0+1000+int64(k)*200, corr))
			}
			corr++
			cpu = append(cpu, fmt.Sprintf(`{"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 10, "tid": 10, "ts": %d.000, "dur": 5, "args": {"correlation": %d}}`, t0+200, corr))
			kernels = append(kernels, fmt.Sprintf(`{"ph": "X", "cat": "kernel", "name": "mix_sample", "pid": 2, "tid": 1, "ts": %d.000, "dur": 30, "args": {"device": 2, "stream": 1, "correlation": %d, "kind": "Dispatch Kernel"}}`, t0+3000, corr))
		} else {
			for k := range 2 {
				corr++
				cpu = append(cpu, fmt.Sprintf(`{"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 10, "tid": 10, "ts": %d.000, "dur": 5, "args": {"correlation": %d}}`, t0+100+int64(k)*10, corr))
				kernels = append(kernels, fmt.Sprintf(`{"ph": "X", "cat": "kernel", "name": "fmha_fwd_%d", "pid": 2, "tid": 1, "ts": %d.000, "dur": 400, "args": {"device": 2, "stream": 1, "correlation": %d, "kind": "Dispatch Kernel"}}`, k, t0+1000+int64(k)*500, corr))
			}
		}
		if st.drop {
			continue
		}
		gpu = append(gpu, kernels...)
		if gpuAnnotations {
			gann = append(gann, fmt.Sprintf(`{"ph": "X", "cat": "gpu_user_annotation", "name": %q, "pid": 2, "tid": 1, "ts": %d.000, "dur": 1900, "args": {"External id": %d}}`, st.label, t0+900, ext))
		}
	}
	noise := `{"ph": "X", "cat": "python_function", "name": "model_runner.py(12): forward", "pid": 10, "tid": 10, "ts": 5.0, "dur": 1, "args": {"Python id": 1}}`
	all := append(append(append([]string{noise}, cpu...), gpu...), gann...)
	return []byte(`{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "AMD Instinct MI355X"}], "roctracer_version": 4.1, "traceEvents": [` +
		strings.Join(all, ",\n") + `], "traceName": "atom", "baseTimeNanoseconds": 1751410836000000000}`)
}

func TestSteps(t *testing.T) {
	t.Parallel()
	mixed := []atomStep{
		{label: "prefill[bs=4 tok=4096]"},
		{label: "decode[bs=4 tok=4]", graph: true},
		{label: "decode[bs=4 tok=4]", graph: true},
		{label: "decode[bs=3/4 tok=3]", graph: true},
		{label: "prefill[bs=2 tok=2]"}, // eager decode, older ATOM label
		{label: "dummy_decode[bs=1 tok=1]", graph: true},
	}
	for _, gpuAnn := range []bool{true, false} {
		t.Run(fmt.Sprintf("gpu_annotations=%v", gpuAnn), func(t *testing.T) {
			t.Parallel()
			tr, err := tracing.Read(context.Background(), bytes.NewReader(atomTrace(mixed, gpuAnn)), "atom", tracing.Options{})
			require.NoError(t, err)
			s := tr.Summarize()
			assert.Equal(t, map[string]int{"prefill": 1, "decode": 4, "dummy": 1}, s.Steps)
			assert.Equal(t, 4, s.DecodeBS, "bs=4 twice; 3 and 2 once each")
			assert.Equal(t, map[int]int{4: 2, 3: 1, 2: 1}, tr.DecodeBSHist)
			assert.Equal(t, 4, s.GraphLaunches)
			assert.Equal(t, 12, s.KernelsReplayed)
			assert.Empty(t, s.Warnings)
			require.Len(t, tr.Steps, 6)
			want := tracing.SourceCPUAnnotation
			if gpuAnn {
				want = tracing.SourceGPUAnnotation
			}
			for i, st := range tr.Steps {
				assert.Equal(t, want, st.Source, "step %d", i)
				assert.Equal(t, mixed[i].label, st.Label, "steps in time order")
				n := 2
				if mixed[i].graph {
					// By GPU time the sampling kernel falls outside the
					// annotation; through correlation it belongs to the step.
					n = 3
					if !gpuAnn {
						n = 4
					}
				}
				assert.Len(t, st.Kernels, n, "step %d (%s)", i, st.Label)
				for _, k := range st.Kernels {
					assert.Equal(t, int32(i), tr.Kernels[k].Step)
				}
			}
			assert.Equal(t, 3, tr.Steps[3].BS)
			assert.Equal(t, 4, tr.Steps[3].PaddedBS)
			assert.True(t, tr.Steps[4].Eager)
		})
	}
}

// With the first steps' GPU events dropped (the profiler buffer), the
// warning gives the covered span, the window, the share, the decode steps
// without kernels and the fix.
func TestCoverageWarning(t *testing.T) {
	t.Parallel()
	var steps []atomStep
	for i := range 20 {
		steps = append(steps, atomStep{label: "decode[bs=8 tok=8]", graph: true, drop: i < 15})
	}
	for _, gpuAnn := range []bool{true, false} {
		t.Run(fmt.Sprintf("gpu_annotations=%v", gpuAnn), func(t *testing.T) {
			t.Parallel()
			tr, err := tracing.Read(context.Background(), bytes.NewReader(atomTrace(steps, gpuAnn)), "atom", tracing.Options{})
			require.NoError(t, err)
			// Window: first CPU annotation (0 ms) to the end of the last
			// (190 ms + 9 ms) = 0.199 s. Kernels: step 15's first at
			// 151.00025 ms to step 19's sampling end at 193.03 ms.
			c := tr.Coverage
			assert.Equal(t, units.Duration(199_000_000), c.Window)
			assert.Equal(t, units.Duration(193_030_000-151_000_250), c.GPUSpan)
			assert.Equal(t, 20, c.DecodeSteps)
			assert.Equal(t, 15, c.DecodeWithout)
			require.Len(t, tr.Warnings, 1)
			assert.Equal(t, "GPU kernels cover 0.0 s of a 0.2 s profile window (21%): 15 of 20 decode steps have no kernels (none in the first 0.2 s); "+
				"the profiler buffer dropped GPU events: raise KINETO_BUFFER_SIZE_MB (e.g. 256 or more; upstream Kineto reads the buffer from the file $KINETO_CONFIG names instead, "+
				"ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB on CUDA and ROCTRACER_MAX_EVENTS on ROCm, which `profile-model run` writes from it), profile a shorter window, or send fewer prompts; "+
				"per-step numbers cover only the steps with kernels", tr.Warnings[0].Message)
			assert.Equal(t, 8, tr.DecodeBS, "kernel-less steps still count for the batch size")
			assert.Equal(t, map[int]int{8: 20}, tr.DecodeBSHist)
		})
	}
}

// FuzzParseStepLabel: any annotation name parses without panicking, and a
// recognised label keeps its text.
func FuzzParseStepLabel(f *testing.F) {
	for _, s := range []string{"decode[bs=6/8 tok=1030 p=1 d=5]", "prefill[bs=8 tok=7421 ctx=[927, 1002, 850]...+5 tbo=1]",
		"draft[2/3 bs=8]", "eager_decode[bs=1 tok=1 ctx=1077]", "decode[bs=8 tok=8 d=8 sqsq=8 sqsk=8448 sk=1056]", "decode[ctx=[[]]", "x[]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		st, ok := tracing.ParseStepLabel(name)
		if !ok {
			return
		}
		require.Equal(t, name, st.Label)
	})
}
