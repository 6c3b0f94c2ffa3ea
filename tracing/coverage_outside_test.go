package tracing_test

import (
	"context"
	"testing"

	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
)

// TestCoverageOutsideWindow: the GPU time that lies outside the step
// window is counted (inspect once said 100% while 130 ms lay outside):
// every nanosecond of the GPU span is in the window or before or after it.
func TestCoverageOutsideWindow(t *testing.T) {
	path, _ := writeSynth(t, "c.json", synth.GenerateOptions{Layers: 4, DecodeSteps: 20, PrefillSteps: 1, BS: 8, Seed: 3})
	tr, err := tracing.Load(context.Background(), path, tracing.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := tr.Coverage
	if c.Before+c.After == 0 {
		t.Fatalf("the GPU runs behind the CPU in a synth trace, but nothing is outside the window: %+v", c)
	}
	if c.GPUSpan > c.Window+c.Before+c.After {
		t.Errorf("GPU span %v is more than window %v + before %v + after %v", c.GPUSpan, c.Window, c.Before, c.After)
	}
	s := tr.Summarize().Coverage
	if s.BeforeWindowS+s.AfterWindowS <= 0 {
		t.Errorf("the summary leaves it out: %+v", s)
	}
}
