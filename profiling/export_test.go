package profiling

// The harness's helpers for fleet_test.go, an external test package: it
// imports profiling/fleet, which imports profiling/plan, which imports
// this package.
var (
	LoadSweepsForTest   = loadSweeps
	SweepNamedForTest   = sweepNamed
	SweepOptionsForTest = sweepOptions
	RunSweepForTest     = runSweep
)

const DeclaredSweepsForTest = declaredSweeps
