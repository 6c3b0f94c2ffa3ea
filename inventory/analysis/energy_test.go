package analysis

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory"
)

func TestDecodeShares(t *testing.T) {
	t.Parallel()
	f := &LevelFile{
		// A 1000 µs step: 200 µs of gaps; 10 layers of 70 µs and 100 µs
		// outside them (prologue, epilogue, copies).
		StepTime: StepTime{Timed: 5, StepUS: 1000, GapUS: 200, Layers: 10, LayerUS: 70, PrologueUS: 60, EpilogueUS: 30, CopyUS: 10},
		Decode: &LevelTable{LayerTable: inventory.LayerTable{Positions: []inventory.Position{
			{Category: "Paged attention (decode)", AvgUS: 20},
			{Category: "MoE expert GEMM", AvgUS: 30},
			{Category: "MoE gate", AvgUS: 5},
			{Category: "Dense GEMM (FP8/FP4)", AvgUS: 10},
			{Category: "RMSNorm / LayerNorm", AvgUS: 5},
		}}},
	}
	got := f.DecodeShares()
	// Busy 0.8: layers 700 of 800 µs busy (0.7), outside 0.1.
	want := []GroupShare{
		{GroupAttention, 0.7 * 20 / 70}, {GroupExperts, 0.7 * 30 / 70}, {GroupRouting, 0.7 * 5 / 70},
		{GroupGEMM, 0.7 * 10 / 70}, {GroupOther, 0.7 * 5 / 70}, {GroupOutside, 0.1}, {GroupIdle, 0.2},
	}
	require.Len(t, got, len(want))
	var sum float64
	for i := range want {
		require.Equal(t, want[i].Group, got[i].Group)
		require.InDelta(t, want[i].Share, got[i].Share, 1e-12, want[i].Group)
		sum += got[i].Share
	}
	require.InDelta(t, 1, sum, 1e-12)
	require.Nil(t, (&LevelFile{}).DecodeShares())

	// 500 W in the profiled window (the level's mean is 600 W) over the
	// 1000 µs step of batch 8: 62.5 mJ per token.
	f.Summary.DecodeBS = 8
	l := &results.Level{Telemetry: &results.Telemetry{GPUs: []results.GPUTelemetry{{Samples: 2, MeanPowerW: 600}},
		Power: []results.PowerPoint{{T: 1, W: 500}, {T: 5, W: 700}}}, Window: &results.ProfileWindow{StartS: 0, StopS: 2}}
	perTok, ok := f.DecodeTokenEnergy(l)
	require.True(t, ok)
	require.InDelta(t, 500*1000e-6/8, perTok, 1e-12)
	roles := f.RoleEnergy(l)
	require.Len(t, roles, len(want))
	require.Equal(t, GroupExperts, roles[1].Group)
	require.InDelta(t, perTok*0.7*30/70, roles[1].J, 1e-12)
	l.Window = nil
	perTok, _ = f.DecodeTokenEnergy(l)
	require.InDelta(t, 600*1000e-6/8, perTok, 1e-12)
	require.Nil(t, f.RoleEnergy(&results.Level{}), "no telemetry")

	require.Equal(t, GroupComm, EnergyGroup("All-reduce / collectives"))
	require.Equal(t, GroupAttention, EnergyGroup("Flash attention (prefill)"))
	require.Equal(t, GroupAttention, EnergyGroup("KV cache"))
	require.Equal(t, GroupRouting, EnergyGroup("MoE finalize / combine"))
}
