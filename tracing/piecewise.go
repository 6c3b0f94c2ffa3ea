package tracing

import (
	"slices"
)

// sourceStructure: steps formed from the structure of the GPU timeline
// (no annotation said where they are).
const sourceStructure = "structure"

// structureSteps forms engine steps from the timeline when no annotation
// delimits them and graphs are replayed piecewise (vLLM's default): each
// step replays several graph pieces with eager kernels (attention)
// between them, and the host's work between steps (scheduling, sampling,
// output processing) leaves the GPU idle longer than anything inside a
// step. The steps are the runs of kernels between the idle gaps of the
// longest class that still leaves at least two graph launches in a
// typical step. It reports false, forming nothing, when the timeline has
// no such structure (one graph launch per step: every launch is a step, as
// before).
func structureSteps(t *Trace) bool {
	n := len(t.Kernels)
	if len(t.Graphs) < 4 || n < 8 {
		return false
	}
	// gap[i]: the GPU's idle time before kernel i (all streams of the
	// device: a kernel that overlaps keeps it busy).
	gap := make([]int64, n)
	end := t.Kernels[0].End()
	for i := 1; i < n; i++ {
		k := &t.Kernels[i]
		gap[i] = max(0, k.Start-end)
		end = max(end, k.End())
	}
	sorted := slices.Clone(gap[1:])
	slices.SortFunc(sorted, func(a, b int64) int { return cmpInt64(b, a) }) // longest first
	const (
		minGap   = 5_000 // ns: host work between steps takes longer than this
		minRatio = 3     // a step boundary is this much longer than the next gap
	)
	maxSteps := len(t.Graphs) / 2
	for j := min(maxSteps, len(sorted)-1) - 1; j >= 0; j-- {
		hi, lo := sorted[j], sorted[j+1]
		if hi < minGap || hi < minRatio*max(lo, 1) {
			continue
		}
		threshold := lo + (hi-lo)/2
		steps := splitAt(t, gap, threshold)
		if piecewise(t, steps) {
			for _, ks := range steps {
				// Graphs replay decode batches; a step with no graph
				// launch was too large for them: a prefill.
				kind := StepPrefill
				if slices.ContainsFunc(ks, func(k int32) bool { return t.Kernels[k].Graph >= 0 }) {
					kind = StepDecode
				}
				addStep(t, Step{Kind: kind, Source: sourceStructure, Kernels: ks})
			}
			finishSteps(t)
			return true
		}
	}
	return false
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// splitAt cuts the timeline before every kernel whose idle gap exceeds
// threshold.
func splitAt(t *Trace, gap []int64, threshold int64) [][]int32 {
	var steps [][]int32
	var cur []int32
	for i := range t.Kernels {
		if i > 0 && gap[i] > threshold && len(cur) > 0 {
			steps = append(steps, cur)
			cur = nil
		}
		cur = append(cur, int32(i))
	}
	if len(cur) > 0 {
		steps = append(steps, cur)
	}
	return steps
}

// piecewise tells whether steps look like piecewise graph replays: the
// typical step (median) holds at least two graph launches and eager
// kernels besides.
func piecewise(t *Trace, steps [][]int32) bool {
	if len(steps) < 2 {
		return false
	}
	launches := make([]int, 0, len(steps))
	eager := 0
	for _, ks := range steps {
		seen := map[int32]bool{}
		for _, k := range ks {
			if g := t.Kernels[k].Graph; g >= 0 {
				seen[g] = true
			} else {
				eager++
			}
		}
		launches = append(launches, len(seen))
	}
	slices.Sort(launches)
	return launches[len(launches)/2] >= 2 && eager > 0
}
