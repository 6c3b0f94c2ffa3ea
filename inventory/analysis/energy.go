package analysis

import (
	"strings"

	"github.com/profile-model/profile-model/internal/results"
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

// GroupEnergy is the energy per output token of a decode step apportioned
// to one group, in joules.
type GroupEnergy struct {
	Group string
	J     float64
}

// DecodeTokenEnergy is a level's energy per decode-step token: the GPUs'
// mean power over the profiled window (the level's mean without one)
// times the decode step's time, over the step's batch. False without
// telemetry, a timed decode step or a batch size.
func (f *LevelFile) DecodeTokenEnergy(l *results.Level) (float64, bool) {
	if f == nil || l == nil || l.Telemetry == nil || f.StepTime.Timed == 0 || f.StepTime.StepUS <= 0 {
		return 0, false
	}
	bs := f.DecodeBS()
	if bs <= 0 {
		bs = l.DecodeBS
	}
	if bs <= 0 {
		return 0, false
	}
	t := l.Telemetry
	w := t.MeanPowerW()
	if win := l.Window; win != nil {
		w = t.MeanPowerBetween(max(win.StartS, 0), win.StopS)
	}
	j := w * f.StepTime.StepUS / 1e6 / float64(bs)
	return j, j > 0
}

// RoleEnergy apportions a level's energy per decode-step token among the
// groups by their share of the step's time (DecodeShares): an
// apportionment, not a measurement, since no tool reads a kernel's own
// energy. Nil without telemetry or a decode table.
func (f *LevelFile) RoleEnergy(l *results.Level) []GroupEnergy {
	perTok, ok := f.DecodeTokenEnergy(l)
	if !ok {
		return nil
	}
	var out []GroupEnergy
	for _, s := range f.DecodeShares() {
		out = append(out, GroupEnergy{s.Group, perTok * s.Share})
	}
	return out
}
