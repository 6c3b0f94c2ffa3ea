package inventory

// StepKernels is stepKernels, for the external fuzz test.
var StepKernels = stepKernels
