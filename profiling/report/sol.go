package report

import (
	"fmt"
	"strings"

	"github.com/profile-model/profile-model/inventory/roofline"
)

// sol is a level's speed of light, recomputed from the model config and
// the peaks the report was given (so a report rebuilt with another config
// or peaks file has it too), at the context the run recorded; nil when
// the level has no analysis or it cannot be computed.
func (v *view) sol(l *level) *roofline.SpeedOfLight {
	if l == nil || l.File == nil || v.r.arch == nil {
		return nil
	}
	isl, osl := v.lengths()
	rl := roofline.Level{Arch: v.r.arch, Device: l.File.Summary.Device, TP: max(v.r.info.Engine.TP, 1),
		KVCache: v.r.info.Engine.KVCacheDType, Context: float64(isl) + float64(osl)/2, Peaks: v.r.peaks}
	if t := l.decode(); t != nil {
		rl.Decode = &t.LayerTable
	}
	if f := l.File.Roofline; f != nil && f.Step.Context > 0 {
		rl.Context = f.Step.Context
	}
	s, _ := rl.SpeedOfLight(l.File.Summary.DecodeBSHist, l.File.StepTime.StepUS)
	return s
}

// hasSOL says whether any level has a speed of light to show.
func (v *view) hasSOL() bool {
	for _, l := range v.r.levels {
		if v.sol(l) != nil {
			return true
		}
	}
	return false
}

// solCells are a level's two cells of the throughput table: the speed of
// light of its decode step and the measured step as a multiple of it.
func (v *view) solCells(l *level) []string {
	s := v.sol(l)
	if s == nil {
		return []string{dash, dash}
	}
	mult := dash
	if s.Multiple > 0 {
		mult = f2(s.Multiple) + "×"
	}
	return []string{f2(s.StepUS / 1000), mult}
}

// solNote says below the throughput table what the speed of light is, and
// what it is made of at each level.
func (v *view) solNote(b *md) {
	var lines []string
	var gpu string
	for _, l := range v.r.levels {
		s := v.sol(l)
		if s == nil {
			continue
		}
		gpu = l.File.Summary.Device
		line := fmt.Sprintf("- conc %d: decode batch %s, context %s: weights %s GB + KV cache %s GB read per step = %s ms at the HBM peak, %s TFLOP = %s ms at the matrix peaks",
			l.Conc, f1(s.Batch), f1(s.Context), f2(s.WeightBytes/1e9), f2(s.KVBytes/1e9), f2(s.MemoryUS/1000), f2(s.FLOPs/1e12), f2(s.ComputeUS/1000))
		if s.CommBytes > 0 {
			line += fmt.Sprintf(", all-reduces %s MB = %s ms over the link", f2(s.CommBytes/1e6), f2(s.CommUS/1000))
		}
		line += fmt.Sprintf(": **%s ms**, %s-bound", f2(s.StepUS/1000), s.Bound)
		if s.Multiple > 0 {
			line += fmt.Sprintf("; the measured decode step, %s ms, is **%s×** it", f2(s.MeasuredUS/1000), f2(s.Multiple))
		}
		lines = append(lines, line+".")
		for _, n := range s.Notes {
			if !strings.Contains(strings.Join(lines, "\n"), n) {
				lines = append(lines, "  "+n+".")
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	b.p("**Speed of light** (SOL): the least time a decode step could take on the %s — every weight the step needs (the routed experts its tokens touch under uniform routing, the LM head) and every sequence's KV cache read once at the HBM peak, "+
		"its FLOPs at the matrix peaks, tensor-parallel all-reduces over the link; memory and compute overlap, the all-reduces do not (docs/roofline.md). "+
		"Averaged over the level's decode steps by their tokens, as the measured step (start to next start) is:\n\n%s\n\n", gpu, strings.Join(lines, "\n"))
}
