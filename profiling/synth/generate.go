package synth

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/profiling/kernelmodel"
	"github.com/profile-model/profile-model/tracing"
	"github.com/profile-model/profile-model/tracing/kineto"
)

// GenerateOptions describes a synthetic ATOM-style trace.
type GenerateOptions struct {
	Model          *kernelmodel.Model // nil: kernelmodel.Default()
	Layers         int                // transformer layers per step; 0: the model's
	DecodeSteps    int                // decode steps
	PrefillSteps   int                // prefill steps, spread evenly among the decode steps
	BS             int                // decode batch size (the last 5% of decode steps run BS-1 when that runs the same kernels)
	PromptLen      int                // prompt length upper bound; lengths are uniform in [0.8·L, L]; 0: 1024
	Seed           uint64             // random seed (same seed, same trace)
	GPUWindow      time.Duration      // drop GPU events outside the last GPUWindow (profiler buffer)
	GPUWindowExact bool               // cut at the exact time, not at a step boundary
	PythonPerStep  int                // python_function events per step; 0: the Recorder's default, <0: none
	Gzip           bool               // gzip the output
	MetaFirst      bool               // write traceName, displayTimeUnit and baseTimeNanoseconds before traceEvents (Kineto writes them after)
	ModelName      string             // served model name (file name of WriteATOM); "" : MiniMaxAI/MiniMax-M2.5
	Start          time.Time          // profiler start; zero: a fixed date, so output is reproducible

	// Variants that make layer detection hard (cases for the robust layer mode).
	RenameAnchor string // rename the paged-attention kernel (the compat anchor pa_bf16) to this name
	TwoStreams   bool   // run the post-attention copy and the router GEMM on a second, overlapping stream
	Alternate    bool   // odd layers are dense (an MLP instead of the MoE block): two kernel sequences
	EagerDecode  bool   // decode steps launched eagerly and labelled prefill[bs=N tok=N ...]
	// Piecewise: decode steps replayed as vLLM's piecewise graphs (one
	// graph per piece between attention kernels, attention launched
	// eagerly, no step annotation), N+1 graph launches for N layers.
	Piecewise bool
	// PiecewiseEqualGaps (with Piecewise): the host is slow to launch each
	// graph piece, so the GPU idles between the pieces of a step as long as
	// between steps, as on a fast GPU: the gaps cannot tell steps apart,
	// the engine's step function (Python frames) can.
	PiecewiseEqualGaps bool
	// TPAllReduce: a tensor-parallel rank's kernels: an all-reduce before
	// each norm inside the layers (inside the graph pieces) and an
	// all-gather of the logits before the sampler.
	TPAllReduce bool

	// Exact reproduces the model's one compatible per-layer table
	// (kernelmodel.FromLayerCSV with one file): compatible mode on the
	// trace gives that table back, byte for byte. Layers and DecodeSteps
	// are chosen from the table's count; signature names are written with
	// the "void " a demangler gives them.
	Exact bool
}

// defaultStart is the profiler start of generated traces when none is given.
var defaultStart = time.Date(2026, 3, 14, 9, 26, 53, 589_000_000, time.UTC)

// NewRecording runs the steps GenerateOptions describe through the model and
// returns the filled Recorder, ready to write.
func NewRecording(ctx context.Context, opts GenerateOptions) (*Recorder, error) {
	m := opts.Model
	if m == nil {
		m = kernelmodel.Default()
	}
	if m.Layers <= 0 {
		return nil, fmt.Errorf("synth: kernel model %s has no layers", m.Name)
	}
	mm := *m
	if opts.Layers > 0 {
		mm.Layers = opts.Layers
	}
	if opts.BS <= 0 {
		return nil, fmt.Errorf("synth: batch size must be positive, got %d", opts.BS)
	}
	if opts.DecodeSteps < 0 || opts.PrefillSteps < 0 {
		return nil, fmt.Errorf("synth: step counts must not be negative")
	}
	if opts.PromptLen <= 0 {
		opts.PromptLen = 1024
	}
	if opts.ModelName == "" {
		opts.ModelName = "MiniMaxAI/MiniMax-M2.5"
	}
	start := opts.Start
	if start.IsZero() {
		start = defaultStart
	}
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x5851F42D4C957F2D))
	var exact *exactPlan
	if opts.Exact {
		var err error
		if exact, err = planExact(m.LayerTable(), mm.Layers, rng); err != nil {
			return nil, err
		}
		mm.Layers, opts.DecodeSteps = exact.layers, exact.steps
	}
	rec := NewRecorder(RecorderOptions{Model: opts.ModelName, GPUWindow: opts.GPUWindow, GPUWindowExact: opts.GPUWindowExact, PythonPerStep: opts.PythonPerStep})
	rec.Start(start.UnixNano())
	clock := start.UnixNano() + int64(200*time.Microsecond) // trace clock, ns
	ctxPerSeq := int(0.9 * float64(opts.PromptLen))
	prefillAt := func(p int) int { return p * opts.DecodeSteps / max(opts.PrefillSteps, 1) }
	nextPrefill := 0
	// The last 5% of decode steps run one sequence short (requests finishing),
	// when that batch size runs the same kernels: a trace keeps one layer shape.
	drainFrom := opts.DecodeSteps - opts.DecodeSteps/20
	drainBS := opts.BS - 1
	if drainBS < 1 || !sameLayer(mm.DecodeLayer(drainBS, 0), mm.DecodeLayer(opts.BS, 0)) {
		drainBS = opts.BS
	}
	for d := 0; d <= opts.DecodeSteps; d++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for nextPrefill < opts.PrefillSteps && (prefillAt(nextPrefill) <= d || d == opts.DecodeSteps) {
			tokens := 0
			for range opts.BS {
				lo := int(0.8 * float64(opts.PromptLen))
				tokens += lo + rng.IntN(opts.PromptLen-lo+1)
			}
			runs := mm.PrefillStep(opts.BS, tokens, rng)
			runs = applyVariants(runs, &opts, rng)
			rec.Record(Step{Kind: tracing.StepPrefill, BS: opts.BS, Tokens: tokens, Start: clock, Kernels: runs, Piecewise: opts.Piecewise, PieceGap: pieceGap(&opts)})
			clock += int64(kernelmodel.StepTime(runs)) + int64(300*time.Microsecond)
			nextPrefill++
			ctxPerSeq = int(0.9 * float64(opts.PromptLen))
		}
		if d == opts.DecodeSteps {
			break
		}
		bs := opts.BS
		if d >= drainFrom && d > 0 {
			bs = drainBS
		}
		runs := mm.DecodeStep(bs, bs*ctxPerSeq, rng)
		runs = applyVariants(runs, &opts, rng)
		if exact != nil {
			exact.apply(runs)
		}
		rec.Record(Step{Kind: tracing.StepDecode, BS: bs, Tokens: bs, Start: clock, Kernels: runs, Eager: opts.EagerDecode, Piecewise: opts.Piecewise, PieceGap: pieceGap(&opts)})
		clock += int64(kernelmodel.StepTime(runs)) + int64(300*time.Microsecond)
		ctxPerSeq++
	}
	rec.Stop(clock)
	return rec, nil
}

// Generate writes a synthetic ATOM-style trace to w and returns its truth.
func Generate(ctx context.Context, w io.Writer, opts GenerateOptions) (*Truth, error) {
	rec, err := NewRecording(ctx, opts)
	if err != nil {
		return nil, err
	}
	return rec.WriteTrace(ctx, w, kineto.WriterOptions{Gzip: opts.Gzip, MetaFirst: opts.MetaFirst, TraceName: "synthetic ATOM trace"})
}

// pieceGap is the host time before each graph piece after the first: about
// the GPU's idle time between steps (the host's 30 µs sync, 40 µs gap and
// 60 µs of input preparation) less the piece's own 25 µs launch, so that
// the two gaps are alike.
func pieceGap(o *GenerateOptions) int64 {
	if !o.Piecewise || !o.PiecewiseEqualGaps {
		return 0
	}
	return 110_000
}

func sameLayer(a, b []kernelmodel.LayerPosition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Kernel != b[i].Kernel {
			return false
		}
	}
	return true
}

// applyVariants changes a step's kernels as the robust-mode variants ask.
func applyVariants(runs []kernelmodel.KernelRun, o *GenerateOptions, rng *rand.Rand) []kernelmodel.KernelRun {
	if o.Alternate {
		runs = alternate(runs, rng)
	}
	if o.TPAllReduce {
		runs = withCollectives(runs, rng)
	}
	if o.Piecewise {
		for i := range runs {
			if runs[i].Layer >= 0 && runs[i].Section == kernelmodel.SectionForward && isAttention(runs[i].Name) {
				runs[i].Section = kernelmodel.SectionAttention
			}
		}
	}
	for i := range runs {
		r := &runs[i]
		if o.RenameAnchor != "" && strings.Contains(r.Name, "pa_bf16") {
			r.Name = o.RenameAnchor
			r.ShortName = "PA (paged_attn)"
		}
	}
	if o.TwoStreams {
		SideStream(runs)
	}
	return runs
}

// SideStream moves two kernels of each layer, the post-attention copy and
// the router GEMM, to a second stream that overlaps the main one.
func SideStream(runs []kernelmodel.KernelRun) {
	for i := range runs {
		r := &runs[i]
		if r.Layer >= 0 && (r.ShortName == "Triton_copy" || (r.ShortName == "GEMM_BF16 (rocBLAS)" && r.Pos < 8)) {
			r.Stream = 1
		}
	}
}

// isAttention tells the attention kernels of a layer by their category.
func isAttention(name string) bool {
	return strings.Contains(builtinRules().Classify(name).Category, "attention")
}

var builtinRules = sync.OnceValue(inventory.DefaultRules)

// The collectives of a tensor-parallel rank, as vLLM's custom all-reduce
// and NCCL/RCCL name them.
const (
	allReduceKernel = "void vllm::cross_device_reduce_1stage<__hip_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __hip_bfloat16*, int, int)"
	allGatherKernel = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
)

// withCollectives inserts an all-reduce before each norm of a layer (the
// reduction of the row-parallel GEMM before it) and an all-gather of the
// logits before the sampler.
func withCollectives(runs []kernelmodel.KernelRun, rng *rand.Rand) []kernelmodel.KernelRun {
	out := make([]kernelmodel.KernelRun, 0, len(runs)+len(runs)/8)
	gathered := false
	for _, r := range runs {
		if r.Layer >= 0 && r.Section == kernelmodel.SectionForward && strings.Contains(r.ShortName, "RMSNorm") {
			ar := kernelmodel.DrawKernel(rng, "all_reduce", allReduceKernel, 9.0)
			ar.Layer, ar.LayerKind, ar.Section = r.Layer, r.LayerKind, r.Section
			out = append(out, ar)
		}
		if r.Section == kernelmodel.SectionSample && !gathered {
			ag := kernelmodel.DrawKernel(rng, "all_gather", allGatherKernel, 12.0)
			ag.Section, ag.Launch = kernelmodel.SectionSample, "hipExtModuleLaunchKernel"
			out = append(out, ag)
			gathered = true
		}
		out = append(out, r)
	}
	// Positions within each layer, counted again.
	pos := map[[2]int]int{}
	for i := range out {
		if out[i].Layer >= 0 {
			key := [2]int{out[i].Layer, out[i].LayerKind}
			out[i].Pos = pos[key]
			pos[key]++
		}
	}
	return out
}

// denseMLP is the kernel sequence that replaces the MoE block (router GEMM
// through the second expert GEMM) in the odd layers of the Alternate variant.
var denseMLP = []struct {
	short, name string
	avg         float64
}{
	{"FP8_quant", "_ZN5aiter37dynamic_per_group_scaled_quant_kernelIDF16bDB8_Li32EEEvPT0_PfPKT_PKfiliibPKii", 5.5},
	{"GEMM_FP8 (CK dense)", "ck::kernel_gemm_xdl_cshuffle_v3_multi_d_blockscale_b_preshuffle<dense_mlp_gate_up>", 24.0},
	{"Activation", "aiter::silu_and_mul_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, int)", 5.8},
	{"FP8_quant", "_ZN5aiter37dynamic_per_group_scaled_quant_kernelIDF16bDB8_Li32EEEvPT0_PfPKT_PKfiliibPKii", 5.5},
	{"GEMM_FP8 (CK dense)", "ck::kernel_gemm_xdl_cshuffle_v3_multi_d_blockscale_b_preshuffle<dense_mlp_down>", 15.0},
}

func isMoEBlock(short string) bool {
	return strings.HasPrefix(short, "MoE_") || short == "GEMM_BF16 (rocBLAS)"
}

// alternate rewrites every odd layer: the MoE block (from the router GEMM to
// the second expert GEMM, with the quantisations between) becomes a dense MLP.
func alternate(runs []kernelmodel.KernelRun, rng *rand.Rand) []kernelmodel.KernelRun {
	out := make([]kernelmodel.KernelRun, 0, len(runs))
	for i := 0; i < len(runs); {
		r := runs[i]
		if r.Layer < 0 || r.Layer%2 == 0 || r.Section != kernelmodel.SectionForward {
			out = append(out, r)
			i++
			continue
		}
		// Copy the odd layer, replacing its MoE block.
		layer := r.Layer
		j := i
		for j < len(runs) && runs[j].Layer == layer {
			j++
		}
		block := runs[i:j]
		first, last := -1, -1
		for k, b := range block {
			if isMoEBlock(b.ShortName) {
				if first < 0 {
					first = k
				}
				last = k
			}
		}
		var seq []kernelmodel.KernelRun
		if first < 0 {
			seq = append(seq, block...)
		} else {
			seq = append(seq, block[:first]...)
			for _, d := range denseMLP {
				k := kernelmodel.DrawKernel(rng, d.short, d.name, d.avg)
				k.Layer = layer
				seq = append(seq, k)
			}
			seq = append(seq, block[last+1:]...)
		}
		for k := range seq {
			seq[k].Pos = k
			seq[k].LayerKind = 1
		}
		out = append(out, seq...)
		i = j
	}
	return out
}
