package report

import (
	"slices"

	"github.com/profile-model/profile-model/inventory"
)

// Phases of a kernel: where in the serving loop it runs.
const (
	phaseDecode  = "decode"
	phasePrefill = "prefill"
	phaseBoth    = "both"
	phaseOther   = "other" // outside the layers of either (sampling, copies, warm-up)
)

// kernelPhase says, for a level, whether a kernel runs in the decode
// steps' layers (or around them), the prefill steps' layers, both, or
// neither; kernels are matched by full name, the prologue and epilogue
// (kept as short names) by short name.
func kernelPhase(l *level) func(k inventory.KernelRow) string {
	in := func(t *inventory.LayerTable, k inventory.KernelRow) bool {
		if t == nil {
			return false
		}
		return slices.ContainsFunc(t.Positions, func(p inventory.Position) bool { return p.Kernel == k.Kernel }) ||
			slices.Contains(t.Prologue, k.ShortName) || slices.Contains(t.Epilogue, k.ShortName)
	}
	var dec, pre *inventory.LayerTable
	if l.File != nil && l.File.Decode != nil {
		dec = &l.File.Decode.LayerTable
	}
	if l.File != nil && l.File.Prefill != nil {
		pre = &l.File.Prefill.LayerTable
	}
	return func(k inventory.KernelRow) string {
		d, p := in(dec, k), in(pre, k)
		switch {
		case d && p:
			return phaseBoth
		case d:
			return phaseDecode
		case p:
			return phasePrefill
		}
		return phaseOther
	}
}
