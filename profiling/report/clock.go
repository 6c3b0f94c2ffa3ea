package report

// engineClock puts the client's figures of an accelerated run (a simulated
// engine under --time-scale S) on the engine's clock, the trace's: times ×
// S, throughputs ÷ S, so that every table and chart reads in one clock.
func (r *run) engineClock() {
	s := r.info.Engine.TimeScale
	if s <= 0 || s == 1 {
		return
	}
	for _, l := range r.levels {
		if !l.HaveRow {
			continue
		}
		w := &l.Row
		w.ReqS, w.OutTokS, w.TotalTokS = w.ReqS/s, w.OutTokS/s, w.TotalTokS/s
		for _, t := range []*float64{&w.TTFTP50MS, &w.TTFTP99MS, &w.TPOTP50MS, &w.TPOTP99MS, &w.ITLP50MS, &w.E2ELP50MS} {
			*t *= s
		}
	}
}
