package engine

import "flag"

// The sweep harness of package profiling rewrites its goldens with
// go test ./profiling/... -update; this package has no golden files and
// accepts the flag so that the command runs.
var _ = flag.Bool("update", false, "no effect here: this package has no golden files")
