package inventory

import "strings"

// What a kernel's place in the layers says when its name and op cannot:
//
//   - MoE under graph replay: a replayed kernel has no launching op, and a
//     batched GEMM (TensorRT-LLM's trtllm-gen bmm_…, which FlashInfer's
//     MoE runs) says only "batched GEMM". One that runs between a layer's
//     MoE routing (gate, sort/align) and its finalize is the experts' GEMM.
//   - Sampling: after the last layer of an engine step, the sort, cumsum,
//     softmax and top-k kernels (and the pointwise ops of a sampler) are
//     the sampler's, not a model's reduction.

// batchedGEMM tells the batched GEMM kernels that a MoE runner launches
// per expert: trtllm-gen's bmm_… (TensorRT-LLM, also shipped by
// FlashInfer) and the grouped GEMMs named as batched.
func batchedGEMM(name string) bool {
	return strings.HasPrefix(name, "bmm_") || strings.HasPrefix(name, "Bmm_") || strings.Contains(name, "BatchedGemmKernel")
}

// moeRoutingCategory are the categories of the kernels that route tokens
// to experts before the experts' GEMMs.
var moeRoutingCategory = map[string]bool{"MoE gate": true, "MoE sort / align": true}

// moeExpertPositions returns the batched GEMM kernels of t that run
// between a MoE routing kernel and a MoE finalize kernel of the same layer
// kind.
func (c *Classifier) moeExpertPositions(t *LayerTable) []string {
	var out []string
	kinds := map[int][]int{} // layer kind -> indices of its positions, in order
	for i := range t.Positions {
		k := t.Positions[i].LayerKind
		kinds[k] = append(kinds[k], i)
	}
	for _, idx := range kinds {
		routed := false
		var pending []string
		for _, i := range idx {
			p := &t.Positions[i]
			cat := c.Classify(p.Kernel).Category
			switch {
			case moeRoutingCategory[cat]:
				routed, pending = true, pending[:0]
			case cat == MoEFinalize:
				if routed {
					out = append(out, pending...)
				}
				routed, pending = false, nil
			case routed && strings.HasPrefix(cat, "Dense GEMM") && batchedGEMM(p.Kernel):
				pending = append(pending, p.Kernel)
			}
		}
	}
	return out
}

// epilogueKernel is a kernel after the last layer of a step of one kind
// and the op that launched it ("" under graph replay).
type epilogueKernel struct{ kind, name, op string }

// samplerOps are the ATen ops of a sampler (temperature, top-k/top-p
// masks, Gumbel noise, the draw itself).
var samplerOps = map[string]bool{
	"aten::sort": true, "aten::argsort": true, "aten::topk": true, "aten::cumsum": true, "aten::softmax": true, "aten::_softmax": true,
	"aten::log_softmax": true, "aten::_log_softmax": true, "aten::argmax": true, "aten::multinomial": true, "aten::exponential_": true,
	"aten::div_": true, "aten::div": true, "aten::scatter_": true, "aten::scatter": true, "aten::masked_fill_": true, "aten::gather": true,
	"aten::lt": true, "aten::le": true, "aten::ge": true, "aten::gt": true, "aten::max": true,
}

// samplerKernels returns the kernels after the last layer of an engine
// step that do a sampler's work: reductions, scans, sorts and softmax, and
// the pointwise kernels of a sampler's ops.
func (c *Classifier) samplerKernels(t *LayerTable) []string {
	if t.StepKind != "decode" && t.StepKind != "prefill" && t.StepKind != "mixed" {
		return nil
	}
	inLayers := map[string]bool{}
	for i := range t.Positions {
		inLayers[t.Positions[i].Kernel] = true
	}
	var out []string
	for _, k := range c.epilogue {
		if k.kind != t.StepKind || inLayers[k.name] {
			continue // the layers run it too: not the sampler's alone
		}
		cl := c.Classify(k.name)
		switch cl.Category {
		case "Reduction / scan / sort", "Softmax":
			out = append(out, k.name)
		case "Elementwise / copy":
			if samplerOps[k.op] {
				out = append(out, k.name)
			}
		}
	}
	return out
}

// layerEvidence is what a kernel's place in the layers says: its category
// and why.
type layerEvidence struct{ category, why string }

// learnLayerEvidence notes what the tables' layers say of their kernels
// (see above) and forgets the answers it changes.
func (c *Classifier) learnLayerEvidence(tables ...*LayerTable) {
	set := func(name, cat, why string) {
		if c.byLayer == nil {
			c.byLayer = map[string]layerEvidence{}
		}
		if _, ok := c.byLayer[name]; ok {
			return
		}
		c.byLayer[name] = layerEvidence{cat, why}
		delete(c.memo, name)
	}
	for _, t := range tables {
		if t == nil {
			continue
		}
		for _, k := range c.moeExpertPositions(t) {
			set(k, "MoE expert GEMM", "a batched GEMM between a MoE layer's routing and its finalize kernels: the experts' GEMM")
		}
		for _, k := range c.samplerKernels(t) {
			set(k, "Sampling", "runs after the last layer of an engine step, a sampler's work: Sampling")
		}
	}
}
