package diff

import (
	"fmt"

	"github.com/profile-model/profile-model/internal/results"
)

// benchName is the benchmark name of a comparison of two traces or
// levels; runs add /conc=N.
const benchName = "Profile"

// benchMetrics are one side's figures as benchmark metrics: step-us and
// layer-us, then <category>-us/step and <category>-us/layer; when neither
// is known, total-us and <category>-us over the whole trace.
func (r *Report) benchMetrics(side int) []results.Metric {
	get := func(p *Pair) float64 {
		if side == 0 {
			return p.A
		}
		return p.B
	}
	var ms []results.Metric
	if r.StepUS != nil {
		ms = append(ms, results.Metric{Value: get(r.StepUS), Unit: "step-us"})
	}
	if r.LayerUS != nil {
		ms = append(ms, results.Metric{Value: get(r.LayerUS), Unit: "layer-us"})
	}
	whole := len(ms) == 0 // neither per step nor per layer: whole-trace times
	if whole && r.TotalUS != nil {
		ms = append(ms, results.Metric{Value: get(r.TotalUS), Unit: "total-us"})
	}
	for _, c := range r.Categories {
		u := results.CategoryUnit(c.Category)
		if whole && c.TotalUS != nil && get(c.TotalUS) != 0 {
			ms = append(ms, results.Metric{Value: get(c.TotalUS), Unit: u + "-us"})
		}
		if c.StepUS != nil && get(c.StepUS) != 0 {
			ms = append(ms, results.Metric{Value: get(c.StepUS), Unit: u + "-us/step"})
		}
		if c.LayerUS != nil && get(c.LayerUS) != 0 {
			ms = append(ms, results.Metric{Value: get(c.LayerUS), Unit: u + "-us/layer"})
		}
	}
	return ms
}

// BenchResults are the benchmark lines of each side of a comparison of
// two traces or levels: one sample each.
func (r *Report) BenchResults() (a, b []results.BenchResult) {
	ma, mb := r.benchMetrics(0), r.benchMetrics(1)
	if len(ma) > 0 {
		a = []results.BenchResult{{Name: benchName, Iters: 1, Metrics: ma}}
	}
	if len(mb) > 0 {
		b = []results.BenchResult{{Name: benchName, Iters: 1, Metrics: mb}}
	}
	return a, b
}

// BenchResults are the benchmark lines of each side of a comparison of two
// runs: per level, the client metrics (units as in bench.txt) and the
// kernel figures.
func (rr *RunReport) BenchResults() (a, b []results.BenchResult) {
	for _, l := range rr.Levels {
		name := fmt.Sprintf("%s/conc=%d", benchName, l.Conc)
		ra := results.BenchResult{Name: name, Iters: 1}
		rb := ra
		for _, m := range l.Client {
			if m.Unit == "" {
				continue
			}
			ra.Metrics = append(ra.Metrics, results.Metric{Value: m.Pair.A, Unit: m.Unit})
			rb.Metrics = append(rb.Metrics, results.Metric{Value: m.Pair.B, Unit: m.Unit})
		}
		for _, m := range l.Energy {
			ra.Metrics = append(ra.Metrics, results.Metric{Value: m.Pair.A, Unit: m.Unit})
			rb.Metrics = append(rb.Metrics, results.Metric{Value: m.Pair.B, Unit: m.Unit})
		}
		if l.Kernels != nil {
			ra.Metrics = append(ra.Metrics, l.Kernels.benchMetrics(0)...)
			rb.Metrics = append(rb.Metrics, l.Kernels.benchMetrics(1)...)
		}
		a, b = append(a, ra), append(b, rb)
	}
	return a, b
}
