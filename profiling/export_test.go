package profiling

// The harness's test functions that fleet_test.go calls from an external
// test package: it imports profiling/fleet, which imports profiling/plan,
// which imports this package.
var (
	LoadSweepsForTest   = loadSweeps
	SweepNamedForTest   = sweepNamed
	SweepOptionsForTest = sweepOptions
	RunSweepForTest     = runSweep
)

const DeclaredSweepsForTest = declaredSweeps
