package tracing

import (
	"strconv"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/units"
)

// Summary is what `profile-model inspect` reports about a trace. Its JSON
// field names are part of the command's interface.
type Summary struct {
	Path             string           `json:"path"`
	Device           string           `json:"device"`
	Vendor           string           `json:"vendor,omitempty"`
	Era              string           `json:"era"`
	TraceKind        string           `json:"trace_kind"` // execution, capture or gpu_only
	Events           int64            `json:"events"`
	EventsByCategory map[string]int64 `json:"events_by_category"`
	Kernels          int              `json:"kernels"` // complete kernel events, no memcpy/memset
	DistinctKernels  int              `json:"distinct_kernels"`
	KernelTime       units.Duration   `json:"kernel_time_us"`
	Memcpys          int              `json:"memcpys"`
	Memsets          int              `json:"memsets"`
	GraphLaunches    int              `json:"graph_launches"`
	KernelsReplayed  int              `json:"kernels_replayed"`
	Steps            map[string]int   `json:"steps"`
	// StepSources says which evidence delimited the steps (StepSource
	// values and how many steps each): gpu_annotation, cpu_annotation,
	// step_function, profiler_step, structure or graph_launch.
	StepSources  map[string]int `json:"step_sources"`
	DecodeBS     int            `json:"decode_bs"`
	DecodeBSHist map[string]int `json:"decode_bs_hist"`
	// Padding: decode steps that replayed a graph larger than their batch
	// (decode[bs=R/G]) and the share of the graph rows of all graph decode
	// steps that were padding, in percent.
	PaddedSteps int     `json:"padded_decode_steps,omitempty"`
	PaddingPct  float64 `json:"padding_pct,omitempty"`
	// SpecSteps counts decode steps that verified speculative tokens (spec>0).
	SpecSteps int             `json:"spec_decode_steps,omitempty"`
	Coverage  coverageSummary `json:"coverage"`
	Warnings  []diag.Warning  `json:"warnings"`
}

// CoverageSummary is the coverage part of Summary.
type coverageSummary struct {
	GPUSpanS            float64 `json:"gpu_span_s"`
	WindowS             float64 `json:"window_s"`
	BeforeWindowS       float64 `json:"gpu_before_window_s,omitempty"`
	AfterWindowS        float64 `json:"gpu_after_window_s,omitempty"`
	Steps               int     `json:"steps"`
	StepsWithoutKernels int     `json:"steps_without_kernels"`
	DecodeSteps         int     `json:"decode_steps"`
	DecodeWithout       int     `json:"decode_steps_without_kernels"`
}

// Summarize computes the inspect summary of t.
func (t *Trace) Summarize() Summary {
	s := Summary{
		Path: t.Path, Device: t.Device, Vendor: t.Vendor, Era: t.Era, TraceKind: t.Kind,
		Events: t.Events, EventsByCategory: t.ByCat,
		GraphLaunches: len(t.Graphs), Steps: map[string]int{}, StepSources: map[string]int{},
		DecodeBS: t.DecodeBS, DecodeBSHist: map[string]int{},
		Warnings: append([]diag.Warning{}, t.Warnings...),
	}
	seen := make([]bool, len(t.Names))
	var total int64
	for i := range t.Kernels {
		k := &t.Kernels[i]
		switch k.Kind {
		case KindMemcpy:
			s.Memcpys++
			continue
		case KindMemset:
			s.Memsets++
			continue
		}
		s.Kernels++
		if !seen[k.NameID] {
			seen[k.NameID] = true
			s.DistinctKernels++
		}
		total += k.Dur
		if k.Replayed {
			s.KernelsReplayed++
		}
	}
	s.KernelTime = units.Duration(total)
	var rows, pad int
	for _, st := range t.Steps {
		s.Steps[string(st.Kind)]++
		s.StepSources[string(st.Source)]++
		if st.Kind != StepDecode || st.Eager {
			continue
		}
		if st.Fields.Spec > 0 {
			s.SpecSteps++
		}
		switch {
		case st.PaddedBS > st.BS:
			s.PaddedSteps++
			rows += st.PaddedBS
			pad += st.PaddedBS - st.BS
		case st.BS > 0:
			rows += st.BS
		}
	}
	if pad > 0 {
		s.PaddingPct = round3(100 * float64(pad) / float64(rows))
	}
	for bs, n := range t.DecodeBSHist {
		s.DecodeBSHist[strconv.Itoa(bs)] = n
	}
	c := t.Coverage
	s.Coverage = coverageSummary{
		GPUSpanS: round3(c.GPUSpan.Seconds()), WindowS: round3(c.Window.Seconds()),
		BeforeWindowS: round3(c.Before.Seconds()), AfterWindowS: round3(c.After.Seconds()),
		Steps: c.Steps, StepsWithoutKernels: c.StepsWithoutKernels,
		DecodeSteps: c.DecodeSteps, DecodeWithout: c.DecodeWithout,
	}
	return s
}

func round3(f float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', 3, 64), 64)
	return v
}
