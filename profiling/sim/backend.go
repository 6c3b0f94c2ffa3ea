package sim

import (
	"context"

	"github.com/profile-model/profile-model/internal/units"
	"github.com/profile-model/profile-model/profiling/synth"
)

// backend is the GPU side of the engine: it prices each step from a kernel
// model and, while profiling, records the steps that ran. The engine calls it
// from its one goroutine only, so implementations need no locking.
type backend interface {
	// Run prices one step the scheduler decided (kind, batch, tokens,
	// context, start) and records it when profiling; the returned duration
	// is the time its kernels keep the GPU busy, at full scale.
	Run(s synth.Step) units.Duration
	// HostGap is the host time between two steps (scheduling, input
	// preparation, output processing) at full scale: the GPU idles for it
	// before each step.
	HostGap() units.Duration
	// OutputLag is how far into the next step (0 to 1) a step's sampled
	// tokens reach their clients; 0: when the step ends.
	OutputLag() float64
	// Intake is the front end's time for a request of promptTokens prompt
	// tokens, at full scale, before the scheduler sees it (tokenizing, the
	// hop to the engine core); requests pay it in parallel.
	Intake(promptTokens int) units.Duration
	// StartProfile begins recording into dir (the torch profiler directory)
	// at trace time at.
	StartProfile(dir string, at int64) error
	// StopProfile ends recording at trace time at, on the engine's
	// goroutine; the export it returns writes the trace (unless write is
	// false) and returns the directories it wrote into. The export runs
	// beside the engine, which keeps stepping and streaming while the file
	// is written, as an engine's worker process does: it must not touch
	// what a step changes.
	StopProfile(at int64, write bool) (export func(ctx context.Context) ([]string, error))
}
