package results

// ProfileWindow says which part of a profiled level its trace covers, in
// seconds from the level's start (the first request): the profiler was
// started at StartS (before the level: negative) and stopped at StopS,
// when the stop request was sent. A window stopped within the level
// (StoppedBy "steps" or "seconds") began to count at SteadyS, when every
// request slot was first busy, and the stop took StopWaitS while the
// level ran (an engine that exports as it stops may pause meanwhile).
// DecodeSteps estimates the decode steps from SteadyS to the stop, as
// StepsFrom says. The level's metrics cover the whole level either way.
type ProfileWindow struct {
	StartS, StopS float64
	StoppedBy     string  // steps, seconds or level_end
	SteadyS       float64 // -1: the load never filled every slot (or was not watched)
	DecodeSteps   float64
	StepsFrom     string
	StopWaitS     float64
}

func (w *ProfileWindow) document() object {
	var o object
	o.add("start_s", w.StartS)
	o.add("stop_s", w.StopS)
	o.add("stopped_by", w.StoppedBy)
	o.add("steady_s", w.SteadyS)
	o.add("decode_steps", w.DecodeSteps)
	o.add("steps_from", w.StepsFrom)
	o.add("stop_wait_s", w.StopWaitS)
	return o
}

// profileWindowJSON is how a ProfileWindow is read back.
type profileWindowJSON struct {
	StartS      float64 `json:"start_s"`
	StopS       float64 `json:"stop_s"`
	StoppedBy   string  `json:"stopped_by"`
	SteadyS     float64 `json:"steady_s"`
	DecodeSteps float64 `json:"decode_steps"`
	StepsFrom   string  `json:"steps_from"`
	StopWaitS   float64 `json:"stop_wait_s"`
}
