package tracing

// Unexported names the external tests (package tracing_test) use.
var (
	NewScanner  = newScanner
	ReadCapture = readCapture
)

type (
	Dims        = launchDims
	LabelFields = stepLabelFields
)

const (
	SourceGPUAnnotation = sourceGPUAnnotation
	SourceCPUAnnotation = sourceCPUAnnotation
)

const SourceLaunchPeriod = sourceLaunchPeriod

// StepsByGaps forms t's steps again from the GPU's idle gaps alone (the
// structure source), as if nothing better had delimited them; false when
// the gaps show no such structure.
func StepsByGaps(t *Trace) bool {
	t.Steps = nil
	for i := range t.Kernels {
		t.Kernels[i].Step = -1
	}
	return structureSteps(t)
}
