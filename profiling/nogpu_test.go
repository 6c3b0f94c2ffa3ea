//go:build !gpu

package profiling

// gpuTag: without -tags gpu only the simulated engine's sweeps run.
const gpuTag = false
