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
