package analysis

import (
	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/inventory/roofline"
)

// Rooflines are a trace's decode and prefill positions against the GPU's
// roofline; a nil table's note says why it is absent.
type Rooflines struct {
	Decode, Prefill         *roofline.Table
	DecodeNote, PrefillNote string
	// DimsWarnings: a capture trace's GEMM dims that disagree with the
	// model config's shapes.
	DimsWarnings []diag.Warning
	// SpeedOfLight is the least time of the level's decode steps (its
	// measured step filled in by SetRoofline); SOLNote says why it is nil.
	SpeedOfLight *roofline.SpeedOfLight
	SOLNote      string
}

// AddRoofline computes the rooflines of the result's decode and prefill
// tables from rl (the model config, TP, KV-cache dtype, peaks and the
// workload's context) and what the trace says (its GPU, batch sizes, the
// labels' context and prefill tokens), and gives the tables' positions
// their roofline columns.
func (r *Result) AddRoofline(rl roofline.Level) Rooflines {
	rl.Decode, rl.Prefill, rl.Device = r.Decode, r.Prefill, r.Summary.Device
	if bs := roofline.MeanBatch(r.Summary.DecodeBSHist); bs > 0 || rl.BS <= 0 {
		rl.BS = bs // the trace's, when its steps say it; else the caller's
	}
	if r.Trace != nil {
		if c := roofline.ContextOf(r.Trace); c > 0 {
			rl.Context = c
		}
		rl.PrefillTokens, rl.PrefillSeqs, rl.PrefillContext = roofline.PrefillOf(r.Trace)
	}
	var out Rooflines
	out.Decode, out.DecodeNote = roofline.Build(rl)
	out.Prefill, out.PrefillNote = roofline.BuildPrefill(rl)
	out.SpeedOfLight, out.SOLNote = rl.SpeedOfLight(r.Summary.DecodeBSHist, 0)
	out.Decode.Annotate(r.Decode)
	out.Prefill.Annotate(r.Prefill)
	if out.Decode != nil && r.Decode.HasCapture() {
		out.DimsWarnings = roofline.CheckDims(r.Decode, rl.Arch, out.Decode.Step)
	}
	return out
}

// SetRoofline puts the rooflines in the level file.
func (f *LevelFile) SetRoofline(rs Rooflines) {
	f.Roofline, f.RooflineNote = rs.Decode, rs.DecodeNote
	f.PrefillRoofline, f.PrefillRooflineNote = rs.Prefill, rs.PrefillNote
	f.Warnings = append(f.Warnings, rs.DimsWarnings...)
	f.SpeedOfLight, f.SpeedOfLightNote = rs.SpeedOfLight, rs.SOLNote
	if sol := f.SpeedOfLight; sol != nil && f.StepTime.StepUS > 0 && sol.StepUS > 0 {
		sol.MeasuredUS = f.StepTime.StepUS
		sol.Multiple = sol.MeasuredUS / sol.StepUS
	}
}
