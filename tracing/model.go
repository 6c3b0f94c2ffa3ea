package tracing

import (
	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/units"
)

// All times in this package are integer nanoseconds on the trace's own clock
// (Kineto's microsecond text parsed exactly, plus baseTimeNanoseconds when the
// trace writes relative timestamps). float64 cannot hold 19-digit timestamps.

// ActivityKind tells a kernel from a copy or a memset.
type ActivityKind uint8

const (
	KindKernel ActivityKind = iota
	KindMemcpy
	KindMemset
)

func (k ActivityKind) String() string {
	switch k {
	case KindMemcpy:
		return "memcpy"
	case KindMemset:
		return "memset"
	}
	return "kernel"
}

// Kernel is one GPU activity kept from a trace: a kernel, memcpy or memset.
// It is kept small (64 bytes, no pointers) because a large trace holds
// millions: its name is an index into Trace.Names, so that the collector
// never scans the kernels and analyses group them by a slice index instead
// of hashing long names.
type Kernel struct {
	Start       int64 // ns
	Dur         int64 // ns
	Correlation int64 // links to the runtime launch (or graph launch) that issued it
	External    int64 // External id, 0 when absent
	NameID      int32 // index into Trace.Names (the name as written in the trace)
	Device      int32
	Stream      int32
	Graph       int32 // index into Trace.Graphs, -1 when launched eagerly
	Step        int32 // index into Trace.Steps, -1 when outside every step
	Dims        int32 // index into Trace.Dims (grid and block), 0 when not given
	Kind        ActivityKind
	Replayed    bool // issued by a graph launch, no CPU op of its own
}

// Dims is a kernel's launch geometry. Kernels share few distinct ones, so
// Trace.Dims holds each once and a Kernel keeps an index (24 bytes less per
// kernel: a large trace keeps millions).
type launchDims struct {
	Grid, Block [3]int32
}

// End is Start+Dur.
func (k *Kernel) End() int64 { return k.Start + k.Dur }

// KernelName is the name of kernel i.
func (t *Trace) KernelName(i int) string { return t.Names[t.Kernels[i].NameID] }

// NameOf is the name of a kernel of t.
func (t *Trace) NameOf(k *Kernel) string { return t.Names[k.NameID] }

// AddKernel appends k to the kernels under the given name, adding the name
// to Names when it is new: for traces built by hand (tests, converters).
// A reader keeps its own index of names instead of this linear search.
func (t *Trace) AddKernel(name string, k Kernel) {
	k.NameID = -1
	for i, n := range t.Names {
		if n == name {
			k.NameID = int32(i)
			break
		}
	}
	if k.NameID < 0 {
		k.NameID = int32(len(t.Names))
		t.Names = append(t.Names, name)
	}
	t.Kernels = append(t.Kernels, k)
}

// Launch is a runtime call that launches GPU work (cudaLaunchKernel,
// hipGraphLaunch, ...).
type runtimeLaunch struct {
	Name        string
	Start, Dur  int64
	Correlation int64
	External    int64
	PID, TID    int64
	Graph       bool // a graph launch (cudaGraphLaunch / hipGraphLaunch)
}

// GraphLaunch is one graph replay and the kernels it owns.
type graphLaunch struct {
	Launch  runtimeLaunch
	Kernels []int32 // indices into Trace.Kernels, in start order
}

// Annotation is a user annotation (record_function) on the CPU or the GPU
// timeline, or a ProfilerStep#N.
type annotation struct {
	Name       string
	Start, Dur int64
	GPU        bool // gpu_user_annotation
	PID, TID   int64
	External   int64
}

// StepKind is what an engine step did.
type StepKind string

const (
	StepDecode   StepKind = "decode"
	StepPrefill  StepKind = "prefill"
	StepMixed    StepKind = "mixed"   // prefill and decode in one step (ATOM decode[… p>0], vLLM chunked prefill)
	StepDummy    StepKind = "dummy"   // dummy_decode / dummy_prefill warm-up
	StepDraft    StepKind = "draft"   // speculative draft step
	StepCapture  StepKind = "capture" // CUDA/HIP graph capture
	StepProfiler StepKind = "profiler_step"
	StepGraph    StepKind = "graph" // a graph launch with no label around it
)

// The evidence that delimited a step (Step.Source), in order of
// preference; sourceStepFunction (stepfunc.go), sourceLaunchPeriod
// (period.go) and sourceStructure (piecewise.go) when no annotation did.
const (
	sourceGPUAnnotation = "gpu_annotation"
	sourceCPUAnnotation = "cpu_annotation"
	sourceProfilerStep  = "profiler_step"
	sourceGraphLaunch   = "graph_launch"
)

// Step is one engine step as a trace shows it, and the kernels that ran in
// it. It is read back, not known: its kind and batch come from a label
// parsed by one of several sources (or none, leaving BS 0), its bounds from
// annotations, its kernels are indices into Trace.Kernels. The engine's own
// account of a step, exact and carrying its kernels by value (synth.Step, as
// the simulated engine and the generator record it), is a separate type for
// that reason.
type Step struct {
	Kind     StepKind
	Label    string          // the annotation as written
	Source   string          // what delimited it: gpu_annotation, cpu_annotation, step_function, profiler_step, launch_period, structure or graph_launch
	BS       int             // real batch size, 0 when unknown
	PaddedBS int             // padded graph batch (decode[bs=R/G]), 0 when none
	Tokens   int             // tokens processed, 0 when unknown
	Eager    bool            // decode without graph replay (eager_decode, or prefill-labelled decode)
	Fields   stepLabelFields // the other fields of an ATOM label, zero when absent
	Start    int64
	End      int64
	Kernels  []int32 // indices into Trace.Kernels, in start order
}

// LabelFields are the fields of an ATOM step label beyond batch and tokens
// (decode[bs=R/G tok=T p=P d=D spec=S], prefill[… ctx=[a, b, c]...+K],
// draft[i/k bs=N], and the optional sqsq=/sqsk=/sk= and tbo=1 fields).
type stepLabelFields struct {
	PrefillSeqs int  // p=: sequences prefilling (a decode[…] step with p>0 is mixed)
	DecodeSeqs  int  // d=: sequences decoding
	Spec        int  // spec=: speculative steps verified in this decode step
	Draft       int  // draft[i/k]: this is draft step i …
	DraftOf     int  // … of k
	TBO         bool // tbo=1: the step ran two-batch-overlap micro-batches
	// Ctx are the per-sequence context lengths the label lists (ATOM lists
	// at most five, then the first three and "...+K"); CtxMore is that K.
	Ctx     []int
	CtxMore int
	// Detail holds the detailed-annotation fields (sqsq=, sqsk=, sk=) as
	// written, "" when absent.
	Detail string
}

// Coverage compares the profiled window (CPU step annotations) with the span
// that GPU kernels actually cover: when it is short, the profiler buffer dropped GPU events.
type coverage struct {
	GPUSpan units.Duration // first kernel start to last kernel end
	Window  units.Duration // first to last CPU step annotation (or trace span when none)
	// Before and After are how far the GPU span reaches outside the step
	// window (0 when inside, or when the trace has no step window): GPU
	// time the window does not hold.
	Before, After       units.Duration
	Steps               int
	StepsWithoutKernels int
	DecodeSteps         int
	DecodeWithout       int // decode steps without kernels
}

// Trace is everything profile-model keeps of one trace file.
type Trace struct {
	Path   string
	Device string // deviceProperties[0].name, "" when absent
	Era    string // format era, e.g. "kineto-2024-ns", "legacy-2021", "roctracer", "rocprofiler-sdk"
	Vendor string // "amd", "nvidia" or ""
	Kind   string // KindExecution, KindCapture or KindGPUOnly
	// Engine is the serving engine whose step function the Python frames
	// record, by its source file ("vllm", "sglang" or "atom"); "" when no
	// frame says.
	Engine string
	Events int64 // every entry of traceEvents
	ByCat  map[string]int64
	Meta   map[string]string // scalar top-level keys (schemaVersion, displayTimeUnit, ...)
	BaseNS int64             // baseTimeNanoseconds, 0 when absolute

	Kernels []Kernel // kernels, memcpys and memsets, sorted by (Start, input order)
	// Names are the distinct names of the kernels, each once, in order of
	// first appearance: Kernel.NameID indexes it.
	Names       []string
	Dims        []launchDims    // launch geometries; Dims[0] is the zero value (not given)
	Launches    []runtimeLaunch // runtime launches with a correlation id
	Graphs      []graphLaunch
	Annotations []annotation
	stepFrames  []stepFrame // the engine's step function in the Python frames (stepfunc.go)
	Steps       []Step
	// ops names the CPU ops that launched GPU work, by External id (the
	// id a launch and its kernels carry): LaunchOp, LaunchOpID, OpNames.
	ops opIndex

	DecodeBS     int         // most frequent decode batch size (each step counted once), 0 when no decode step
	DecodeBSHist map[int]int // decode batch size -> steps
	Coverage     coverage
	Warnings     []diag.Warning
}
