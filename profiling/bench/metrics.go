package bench

import (
	"math"
	"slices"
	"time"

	"github.com/profile-model/profile-model/internal/results"
)

// defaultPercentiles are the percentiles reported when none are given.
var defaultPercentiles = []float64{50, 90, 95, 99}

// Summarize computes mean, median, population std (numpy's default) and
// percentiles with linear interpolation (numpy's default) of vals; an empty
// input gives zeros, as vLLM reports.
func Summarize(vals []float64, pcts []float64) results.Stats {
	s := results.Stats{Pcts: make([]results.Pct, len(pcts))}
	for i, p := range pcts {
		s.Pcts[i].P = p
	}
	if len(vals) == 0 {
		return s
	}
	sorted := slices.Clone(vals)
	slices.Sort(sorted)
	var sum float64
	for _, v := range sorted {
		sum += v
	}
	s.Mean = sum / float64(len(sorted))
	var ss float64
	for _, v := range sorted {
		d := v - s.Mean
		ss += d * d
	}
	s.Std = math.Sqrt(ss / float64(len(sorted)))
	s.Median = Percentile(sorted, 50)
	for i, p := range pcts {
		s.Pcts[i].Value = Percentile(sorted, p)
	}
	return s
}

// summarizeNS is Summarize of nanosecond durations in milliseconds, to the
// bit, without a copy: it sorts ds in place (milliseconds keep the order of
// nanoseconds), so that a level's inter-token gaps, a million at a large
// level, are held once, as integers (of 4 bytes when they fit).
func summarizeNS[T uint32 | time.Duration](ds []T, pcts []float64) results.Stats {
	s := results.Stats{Pcts: make([]results.Pct, len(pcts))}
	for i, p := range pcts {
		s.Pcts[i].P = p
	}
	if len(ds) == 0 {
		return s
	}
	slices.Sort(ds)
	var sum float64
	for _, d := range ds {
		sum += ms(time.Duration(d))
	}
	s.Mean = sum / float64(len(ds))
	var ss float64
	for _, d := range ds {
		v := ms(time.Duration(d)) - s.Mean
		ss += v * v
	}
	s.Std = math.Sqrt(ss / float64(len(ds)))
	s.Median = percentileNS(ds, 50)
	for i, p := range pcts {
		s.Pcts[i].Value = percentileNS(ds, p)
	}
	return s
}

// percentileNS is Percentile of sorted nanosecond durations in
// milliseconds.
func percentileNS[T uint32 | time.Duration](sorted []T, p float64) float64 {
	pos := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	if lo >= len(sorted)-1 {
		return ms(time.Duration(sorted[len(sorted)-1]))
	}
	if lo < 0 {
		return ms(time.Duration(sorted[0]))
	}
	frac := pos - float64(lo)
	a, b := ms(time.Duration(sorted[lo])), ms(time.Duration(sorted[lo+1]))
	return a + frac*(b-a)
}

// itlStats summarises the inter-token gaps of the successful outputs.
func itlStats(outs []output, pcts []float64) results.Stats {
	n, small := 0, true
	for i := range outs {
		if !outs[i].OK() {
			continue
		}
		n += outs[i].ITL.Len()
		for g := range outs[i].ITL.All() {
			small = small && g >= 0 && g <= math.MaxUint32
		}
	}
	if small {
		gaps := make([]uint32, 0, n)
		for i := range outs {
			if outs[i].OK() {
				for g := range outs[i].ITL.All() {
					gaps = append(gaps, uint32(g))
				}
			}
		}
		return summarizeNS(gaps, pcts)
	}
	gaps := make([]time.Duration, 0, n)
	for i := range outs {
		if outs[i].OK() {
			for g := range outs[i].ITL.All() {
				gaps = append(gaps, g)
			}
		}
	}
	return summarizeNS(gaps, pcts)
}

// Percentile returns percentile p (0–100) of sorted values by linear
// interpolation between closest ranks (numpy.percentile's default).
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	if lo < 0 {
		return sorted[0]
	}
	frac := pos - float64(lo)
	return sorted[lo] + frac*(sorted[lo+1]-sorted[lo])
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// SLO holds optional goodput limits in milliseconds; zero means no limit.
type SLO struct {
	TTFT, TPOT, E2EL float64
}

func (s SLO) set() bool { return s.TTFT > 0 || s.TPOT > 0 || s.E2EL > 0 }

// metrics is the aggregate of one level, with vLLM's definitions.
type metrics struct {
	Duration             time.Duration
	Completed, Failed    int
	NotSent              int // requests never sent (the level was stopped)
	Failures             map[failureKind]int
	TotalInput           int
	TotalOutput          int
	RequestThroughput    float64
	RequestGoodput       float64 // 0 when no SLO is set
	OutputThroughput     float64
	TotalTokenThroughput float64
	TTFT, TPOT, ITL      results.Stats
	E2EL                 results.Stats
	// Where token counts came from: requests whose output (prompt) length
	// came from counted events (the requested length) instead of usage.
	OutputCounted, PromptRequested int
	InputLens, OutputLens          []int // per successful request

	// Tokens by kind and by frame, over successful requests: of the output
	// tokens, those that were reasoning; the tokens the frames carried and
	// the frames; the least exact way a request's tokens were shared among
	// its frames.
	ReasoningTokens     int
	FrameTokens, Frames int
	Split               tokenSplit
	// Resent counts the dead kept-alive connections requests went past
	// (the server had closed them while idle): not failures.
	Resent int
	// UsageRejected counts the requests whose usage figures contradicted
	// what was streamed (output.UsageRejected); UsageRejectedFirst is the
	// first one's reason.
	UsageRejected      int
	UsageRejectedFirst string
}

// TokensPerFrame is the mean number of tokens a frame carried; 0 without
// frames.
func (m *metrics) TokensPerFrame() float64 {
	if m.Frames == 0 {
		return 0
	}
	return float64(m.FrameTokens) / float64(m.Frames)
}

// aggregate computes a level's metrics from its outputs. total is the
// number of requests the level meant to send.
func aggregate(outs []output, total int, duration time.Duration, pcts []float64, slo SLO) metrics {
	m := metrics{Duration: duration, Failures: map[failureKind]int{}}
	var ttfts, tpots, e2els []float64
	good := 0
	for i := range outs {
		o := &outs[i]
		m.Resent += o.Resent
		if !o.OK() {
			m.Failed++
			m.Failures[o.Failure]++
			continue
		}
		m.Completed++
		m.TotalInput += o.PromptTokens
		m.TotalOutput += o.OutputTokens
		m.InputLens = append(m.InputLens, o.PromptTokens)
		m.OutputLens = append(m.OutputLens, o.OutputTokens)
		switch {
		case o.UsageRejected != "":
			if m.UsageRejected++; m.UsageRejected == 1 {
				m.UsageRejectedFirst = o.UsageRejected
			}
		default:
			if !o.UsageOutput {
				m.OutputCounted++
			}
			if !o.UsagePrompt {
				m.PromptRequested++
			}
		}
		m.ReasoningTokens += o.ReasoningTokens
		m.FrameTokens += o.FrameTokens
		m.Frames += o.TokenEvents
		if o.Split.rank() > m.Split.rank() || m.Split == "" {
			m.Split = o.Split
		}
		ttft, e2el := ms(o.TTFT), ms(o.E2EL)
		ttfts = append(ttfts, ttft)
		e2els = append(e2els, e2el)
		tpot := 0.0
		if o.OutputTokens > 1 {
			tpot = (e2el - ttft) / float64(o.OutputTokens-1)
			tpots = append(tpots, tpot)
		}
		if (slo.TTFT == 0 || ttft <= slo.TTFT) && (slo.TPOT == 0 || tpot <= slo.TPOT) && (slo.E2EL == 0 || e2el <= slo.E2EL) {
			good++
		}
	}
	m.NotSent = max(total-len(outs), 0)
	if sec := duration.Seconds(); sec > 0 {
		m.RequestThroughput = float64(m.Completed) / sec
		m.OutputThroughput = float64(m.TotalOutput) / sec
		m.TotalTokenThroughput = float64(m.TotalInput+m.TotalOutput) / sec
		if slo.set() {
			m.RequestGoodput = float64(good) / sec
		}
	}
	m.TTFT = Summarize(ttfts, pcts)
	m.TPOT = Summarize(tpots, pcts)
	m.ITL = itlStats(outs, pcts)
	m.E2EL = Summarize(e2els, pcts)
	return m
}
