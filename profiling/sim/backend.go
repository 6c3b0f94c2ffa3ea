package sim

import (
	"context"
	"time"

	"github.com/profile-model/profile-model/tracing"
)

// Step is one engine step as the scheduler runs it.
type Step struct {
	Kind          tracing.StepKind // tracing.StepPrefill or tracing.StepDecode
	BS            int              // sequences in the step
	Tokens        int              // tokens processed: prompt tokens for prefill, BS for decode
	ContextTokens int              // KV-cache length summed over the sequences, this step's tokens included
	Start         int64            // trace clock (ns since the Unix epoch) when the step's GPU work begins
}

// Backend is the GPU side of the engine: it prices each step from a kernel
// model and, while profiling, records the steps that ran. The engine calls it
// from its one goroutine only, so implementations need no locking.
type Backend interface {
	// Run prices one step (and records it when profiling); the returned
	// duration is the sum of the step's kernels at full scale.
	Run(s Step) time.Duration
	// StartProfile begins recording into dir (the torch profiler directory)
	// at trace time at.
	StartProfile(dir string, at int64) error
	// StopProfile ends recording at trace time at and exports the trace
	// unless write is false; it returns the directories it wrote into.
	StopProfile(ctx context.Context, at int64, write bool) ([]string, error)
}
