package tracing

import (
	"fmt"
	"strings"

	"github.com/profile-model/profile-model/internal/diag"
)

// What a trace recorded, as far as its structure tells.
const (
	// KindExecution: the GPU ran what the CPU launched (the usual trace).
	KindExecution = "execution"
	// KindCapture: recorded while the engine captured its CUDA/HIP graphs:
	// most launches were recorded into graphs, not run.
	KindCapture = "capture"
	// KindGPUOnly: kernels (and their runtime calls) with no CPU ops, no
	// annotations and no Python: nothing says where a step starts.
	KindGPUOnly = "gpu_only"
)

// classifyTrace tells a capture trace or a GPU-only trace from an
// execution trace, and says what cannot be derived from it. idx finds the
// kernels of a correlation id.
func classifyTrace(t *Trace, idx corrIndex) {
	t.Kind = KindExecution
	kernels, eager, unrun := 0, 0, 0
	for i := range t.Kernels {
		if t.Kernels[i].Kind == KindKernel {
			kernels++
		}
	}
	// A launch ran when a kernel shares its correlation id (the index
	// leaves out id 0: those kernels are the ones it does not hold).
	ran := func(c int64) bool {
		if c == 0 {
			return len(idx) < len(t.Kernels)
		}
		return len(idx.of(t.Kernels, c)) > 0
	}
	for i := range t.Launches {
		l := &t.Launches[i]
		if l.Graph || strings.Contains(l.Name, "Memcpy") || strings.Contains(l.Name, "Memset") {
			continue
		}
		eager++
		if !ran(l.Correlation) {
			unrun++
		}
	}
	labelled := ""
	for i := range t.Annotations {
		if n := strings.ToLower(t.Annotations[i].Name); strings.HasPrefix(n, "capture") || strings.Contains(n, "graph_capture") || strings.Contains(n, "cudagraph_capture") {
			labelled = t.Annotations[i].Name
			break
		}
	}
	engineSteps := 0
	for i := range t.Steps {
		switch t.Steps[i].Kind {
		case StepDecode, StepPrefill, StepMixed:
			engineSteps++
		}
	}
	// Most launches never ran a kernel, and no engine step ran: the
	// launches were captured into graphs. (A profiler buffer that dropped
	// GPU events leaves steps behind; coverage reports that.)
	capture := engineSteps == 0 && eager >= 20 && unrun*4 >= eager*3 && (labelled != "" || len(t.Graphs) == 0)
	// ATOM's own capture traces (--mark-trace) say so by their name and
	// place: a small graph needs no 20 launches to be recognised, and the
	// warmup forward before the capture ran its launches (half of them).
	if _, _, _, named := ParseCaptureFileName(t.Path); named && engineSteps == 0 && eager > 0 && unrun*3 >= eager &&
		strings.Contains(t.Path, CaptureDir) {
		capture = true
		if labelled == "" {
			labelled = CaptureDir + "/" + t.Path[strings.LastIndexAny(t.Path, `/\`)+1:]
		}
	}
	if capture {
		t.Kind = KindCapture
		why := fmt.Sprintf("%d of %d kernel launches never ran on the GPU (%d kernels executed)", unrun, eager, kernels)
		if labelled != "" {
			why += fmt.Sprintf(", annotated %q", labelled)
		}
		t.Warnings = append(t.Warnings, diag.New(diag.CaptureTrace,
			"this is a graph-capture trace: "+why+"; the launches were recorded into CUDA/HIP graphs, not run, so it shows which kernels each graph holds but no step, layer or kernel timing of serving: profile while the engine serves requests (after warm-up) for those"))
		return
	}
	cpu := t.ByCat["cpu_op"] + t.ByCat["Operator"] + t.ByCat["python_function"] + t.ByCat["user_annotation"]
	if kernels > 0 && cpu == 0 && len(t.Annotations) == 0 {
		t.Kind = KindGPUOnly
		t.Warnings = append(t.Warnings, diag.New(diag.GPUOnly,
			fmt.Sprintf("GPU-only trace: %d kernels and their runtime calls, but no CPU ops, annotations or Python: the kernel inventory, categories and kernel times are exact; engine steps, batch size, profiler coverage and per-step or per-layer tables cannot be derived (record with CPU activities and record_function labels for those)", kernels)))
	}
}
