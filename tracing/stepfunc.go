package tracing

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
)

// An engine's own step, as its Python frames (python_function events, or
// cpu_op ranges of the same name) record it: a trace without step
// annotations still has the engine's step function around every step's
// launches, on the host, when Python stacks were recorded.

// sourceStepFunction: steps delimited by the engine's step function on the
// CPU side (vLLM's execute_model, SGLang's run_batch and forward_batch_*,
// ATOM's model runner forward), kernels through the correlation of the
// launches made inside it.
const sourceStepFunction = "step_function"

// stepFunctions are the functions of one engine step; a generic name
// counts only in a model runner's file (a model's own forward runs per
// layer, graph piece or micro-batch). ATOM's engine core calls its model
// runner's forward once per scheduled batch (prepare inputs, run_model,
// sample); releases before October 2025 called run instead. run_model
// alone leaves the sampler out, so it counts only when nothing holds it.
var stepFunctions = [...]struct{ file, fn string }{
	{"", "execute_model"},
	{"", "run_batch"},
	{"", "forward_batch_generation"},
	{"", "forward_batch"},
	{"model_runner", "forward"},
	{"model_runner", "run"},
	{"model_runner", "run_model"},
}

// isStepFunction tells the name of an engine's step function: a Python
// frame "path/file.py(line): fn" or a bare function name.
func isStepFunction(name []byte) bool {
	file, fn := []byte(nil), name
	if i := bytes.LastIndex(name, []byte("): ")); i >= 0 {
		file, fn = name[:i], name[i+3:]
	}
	for _, s := range stepFunctions {
		if string(fn) == s.fn && (s.file == "" || bytes.Contains(file, []byte(s.file))) {
			return true
		}
	}
	return false
}

// stepFunctionNext tells whether the event's name, right after its
// category in Kineto's layout (`, "name": "…"`), is a step function; an
// event in another layout takes the general path.
func stepFunctionNext(b []byte) bool {
	const key = `, "name": "`
	if !bytes.HasPrefix(b, []byte(key)) {
		return true
	}
	b = b[len(key):]
	e := bytes.IndexByte(b[:min(len(b), 512)], '"')
	if e < 0 {
		return true
	}
	name := b[:e]
	// Cheap first: every step function's name ends in one of these.
	if !bytes.HasSuffix(name, []byte("model")) && !bytes.HasSuffix(name, []byte("batch")) &&
		!bytes.HasSuffix(name, []byte("generation")) && !bytes.HasSuffix(name, []byte("forward")) &&
		!bytes.HasSuffix(name, []byte("run")) {
		return false
	}
	return isStepFunction(name)
}

// stepFrame is a Python frame of the engine's step function: where and
// when it ran (the reader keeps no more of it).
type stepFrame struct {
	Start, Dur int64
	PID, TID   int64
}

// stepFunctionAnnotations returns the CPU-side step functions, from the
// Python frames and from CPU ops of the same names, outermost only on each
// track (vLLM's worker's execute_model holds its model runner's).
func stepFunctionAnnotations(t *Trace) []labelled {
	anns := make([]annotation, 0, len(t.stepFrames))
	for _, f := range t.stepFrames {
		anns = append(anns, annotation{Name: "python_function", Start: f.Start, Dur: f.Dur, PID: f.PID, TID: f.TID})
	}
	for _, a := range t.Annotations {
		if !a.GPU && !strings.HasPrefix(a.Name, "ProfilerStep#") && isStepFunction([]byte(a.Name)) {
			anns = append(anns, a)
		}
	}
	if len(t.stepFrames) > 0 && len(anns) > len(t.stepFrames) {
		slices.SortStableFunc(anns, func(a, b annotation) int { return cmp.Compare(a.Start, b.Start) })
	}
	out := make([]labelled, len(anns))
	for i := range anns {
		out[i] = labelled{&anns[i], Step{Source: sourceStepFunction}}
	}
	return outermost(out)
}

// engineOfFrame names the engine whose source file a Python frame
// "path/file.py(line): fn" is in: …/sglang/srt/…, vllm/v1/worker/…,
// …/atom/model_engine/…; "" for another file.
func engineOfFrame(name string) string {
	file, _, ok := strings.Cut(name, ".py(")
	if !ok {
		return ""
	}
	for _, e := range [...]string{"sglang", "vllm", "atom"} {
		if strings.HasPrefix(file, e+"/") || strings.Contains(file, "/"+e+"/") {
			return e
		}
	}
	return ""
}
