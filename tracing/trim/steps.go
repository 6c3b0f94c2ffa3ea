package trim

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/profile-model/profile-model/tracing"
)

// Step is one engine step as its CPU-side annotation shows it, numbered
// as inspect numbers the trace's steps: in start order, from 0.
type Step struct {
	Index   int
	Kind    tracing.StepKind
	Label   string
	BS      int
	StartNS int64 // the annotation's ts as written (baseTimeNanoseconds not added)
	EndNS   int64
	ext     int64
	track   track
}

// track is a (pid, tid) as written.
type track struct{ pid, tid string }

// stepFinder collects the CPU step annotations of a trace: engine labels
// (decode[...], prefill[...], vLLM and SGLang labels) on user annotations,
// and ProfilerStep#N, which count only when no engine label is found.
type stepFinder struct {
	engine, profiler []Step
}

// mayBeStep says whether ev's category is one step annotations have: a
// cheap test before stepOf, for the millions of other events.
func mayBeStep(ev *event) bool {
	switch string(ev.cat) {
	case "user_annotation", "cpu_op", "Operator":
		return true
	}
	return false
}

// stepOf says whether ev is a CPU step annotation and which.
func stepOf(ev *event) (Step, bool) {
	if ev.ph != 'X' || !ev.hasTS {
		return Step{}, false
	}
	switch string(ev.cat) {
	case "user_annotation":
	case "cpu_op", "Operator":
		if !strings.HasPrefix(string(ev.name), "ProfilerStep#") {
			return Step{}, false
		}
	default:
		return Step{}, false
	}
	st, ok := tracing.ParseStepLabel(nameString(ev.name))
	if !ok {
		return Step{}, false
	}
	return Step{
		Kind: st.Kind, Label: st.Label, BS: st.BS,
		StartNS: ev.ts, EndNS: ev.end(), ext: ev.externalID(),
		track: track{string(ev.pid), string(ev.tid)},
	}, true
}

func (f *stepFinder) add(ev *event) {
	st, ok := stepOf(ev)
	if !ok {
		return
	}
	if st.Kind == tracing.StepProfiler {
		f.profiler = append(f.profiler, st)
	} else {
		f.engine = append(f.engine, st)
	}
}

// steps returns the steps of the preferred tier, outermost only (a label
// nested in another on the same track describes the same step), in start
// order and numbered.
func (f *stepFinder) steps() []Step {
	s := f.engine
	if len(s) == 0 {
		s = f.profiler
	}
	s = slices.Clone(s)
	slices.SortStableFunc(s, func(a, b Step) int { return cmp.Compare(a.StartNS, b.StartNS) })
	end := map[track]int64{}
	kept := s[:0]
	for _, st := range s {
		if e, ok := end[st.track]; ok && st.EndNS <= e {
			continue
		}
		end[st.track] = st.EndNS
		kept = append(kept, st)
	}
	for i := range kept {
		kept[i].Index = i
	}
	return kept
}

// profilerTier says whether the steps are ProfilerStep#N (no engine labels).
func (f *stepFinder) profilerTier() bool { return len(f.engine) == 0 }

// describe says how many steps of which kinds, for messages.
func describe(steps []Step) string {
	if len(steps) == 0 {
		return "no steps"
	}
	kinds := map[tracing.StepKind]int{}
	for _, s := range steps {
		kinds[s.Kind]++
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		parts = append(parts, fmt.Sprintf("%d %s", kinds[k], k))
	}
	noun := "steps"
	if len(steps) == 1 {
		noun = "step"
	}
	return fmt.Sprintf("%d %s (%s), numbered 0 to %d", len(steps), noun, strings.Join(parts, ", "), len(steps)-1)
}

var errNoSteps = errors.New("the trace has no step annotations on the CPU side (engine labels such as decode[...], or ProfilerStep#N): cut it by time with --window t0:t1 instead")

// choose picks the steps the options ask for.
func choose(steps []Step, opts *Options) ([]Step, error) {
	if len(steps) == 0 {
		return nil, errNoSteps
	}
	if r := opts.Steps; r != nil {
		if r.From < 0 || r.To <= r.From || r.To > len(steps) {
			return nil, fmt.Errorf("no steps %d:%d: the trace has %s", r.From, r.To, describe(steps))
		}
		return steps[r.From:r.To], nil
	}
	return middleDecode(steps, opts.Decode)
}

// middleDecode picks n consecutive decode steps (no other step between
// them) at the trace's most frequent decode batch size, the run whose
// middle is nearest the middle of the profile: the steady state, away from
// warm-up and drain.
func middleDecode(steps []Step, n int) ([]Step, error) {
	hist := map[int]int{}
	decodes := 0
	for _, s := range steps {
		if s.Kind == tracing.StepDecode {
			decodes++
			hist[s.BS]++
		}
	}
	if decodes < n {
		return nil, fmt.Errorf("%d decode steps asked for, but the trace has %s: pick steps with --steps a:b", n, describe(steps))
	}
	bs := 0
	for b, c := range hist {
		if c > hist[bs] || (c == hist[bs] && b > bs) {
			bs = b
		}
	}
	mid := (steps[0].StartNS + steps[len(steps)-1].EndNS) / 2
	pick := func(steady bool) int {
		best, bestDist := -1, int64(0)
		run := 0
		for i, s := range steps {
			if s.Kind != tracing.StepDecode || (steady && s.BS != bs) {
				run = 0
				continue
			}
			if run++; run < n {
				continue
			}
			first := i - n + 1
			d := (steps[first].StartNS+s.EndNS)/2 - mid
			if d < 0 {
				d = -d
			}
			if best < 0 || d < bestDist {
				best, bestDist = first, d
			}
		}
		return best
	}
	first := pick(true)
	if first < 0 {
		first = pick(false)
	}
	if first < 0 {
		return nil, fmt.Errorf("the trace has %s, but no %d decode steps in a row: pick steps with --steps a:b", describe(steps), n)
	}
	return steps[first : first+n], nil
}
