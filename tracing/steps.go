package tracing

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/units"
)

// ParseStepLabel recognises an engine step annotation and
// returns the step it describes (Kind, Label, BS, PaddedBS, Tokens, Eager,
// Fields); ok is false for any other annotation. ProfilerStep#N is
// recognised as StepProfiler.
//
// ATOM labels (docs/analysis.md lists them): a decode[…] step with p>0
// prefills some sequences too and is StepMixed; prefill[…] with one token per
// sequence is an older release's eager decode.
func ParseStepLabel(name string) (st Step, ok bool) {
	st.Label = name
	br := strings.IndexByte(name, '[')
	if br > 0 && strings.HasSuffix(name, "]") {
		head, body := name[:br], name[br+1:len(name)-1]
		f := labelFields(body)
		st.BS, st.PaddedBS, st.Tokens, st.Fields = f.bs, f.padded, f.tok, f.stepLabelFields
		switch {
		case head == "prefill":
			st.Kind, st.PaddedBS = StepPrefill, 0
			if st.BS > 0 && st.Tokens == st.BS {
				// Older ATOM labels eager decodes prefill[...]: one token
				// per sequence is a decode step.
				st.Kind, st.Eager = StepDecode, true
			}
			return st, true
		case head == "decode":
			st.Kind = StepDecode
			if f.PrefillSeqs > 0 {
				st.Kind = StepMixed
			}
			return st, true
		case head == "eager_decode":
			st.Kind, st.Eager = StepDecode, true
			return st, true
		case strings.HasPrefix(head, "dummy_"):
			st.Kind = StepDummy
			return st, true
		case head == "draft":
			st.Kind = StepDraft
			return st, true
		case head == "step":
			// SGLang: step[DECODE bs=N], step[EXTEND bs=N toks=T].
			st.Fields = stepLabelFields{}
			word, _, _ := strings.Cut(body, " ")
			switch strings.ToUpper(word) {
			case "DECODE":
				st.Kind = StepDecode
			case "EXTEND", "PREFILL", "SPLIT_PREFILL":
				st.Kind = StepPrefill
			case "MIXED":
				st.Kind = StepMixed
			case "IDLE", "PREBUILT":
				st.Kind = StepDummy
			// Speculative decoding (SGLang's ForwardMode, forward_batch_info.py):
			// the target model verifies each sequence's draft tokens in the
			// step that decodes it; the draft model extends on its own.
			case "TARGET_VERIFY":
				st.Kind = StepDecode
			case "DRAFT_EXTEND", "DRAFT_EXTEND_V2":
				st.Kind = StepDraft
			default:
				return Step{}, false
			}
			if st.Kind == StepDecode && st.Tokens == 0 {
				st.Tokens = st.BS
			}
			return st, true
		}
	}
	if n, ok := strings.CutPrefix(name, "capture_graph_bs_"); ok {
		if v, err := strconv.Atoi(n); err == nil {
			return Step{Kind: StepCapture, Label: name, BS: v}, true
		}
	}
	if n, ok := strings.CutPrefix(name, "ProfilerStep#"); ok {
		if _, err := strconv.Atoi(n); err == nil {
			return Step{Kind: StepProfiler, Label: name}, true
		}
	}
	if rest, ok := strings.CutPrefix(name, "execute_new_"); ok {
		return parseVLLMNewCached(name, rest)
	}
	if strings.HasPrefix(name, "execute_") {
		return parseVLLM(name)
	}
	return Step{}, false
}

type fields struct {
	bs, padded, tok int
	stepLabelFields
}

// labelFields reads the key=value parts of a bracketed label body: bs=N or
// bs=R/G, tok= (toks=, tokens=), p=, d=, spec=, tbo=, ctx=N or
// ctx=[a, b, c] (a list may hold spaces and end in ...+K), the detailed
// sqsq=/sqsk=/sk= fields (kept as written), and a bare i/k (draft steps).
// Unknown keys and malformed values are skipped: a label is a hint, not a
// contract.
func labelFields(body string) fields {
	var f fields
	var detail []string
	for rest := body; ; {
		rest = strings.TrimLeft(rest, " ,;")
		if rest == "" {
			break
		}
		var part string
		part, rest = nextLabelPart(rest)
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			// draft[i/k bs=N]: the step index of the draft chain.
			if i, n, ok := strings.Cut(part, "/"); ok && f.DraftOf == 0 {
				a, err1 := strconv.Atoi(i)
				b, err2 := strconv.Atoi(n)
				if err1 == nil && err2 == nil {
					f.Draft, f.DraftOf = a, b
				}
			}
			continue
		}
		v = strings.TrimRight(v, ",;")
		atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
		switch k {
		case "bs":
			r, g, padded := strings.Cut(v, "/")
			f.bs = atoi(r)
			if padded {
				f.padded = atoi(g)
			}
		case "tok", "toks", "tokens":
			f.tok = atoi(v)
		case "p":
			f.PrefillSeqs = atoi(v)
		case "d":
			f.DecodeSeqs = atoi(v)
		case "spec":
			f.Spec = atoi(v)
		case "tbo":
			f.TBO = v == "1" || v == "true" || v == "True"
		case "ctx":
			f.Ctx, f.CtxMore = parseCtx(v)
		case "sqsq", "sqsk", "sk":
			detail = append(detail, part)
		}
	}
	f.Detail = strings.Join(detail, " ")
	return f
}

// nextLabelPart cuts one key=value (or bare) part off s: up to the next
// space outside brackets.
func nextLabelPart(s string) (part, rest string) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[', '(':
			depth++
		case ']', ')':
			depth = max(depth-1, 0)
		case ' ':
			if depth == 0 {
				return s[:i], s[i+1:]
			}
		}
	}
	return s, ""
}

// parseCtx reads ctx=N, ctx=[a, b] or ctx=[a, b, c]...+K.
func parseCtx(v string) (ctx []int, more int) {
	list, tail, _ := strings.Cut(v, "]")
	if m, ok := strings.CutPrefix(tail, "...+"); ok {
		more, _ = strconv.Atoi(m)
	}
	for _, x := range strings.Split(strings.TrimPrefix(list, "["), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(x)); err == nil {
			ctx = append(ctx, n)
		}
	}
	return ctx, more
}

// parseVLLMNewCached reads vLLM's step label before 2026-01-09,
// execute_new_N_cached_M (vllm/v1/worker/gpu_worker.py,
// Worker.annotate_profile): N requests scheduled for the first time
// (prefill) and M already running (decode, or a chunked prefill going on).
// Both at once is a mixed step, as in every engine's labels.
func parseVLLMNewCached(name, rest string) (Step, bool) {
	n, m, ok := strings.Cut(rest, "_cached_")
	if !ok {
		return Step{}, false
	}
	nn, err1 := strconv.Atoi(n)
	mm, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil || nn < 0 || mm < 0 {
		return Step{}, false
	}
	st := Step{Label: name, BS: nn + mm}
	switch {
	case nn > 0 && mm > 0:
		st.Kind = StepMixed
	case nn > 0:
		st.Kind = StepPrefill
	default:
		st.Kind, st.Tokens = StepDecode, mm
	}
	return st, true
}

// parseVLLM reads execute_[N_]context_C(...)_generation_G(...).
func parseVLLM(name string) (Step, bool) {
	rest := strings.TrimPrefix(name, "execute_")
	tokens := 0
	if i := strings.Index(rest, "_context_"); i > 0 {
		n, err := strconv.Atoi(rest[:i])
		if err != nil {
			return Step{}, false
		}
		tokens = n
		rest = rest[i+1:]
	}
	ctx, ok := leadingInt(rest, "context_")
	if !ok {
		return Step{}, false
	}
	g := strings.Index(rest, "_generation_")
	if g < 0 {
		return Step{}, false
	}
	gen, ok := leadingInt(rest[g+1:], "generation_")
	if !ok {
		return Step{}, false
	}
	st := Step{Label: name, Tokens: tokens}
	switch {
	case ctx > 0 && gen > 0:
		st.Kind, st.BS = StepMixed, ctx+gen
	case ctx > 0:
		st.Kind, st.BS = StepPrefill, ctx
	default:
		st.Kind, st.BS = StepDecode, gen
	}
	return st, true
}

func leadingInt(s, prefix string) (int, bool) {
	s, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return 0, false
	}
	j := 0
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	v, err := strconv.Atoi(s[:j])
	return v, err == nil
}

// labelled is an annotation with its parsed step.
type labelled struct {
	a  *annotation
	st Step
}

// stepAnnotations returns the annotations of one evidence tier, outermost
// only: a label nested in another on the same track describes the same
// step (SGLang writes execute_... around step[...]).
func stepAnnotations(anns []annotation, gpu, profiler bool) []labelled {
	var out []labelled
	for i := range anns {
		a := &anns[i]
		if a.GPU != gpu {
			continue
		}
		st, ok := ParseStepLabel(a.Name)
		if !ok || (st.Kind == StepProfiler) != profiler {
			continue
		}
		out = append(out, labelled{a, st})
	}
	return outermost(out)
}

// outermost drops the annotations inside an earlier one on the same track
// (anns are sorted by start).
func outermost(out []labelled) []labelled {
	type track struct{ pid, tid int64 }
	end := map[track]int64{}
	kept := out[:0]
	for _, l := range out {
		tr := track{l.a.PID, l.a.TID}
		if e, ok := end[tr]; ok && l.a.Start+l.a.Dur <= e {
			continue
		}
		end[tr] = l.a.Start + l.a.Dur
		kept = append(kept, l)
	}
	return kept
}

// segmentSteps splits the GPU timeline into steps, trying in order
// engine labels (GPU side, then CPU side through correlation), the
// engine's step function, ProfilerStep#N, the period of the launch
// sequence, the idle gaps of the timeline, and graph launches.
func segmentSteps(t *Trace, idx corrIndex) {
	for _, profiler := range []bool{false, true} {
		gpu := stepAnnotations(t.Annotations, true, profiler)
		cpu := stepAnnotations(t.Annotations, false, profiler)
		if !profiler && len(gpu) == 0 && len(cpu) == 0 {
			// No engine label: the engine's step function, before
			// ProfilerStep#N (one profiler step can hold many engine steps).
			cpu = stepFunctionAnnotations(t)
		}
		if len(gpu) > 0 || len(cpu) > 0 {
			stepsFromAnnotations(t, idx, gpu, cpu)
			return
		}
	}
	if periodSteps(t) || structureSteps(t) {
		return
	}
	for gi := range t.Graphs {
		g := &t.Graphs[gi]
		if len(g.Kernels) == 0 {
			continue
		}
		st := Step{Kind: StepGraph, Label: g.Launch.Name, Source: sourceGraphLaunch}
		st.Kernels = g.Kernels
		addStep(t, st)
	}
	finishSteps(t)
}

// stepsFromAnnotations makes one step per GPU annotation (kernels by time on
// its device), then one per CPU annotation without a GPU twin (kernels
// through the correlation ids of the launches it made). A CPU step whose
// kernels were dropped by the profiler stays, with no kernels (that is how coverage sees the drop).
func stepsFromAnnotations(t *Trace, idx corrIndex, gpu, cpu []labelled) {
	twins := map[int64]bool{}
	names := map[string]int{}
	for _, g := range gpu {
		if g.a.External != 0 {
			twins[g.a.External] = true
		} else {
			names[g.a.Name]++
		}
	}
	assignByTime(t, gpu)
	for _, c := range cpu {
		if c.a.External != 0 && twins[c.a.External] {
			continue
		}
		if c.a.External == 0 && names[c.a.Name] > 0 {
			names[c.a.Name]--
			continue
		}
		st := c.st
		st.Start, st.End = c.a.Start, c.a.Start+c.a.Dur
		st.Kernels = kernelsLaunchedIn(t, idx, c.a, int32(len(t.Steps)))
		if st.Source == sourceStepFunction {
			// A step function says no kind: graph replays are decode
			// batches, a step without one was too large for them.
			st.Kind = StepPrefill
			if slices.ContainsFunc(st.Kernels, func(k int32) bool { return t.Kernels[k].Graph >= 0 }) {
				st.Kind = StepDecode
			}
		} else {
			st.Source = sourceCPUAnnotation
		}
		addStep(t, st)
	}
	finishSteps(t)
}

// assignByTime gives each GPU annotation the kernels that start inside it
// on the same device (any device when the annotation's is unknown).
func assignByTime(t *Trace, gpu []labelled) {
	if len(gpu) == 0 {
		return
	}
	devices := map[int32]bool{}
	for i := range t.Kernels {
		// Runs of one device are the rule: skip the map for repeats.
		if d := t.Kernels[i].Device; i == 0 || d != t.Kernels[i-1].Device {
			devices[d] = true
		}
	}
	// Each kernel joins one step at most: the steps' kernel lists share
	// one array instead of each growing its own.
	all := make([]int32, 0, len(t.Kernels))
	for _, g := range gpu {
		st := g.st
		st.Source = sourceGPUAnnotation
		st.Start, st.End = g.a.Start, g.a.Start+g.a.Dur
		si := int32(len(t.Steps))
		dev := int32(g.a.PID)
		anyDev := !devices[dev]
		from := len(all)
		lo, _ := slices.BinarySearchFunc(t.Kernels, st.Start, func(k Kernel, s int64) int { return cmp.Compare(k.Start, s) })
		for k := lo; k < len(t.Kernels) && t.Kernels[k].Start < st.End; k++ {
			kk := &t.Kernels[k]
			if kk.Step >= 0 || (!anyDev && kk.Device != dev) {
				continue
			}
			kk.Step = si
			all = append(all, int32(k))
		}
		if len(all) > from {
			st.Kernels = all[from:len(all):len(all)]
		}
		t.Steps = append(t.Steps, st)
	}
}

// kernelsLaunchedIn returns the kernels (not yet in a step) whose launch ran
// inside the CPU annotation a, on its process.
func kernelsLaunchedIn(t *Trace, idx corrIndex, a *annotation, step int32) []int32 {
	var out []int32
	end := a.Start + a.Dur
	// Another pid namespace (a container) can give the annotation and the
	// launches different pids: then any process's launches count.
	anyPID := !slices.ContainsFunc(t.Launches, func(l runtimeLaunch) bool { return l.PID == a.PID })
	lo, _ := slices.BinarySearchFunc(t.Launches, a.Start, func(l runtimeLaunch, s int64) int { return cmp.Compare(l.Start, s) })
	for li := lo; li < len(t.Launches) && t.Launches[li].Start < end; li++ {
		l := &t.Launches[li]
		if !anyPID && l.PID != a.PID {
			continue
		}
		for _, k := range idx.of(t.Kernels, l.Correlation) {
			if t.Kernels[k].Step >= 0 {
				continue
			}
			t.Kernels[k].Step = step
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// addStep appends st, marking its kernels and taking their span when it has
// kernels.
func addStep(t *Trace, st Step) {
	si := int32(len(t.Steps))
	for _, k := range st.Kernels {
		t.Kernels[k].Step = si
	}
	if len(st.Kernels) > 0 && st.Source != sourceGPUAnnotation {
		st.Start, st.End = kernelSpan(t, st.Kernels)
	}
	t.Steps = append(t.Steps, st)
}

func kernelSpan(t *Trace, ks []int32) (start, end int64) {
	start = t.Kernels[ks[0]].Start
	for _, k := range ks {
		end = max(end, t.Kernels[k].End())
	}
	return start, end
}

// finishSteps sorts steps by start and renumbers the kernels' Step.
func finishSteps(t *Trace) {
	sorted := true
	for i := 1; i < len(t.Steps) && sorted; i++ {
		sorted = t.Steps[i].Start >= t.Steps[i-1].Start
	}
	if sorted {
		// The stable sort would keep every step in place, and the step
		// indices the kernels hold are final (a pass over every kernel
		// saved).
		return
	}
	order := make([]int, len(t.Steps))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(t.Steps[a].Start, t.Steps[b].Start) })
	steps := make([]Step, len(t.Steps))
	for ni, oi := range order {
		steps[ni] = t.Steps[oi]
		for _, k := range steps[ni].Kernels {
			t.Kernels[k].Step = int32(ni)
		}
	}
	t.Steps = steps
}

// decodeBS computes the decode batch size: the most frequent batch size
// over decode steps, each step counted once; ties go to the larger.
func decodeBS(t *Trace) {
	for i := range t.Steps {
		st := &t.Steps[i]
		if st.Kind != StepDecode || st.BS <= 0 {
			continue
		}
		if t.DecodeBSHist == nil {
			t.DecodeBSHist = map[int]int{}
		}
		t.DecodeBSHist[st.BS]++
	}
	best := 0
	for bs, n := range t.DecodeBSHist {
		if n > t.DecodeBSHist[best] || (n == t.DecodeBSHist[best] && bs > best) {
			best = bs
		}
	}
	t.DecodeBS = best
}

// measureCoverage compares the CPU step window with the GPU kernel span
// and warns when GPU events are missing (docs/analysis.md, "Profiler coverage").
func measureCoverage(t *Trace, minTS, maxTS int64, truncated bool) (ws, we int64, steps bool) {
	c := &t.Coverage
	ws, we, haveWindow, engine := stepWindow(t)
	if !haveWindow {
		ws, we = minTS, maxTS
	}
	c.Window = units.Duration(we - ws)
	var gs, ge int64
	if len(t.Kernels) > 0 {
		gs, ge = kernelSpan(t, []int32{0})
		for i := range t.Kernels {
			ge = max(ge, t.Kernels[i].End())
		}
		c.GPUSpan = units.Duration(ge - gs)
		if haveWindow {
			c.Before, c.After = units.Duration(max(0, min(ws, ge)-gs)), units.Duration(max(0, ge-max(we, gs)))
		}
	}
	countSteps(t)
	// The GPU runs behind the CPU, so compare spans, not their overlap.
	// ProfilerStep#N spans host work (data loading, syncs) too: only engine
	// step labels say when the GPU should have been busy.
	// Steps without kernels are the sure sign; a span under half the window
	// catches the case where the CPU steps lost their launches too.
	covered := min(c.GPUSpan, c.Window)
	short := c.Window > 0 && float64(covered) < 0.5*float64(c.Window)
	// A truncated trace lost the GPU events past the cut: the truncation
	// warning says so, and it is not a profiler buffer drop.
	// Graph captures launch kernels that never run: their steps have none
	// by nature, and the capture_trace warning says what the trace is.
	if !engine || truncated || onlyCaptureSteps(t) || (c.StepsWithoutKernels == 0 && !short) {
		return ws, we, haveWindow
	}
	t.Warnings = append(t.Warnings, diag.New(diag.Coverage, coverageMessage(t, covered, ws, we, gs, ge)))
	return ws, we, haveWindow
}

// stepWindow is the span of the step annotations: the engine's labels, or
// else ProfilerStep#N (engine false); have is false when there are none.
func stepWindow(t *Trace) (ws, we int64, have, engine bool) {
	for _, profiler := range []bool{false, true} {
		for _, l := range stepAnnotations(t.Annotations, false, profiler) {
			s, e := l.a.Start, l.a.Start+l.a.Dur
			if !have || s < ws {
				ws = s
			}
			if !have || e > we {
				we = e
			}
			have = true
		}
		if have {
			return ws, we, true, !profiler
		}
	}
	return 0, 0, false, false
}

// countSteps counts the steps, and those without kernels, into t.Coverage.
func countSteps(t *Trace) {
	c := &t.Coverage
	for i := range t.Steps {
		st := &t.Steps[i]
		c.Steps++
		if st.Kind == StepDecode {
			c.DecodeSteps++
		}
		if len(st.Kernels) == 0 {
			c.StepsWithoutKernels++
			if st.Kind == StepDecode {
				c.DecodeWithout++
			}
		}
	}
}

// onlyCaptureSteps tells a trace whose steps are all graph captures.
func onlyCaptureSteps(t *Trace) bool {
	for i := range t.Steps {
		if t.Steps[i].Kind != StepCapture {
			return false
		}
	}
	return len(t.Steps) > 0
}

// coverageMessage says how much of the step window [ws, we] the kernels
// [gs, ge] cover, which steps have none, and what to do.
func coverageMessage(t *Trace, covered units.Duration, ws, we, gs, ge int64) string {
	c := &t.Coverage
	pct := 0.0
	if c.Window > 0 {
		pct = 100 * float64(covered) / float64(c.Window)
	}
	msg := fmt.Sprintf("GPU kernels cover %s of a %s profile window (%.0f%%)", span(covered), span(c.Window), pct)
	switch {
	case c.DecodeWithout > 0:
		msg += fmt.Sprintf(": %d of %d decode steps have no kernels", c.DecodeWithout, c.DecodeSteps)
	case c.StepsWithoutKernels > 0:
		msg += fmt.Sprintf(": %d of %d steps have no kernels", c.StepsWithoutKernels, c.Steps)
	}
	var gaps []string
	if len(t.Kernels) > 0 && float64(gs-ws) > 0.1*float64(c.Window) {
		gaps = append(gaps, "none in the first "+span(units.Duration(gs-ws)))
	}
	if len(t.Kernels) > 0 && float64(we-ge) > 0.1*float64(c.Window) {
		gaps = append(gaps, "none in the last "+span(units.Duration(we-ge)))
	}
	if len(gaps) > 0 {
		msg += " (" + strings.Join(gaps, ", ") + ")"
	}
	return msg + "; the profiler buffer dropped GPU events: raise KINETO_BUFFER_SIZE_MB (e.g. 256 or more; upstream Kineto reads the buffer from the file $KINETO_CONFIG names instead, ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB on CUDA and ROCTRACER_MAX_EVENTS on ROCm, which `profile-model run` writes from it), profile a shorter window, or send fewer prompts; per-step numbers cover only the steps with kernels"
}

// span prints a window length for people: seconds, one decimal.
func span(d units.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
