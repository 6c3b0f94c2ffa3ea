package analysis

import (
	"strings"
)

// Energy groups of a decode step: the layer roles whose GPU time the
// level's energy is apportioned to, then the kernels outside the layers
// and the time no kernel runs.
const (
	GroupAttention = "attention"
	GroupExperts   = "MoE experts"
	GroupRouting   = "MoE routing"
	GroupGEMM      = "dense GEMMs"
	GroupComm      = "communication"
	GroupOther     = "other layer kernels"
	GroupOutside   = "outside the layers"
	GroupIdle      = "idle (gaps between kernels)"
)

// EnergyGroups are the groups in the order the report and diff print them.
var EnergyGroups = []string{GroupAttention, GroupExperts, GroupRouting, GroupGEMM, GroupComm, GroupOther, GroupOutside, GroupIdle}

// EnergyGroup is the group of a kernel category.
func EnergyGroup(category string) string {
	switch {
	case strings.Contains(category, "attention"), category == "KV cache":
		return GroupAttention
	case category == "MoE expert GEMM":
		return GroupExperts
	case strings.HasPrefix(category, "MoE "):
		return GroupRouting
	case strings.HasPrefix(category, "Dense GEMM"):
		return GroupGEMM
	case category == "All-reduce / collectives":
		return GroupComm
	}
	return GroupOther
}

// GroupShare is a group's share (0 to 1) of a decode step's time.
type GroupShare struct {
	Group string
	Share float64
}

// DecodeShares splits a decode step's time among the energy groups: the
// idle share is the step's gaps (no kernel running), the rest its GPU-busy
// time, split between the layers (layers × one layer's time) and the
// kernels outside them (prologue, epilogue, copies) in the proportions the
// table gives, and the layers' part among the groups by the positions'
// average times. Shares of groups with no time are left out; they sum to
// 1. Nil when the level has no timed decode step or no decode table.
func (f *LevelFile) DecodeShares() []GroupShare {
	st, t := f.StepTime, f.Decode
	if t == nil || len(t.Positions) == 0 || st.Timed == 0 || st.StepUS <= 0 {
		return nil
	}
	idle := min(max(st.GapUS/st.StepUS, 0), 1)
	layers := float64(st.Layers) * st.LayerUS
	outside := st.PrologueUS + st.EpilogueUS + st.CopyUS
	if layers+outside <= 0 {
		return nil
	}
	busy := 1 - idle
	by := map[string]float64{}
	var total float64
	for _, p := range t.Positions {
		by[EnergyGroup(p.Category)] += p.AvgUS
		total += p.AvgUS
	}
	var out []GroupShare
	for _, g := range EnergyGroups {
		var s float64
		switch g {
		case GroupOutside:
			s = busy * outside / (layers + outside)
		case GroupIdle:
			s = idle
		default:
			if total > 0 {
				s = busy * layers / (layers + outside) * by[g] / total
			}
		}
		if s > 0 {
			out = append(out, GroupShare{g, s})
		}
	}
	return out
}
