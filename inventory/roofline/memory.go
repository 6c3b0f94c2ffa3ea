package roofline

import "github.com/profile-model/profile-model/internal/modelconfig"

// Memory is what a model needs of a GPU's memory at a run's settings.
type Memory struct {
	WeightsGB float64 // the estimated parameters × the weights' bytes, per TP rank
	KVGB      float64 // the KV cache of Tokens tokens, per TP rank
	Tokens    float64 // sequences × tokens each (ISL + OSL at the top level)
}

// MemoryOf estimates the weights and the KV cache of seqs sequences of
// tokensEach tokens on one of tp ranks: K and V of every layer, the KV
// heads split across the ranks (at least one each). MLA caches are not
// modelled (KVGB is 0).
func MemoryOf(a *modelconfig.Architecture, tp int, kvDtype string, seqs, tokensEach float64) Memory {
	t := float64(max(tp, 1))
	m := Memory{Tokens: seqs * tokensEach}
	m.WeightsGB = float64(a.Params) * dtypeBytes(WeightType(a)) / t / 1e9
	if a.Attention != "MLA" && a.KVHeads > 0 && a.HeadDim > 0 {
		kvHeads := max(float64(a.KVHeads)/t, 1)
		m.KVGB = m.Tokens * float64(a.Layers) * 2 * kvHeads * float64(a.HeadDim) * dtypeBytes(kvDtype) / 1e9
	}
	return m
}
