package roofline

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/internal/modelconfig"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/tracing"
)

// Level is what a level's roofline is computed from.
type Level struct {
	Decode  *inventory.LayerTable
	Arch    *modelconfig.Architecture // nil: no model config
	Device  string                    // the GPU's name, from the trace
	BS      float64                   // decode batch size: the mean over the decode steps (MeanBatch)
	Context float64                   // mean context length (ContextOf, else ISL + OSL/2)
	TP      int
	KVCache string // the engine's KV-cache dtype ("" or "auto": the weights' activations, bf16)
	Peaks   Peaks  // nil: DefaultPeaks
	// The prefill table and its steps (PrefillOf): prompt tokens and
	// sequences per step, and the sequences' mean context after the step
	// (0: the prompt alone).
	Prefill                                    *inventory.LayerTable
	PrefillTokens, PrefillSeqs, PrefillContext float64
}

// Build computes a level's roofline, or says why there is none.
func Build(l Level) (*Table, string) {
	switch {
	case l.Arch == nil:
		return nil, "no model config (config.json): the work of each position cannot be computed"
	case l.Decode == nil || len(l.Decode.Positions) == 0:
		return nil, "no decode layer table"
	case l.BS <= 0:
		return nil, "no decode batch size in the trace (its steps carry no batch labels; layers takes it with --bs)"
	}
	p, kv, note := l.resolve(l.Decode)
	if note != "" {
		return nil, note
	}
	s := Step{Tokens: l.BS, Context: l.Context, TP: l.TP, Weights: WeightType(l.Arch), KVCache: kv}
	return Compute(l.Decode, l.Arch, s, p), ""
}

// BuildPrefill computes the roofline of a level's prefill steps, or says
// why there is none.
func BuildPrefill(l Level) (*Table, string) {
	switch {
	case l.Arch == nil:
		return nil, "no model config (config.json): the work of each position cannot be computed"
	case l.Prefill == nil || len(l.Prefill.Positions) == 0:
		return nil, "no prefill layer table"
	case l.PrefillTokens <= 0:
		return nil, "the prefill steps' labels do not give their tokens (tok=)"
	}
	p, kv, note := l.resolve(l.Prefill)
	if note != "" {
		return nil, note
	}
	s := Step{Tokens: l.PrefillTokens, Seqs: l.PrefillSeqs, Context: l.PrefillContext, Prefill: true, TP: l.TP, Weights: WeightType(l.Arch), KVCache: kv}
	return Compute(l.Prefill, l.Arch, s, p), ""
}

// resolve finds the GPU's peaks and the KV cache's dtype (from t's
// kernels when the engine's flags do not say).
func (l Level) resolve(t *inventory.LayerTable) (Peak, string, string) {
	peaks := l.Peaks
	if peaks == nil {
		peaks = DefaultPeaks()
	}
	p, ok := peaks.Find(l.Device)
	if !ok {
		if l.Device == "" {
			return p, "", "the trace does not name its GPU: pass a peaks file whose match column names it"
		}
		return p, "", fmt.Sprintf("no peak figures for %q: add a line for it to a peaks file (--peaks FILE)", l.Device)
	}
	kv := l.KVCache
	if kv == "" || kv == "auto" {
		kv = kvFromKernels(t)
	}
	return p, kv, ""
}

// kvFromKernels reads the KV cache's dtype from the kernels that write and
// read it when the engine's flags do not say (its default): a quantising
// cache write or an FP8 attention kernel means fp8, else bf16.
func kvFromKernels(t *inventory.LayerTable) string {
	if t == nil {
		return "bf16"
	}
	for _, p := range t.Positions {
		if p.Role != inventory.RoleKVWrite && p.Role != inventory.RoleAttention {
			continue
		}
		k := strings.ToLower(p.Kernel)
		if strings.Contains(k, "fp8") || strings.Contains(k, "quant") || strings.Contains(k, "f8") {
			return "fp8"
		}
	}
	return "bf16"
}

// MeanBatch is the mean decode batch size of a histogram of batch sizes
// (the trace summary's decode_bs_hist: batch size → steps), 0 when empty.
func MeanBatch(hist map[string]int) float64 {
	sum, n := 0.0, 0
	for k, c := range hist {
		bs, err := strconv.Atoi(k)
		if err != nil || bs <= 0 {
			continue
		}
		sum += float64(bs * c)
		n += c
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// ContextOf is the mean context length of the decode steps' sequences
// from their labels (ctx=), 0 when the labels do not say.
func ContextOf(tr *tracing.Trace) float64 {
	sum, n := 0.0, 0
	for _, s := range tr.Steps {
		if s.Kind != tracing.StepDecode {
			continue
		}
		for _, c := range s.Fields.Ctx {
			sum += float64(c)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// PrefillOf is the mean prompt tokens and sequences of the trace's prefill
// steps (tok= and bs= of their labels) and the mean context of their
// sequences (ctx=, 0 when the labels do not list it); zeros without
// prefill steps that give their tokens. Mixed steps count when there is
// no pure prefill step (their decode tokens are then counted as prompt).
func PrefillOf(tr *tracing.Trace) (tokens, seqs, context float64) {
	for _, kind := range []tracing.StepKind{tracing.StepPrefill, tracing.StepMixed} {
		n, ctxN := 0.0, 0.0
		for _, s := range tr.Steps {
			if s.Kind != kind || s.Tokens <= 0 {
				continue
			}
			n++
			tokens += float64(s.Tokens)
			seqs += float64(max(s.BS, 1))
			for _, c := range s.Fields.Ctx {
				context += float64(c)
				ctxN++
			}
		}
		if n > 0 {
			if ctxN > 0 {
				context /= ctxN
			}
			return tokens / n, seqs / n, context
		}
	}
	return 0, 0, 0
}
