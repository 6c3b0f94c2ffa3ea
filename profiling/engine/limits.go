package engine

// The bounds of a server's settings, the same for run's flags and for the
// fields of a sweep plan.
const (
	MaxTP          = 1024
	MaxNumSeqs     = 1 << 20
	MaxModelLen    = 1 << 24
	MinTimeScale   = 1e-6
	MaxTimeScale   = 1e6
	MaxCaptureSize = MaxNumSeqs
)
