package inventory

import (
	"strings"

	"github.com/profile-model/profile-model/tracing"
)

// The engines whose custom-op libraries carry the same kernels: vLLM's
// csrc and SGLang's sgl-kernel both hold the custom all-reduce, the MoE
// align/sort, topk-softmax, rotary and activation kernels (sgl-kernel took
// many from vLLM, vLLM some from SGLang). The rule table names such a
// family's provider EngineCustom; the engine that wrote the trace decides
// which library it is.
const (
	EngineVLLM   = "vllm"
	EngineSGLang = "sglang"
	EngineATOM   = "atom"

	// EngineCustom is the rule-table provider of a kernel family that
	// both engines' custom-op libraries define.
	EngineCustom = "engine custom ops"
)

// engineProviders are the custom-op libraries of the engines.
var engineProviders = map[string]string{
	EngineVLLM:   "vLLM custom ops",
	EngineSGLang: "SGLang custom ops",
	EngineATOM:   "aiter", // ATOM runs aiter's builds of these kernels
}

// traceEngine names the engine that wrote a trace and the evidence, ""
// when nothing says. Evidence only one engine leaves comes first: the
// source file of its step function in the Python frames, then an op of
// SGLang's own namespaces (an SGLang trace may run vLLM ops, a vLLM trace
// runs no sgl_kernel op); then the step labels (SGLang's step[…], ATOM's
// decode[…]/prefill[…], vLLM's execute_…, which SGLang's ROCm builds write
// too), the step functions among the CPU annotations and vLLM's ops.
func traceEngine(tr *tracing.Trace) (engine, why string) {
	if tr.Engine != "" {
		return tr.Engine, "its step function's Python source"
	}
	ops := tr.OpNames()
	for _, op := range ops {
		if strings.HasPrefix(op, "sgl_kernel::") || strings.HasPrefix(op, "sglang::") || strings.HasPrefix(op, "sglang_profiler::") {
			return EngineSGLang, "op " + op
		}
	}
	for i := range tr.Steps {
		l := tr.Steps[i].Label
		switch {
		case strings.HasPrefix(l, "step["):
			return EngineSGLang, "step label " + l
		case strings.HasPrefix(l, "decode[") || strings.HasPrefix(l, "prefill[") || strings.HasPrefix(l, "eager_decode["):
			return EngineATOM, "step label " + l
		case strings.HasPrefix(l, "execute_"):
			return EngineVLLM, "step label " + l
		}
	}
	for i := range tr.Annotations {
		a := &tr.Annotations[i]
		if a.GPU {
			continue
		}
		_, fn, ok := strings.Cut(a.Name, "): ")
		if !ok {
			fn = a.Name
		}
		switch fn {
		case "run_batch", "forward_batch_generation":
			return EngineSGLang, "step function " + a.Name
		case "execute_model":
			return EngineVLLM, "step function " + a.Name
		}
	}
	for _, op := range ops {
		if strings.HasPrefix(op, "vllm::") || strings.HasPrefix(op, "_C::") || strings.HasPrefix(op, "_moe_C::") {
			return EngineVLLM, "op " + op
		}
	}
	return "", ""
}

// engineCustomProvider resolves EngineCustom: the engine that wrote the
// trace, else the kernel's own namespace, else vLLM's (where most of these
// kernels were first written).
func (c *Classifier) engineCustomProvider(name string, ex *explain) string {
	if p, ok := engineProviders[c.engine]; ok {
		ex.note("a kernel both engines' custom ops define; the trace is %s's (%s): %s", c.engine, c.engineWhy, p)
		return p
	}
	if ns := namespaceProvider(readableName(matchText(name))); ns == engineProviders[EngineSGLang] || ns == engineProviders[EngineVLLM] {
		ex.note("a kernel both engines' custom ops define; no engine named, its namespace says %s", ns)
		return ns
	}
	ex.note("a kernel both engines' custom ops define; no engine or namespace says which: vLLM custom ops")
	return engineProviders[EngineVLLM]
}
