package inventory

import (
	"cmp"
	"strings"
	"sync"

	"github.com/profile-model/profile-model/tracing"
)

// Classifier categorises the kernels of one trace. It tries, in order:
//
//  1. the rule table (SourceRule);
//  2. the CPU op that launched the kernel, through the correlation of its
//     launch (aten::mm → GEMM, attention ops → attention, ...); a kernel
//     replayed from a graph has no launching op of its own and takes the
//     op recorded for the same kernel name elsewhere in the trace
//     (SourceLaunchOp);
//  3. the words of its name: library families and what kernels say they
//     compute (SourceName);
//  4. its position in the layers: a kernel that runs where the other
//     layers (or the other layer kind, or the prefill layers) run a
//     categorised kernel takes that category (SourcePosition), once Learn
//     has seen a layer table.
//
// An attention kernel whose name says neither prefill nor decode is decode
// attention when it runs mostly inside decode steps. A Classifier is not
// safe for concurrent use.
type Classifier struct {
	rules   *Rules
	ops     map[string]string // kernel name -> the op that launched most of its time
	decode  map[string]bool   // kernel name -> more than half its time inside decode steps
	prefill map[string]bool   // kernel name -> more than half its time inside prefill steps
	vendor  string            // the trace's GPU vendor: bounds the providers
	// engine is the engine that wrote the trace (EngineVLLM, ...), ""
	// when unknown; engineWhy the evidence. It decides the owner of a
	// kernel both engines' custom ops define (EngineCustom).
	engine, engineWhy string
	// byLayer are the kernels whose place in the layers says more than
	// their name (a batched GEMM between a MoE layer's routing and its
	// finalize, a sort after the last layer of an engine step), noted by
	// Learn.
	byLayer  map[string]layerEvidence
	position map[string]Class // kernel name -> what its layer position says
	// pending are kernel names that run at the same layer position as
	// another (irregular layers, alternating kinds), noted by the robust
	// layer finder for Learn.
	pending [][2]string
	// epilogue are the kernels after the last layer of the first step of
	// the tables made with this classifier (the sampler runs there).
	epilogue []epilogueKernel
	memo     map[string]Class
}

// NewClassifier prepares the categories of tr's kernels; rules nil is the
// built-in table. tr nil gives a classifier of names alone.
func NewClassifier(tr *tracing.Trace, rules *Rules) *Classifier {
	if rules == nil {
		rules = DefaultRules()
	}
	c := &Classifier{rules: rules, ops: map[string]string{}, decode: map[string]bool{}, prefill: map[string]bool{}, position: map[string]Class{}, memo: map[string]Class{}}
	if tr == nil {
		return c
	}
	c.vendor = tr.Vendor
	c.engine, c.engineWhy = traceEngine(tr)
	// Sums by name index: one slice lookup per kernel, the names are
	// hashed once each.
	type acc struct {
		in, pre, all int64
		seen         bool
	}
	share := make([]acc, len(tr.Names))
	// Time under each launching op, by kernel name and op name ids.
	type nameOp struct{ name, op int32 }
	var opTime map[nameOp]int64
	for i := range tr.Kernels {
		k := &tr.Kernels[i]
		if k.Kind != tracing.KindKernel {
			continue
		}
		a := &share[k.NameID]
		a.seen = true
		a.all += k.Dur
		if k.Step >= 0 && int(k.Step) < len(tr.Steps) {
			switch tr.Steps[k.Step].Kind {
			case tracing.StepDecode:
				a.in += k.Dur
			case tracing.StepPrefill:
				a.pre += k.Dur
			}
		}
		if op := tr.LaunchOpID(i); op >= 0 {
			if opTime == nil {
				opTime = map[nameOp]int64{}
			}
			opTime[nameOp{k.NameID, op}] += max(k.Dur, 1)
		}
	}
	for id, a := range share {
		// Only the names that run mostly in one kind of step: a million
		// distinct names outside steps take no entry.
		if a.seen && 2*a.in > a.all {
			c.decode[tr.Names[id]] = true
		}
		if a.seen && 2*a.pre > a.all {
			c.prefill[tr.Names[id]] = true
		}
	}
	// The op under which a name ran longest (ties: the op name first in
	// sort order, so that map order never decides).
	type pick struct {
		op string
		t  int64
	}
	best := map[int32]pick{}
	opNames := tr.OpNames()
	for key, t := range opTime {
		op := opNames[key.op]
		if b, ok := best[key.name]; !ok || t > b.t || (t == b.t && op < b.op) {
			best[key.name] = pick{op, t}
		}
	}
	for id, b := range best {
		c.ops[tr.Names[id]] = b.op
	}
	return c
}

// Classify returns the category, provider, short name and provenance of a
// kernel name.
func (c *Classifier) Classify(name string) Class {
	if cl, ok := c.memo[name]; ok {
		return cl
	}
	cl := c.classify(name, nil)
	c.memo[name] = cl
	return cl
}

// classifyOnce is Classify for a name asked for once (the inventory's
// distinct names): it does not keep the answer.
func (c *Classifier) classifyOnce(name string) Class {
	if cl, ok := c.memo[name]; ok {
		return cl
	}
	return c.classify(name, nil)
}

func (c *Classifier) classify(name string, ex *explain) Class {
	cl := c.base(name, ex)
	op := c.ops[name]
	if cat := byContainerOp(op, cl.Category); cat != "" && cat != cl.Category {
		ex.note("launched by %s, a whole %s: %s, whatever the name says", op, strings.ToLower(cat), cat)
		cl.Category, cl.Source = cat, SourceLaunchOp
	} else if cat := byPartOp(op, cl.Category); cat != "" {
		ex.note("a generic %s kernel launched by %s, an op of %s: %s", strings.ToLower(cl.Category), op, cat, cat)
		cl.Category, cl.Source = cat, SourceLaunchOp
	}
	if l, ok := c.byLayer[name]; ok && l.category != cl.Category {
		ex.note("%s", l.why)
		cl.Category, cl.Source = l.category, SourcePosition
	}
	if strings.HasPrefix(cl.Category, "Dense GEMM") {
		if p := gemmPrecisionEvidence(name); p != "" && p != cl.Category {
			ex.note("the name states the precision: %s", p)
			cl.Category = p
		}
	}
	cl.Category = c.byPhase(name, cl.Category, ex)
	cl.Provider = c.provider(name, op, cl.Provider, ex)
	return cl
}

// base is what the rule table, else the name and the launching op, say of
// a kernel.
func (c *Classifier) base(name string, ex *explain) Class {
	if r := c.rules.match(name, c.vendor); r != nil {
		cl := Class{Category: r.Category, Provider: r.Provider, ShortName: r.ShortName, Source: SourceRule}
		if cl.ShortName == "" {
			cl.ShortName = ShortName(name)
		}
		ex.note("rule %s:%d %q: %s / %s", c.rules.Source, r.Line, r.Pattern, r.Category, cmp.Or(r.Provider, "(no provider)"))
		if r.Cite != "" {
			ex.note("defined in %s", r.Cite)
		}
		return cl
	}
	// A name that says what the kernel computes comes first: the launching
	// op describes the op, and an op launches helper kernels too (a copy
	// inside addmm, an sgemm inside a convolution). Then the op, then a
	// name that only says elementwise, then the layer position.
	byName, strength := nameClass(name)
	if strength == nameStrong {
		ex.note("no rule; the words of the name say %s", byName.Category)
		return byName
	}
	if op := c.ops[name]; op != "" {
		if cat, ok := categoryOfOp(op, name); ok {
			cl := Class{Category: cat, ShortName: ShortName(name), Source: SourceLaunchOp, Provider: providerOf(readableName(name))}
			if cat == gemmOp {
				cl.Category = gemmPrecision(nameWords(readableName(name)) + nameWords(op))
			}
			ex.note("no rule, the name says nothing definite; launched by %s: %s", op, cl.Category)
			return cl
		}
	}
	if strength == nameWeak {
		ex.note("no rule; the name only says %s", byName.Category)
		return byName
	}
	if pc, ok := c.position[name]; ok {
		ex.note("no rule, name or op; runs at the layer position of a %s kernel", pc.Category)
		return pc
	}
	ex.note("no rule, op, name or layer position says what it computes")
	return Class{Category: Other, ShortName: ShortName(name), Source: SourceNone}
}

// byPhase decides an attention kernel's kind by the steps it runs in: the
// family name of a kernel says what it was written for, the steps what it
// did in this trace. A kernel of unknown kind outside engine steps is
// prefill attention.
func (c *Classifier) byPhase(name, cat string, ex *explain) string {
	if cat != attentionUnknown && cat != attnPrefillCat && cat != attnDecodeCat {
		return cat
	}
	switch {
	case c.decode[name]:
		if cat != attnDecodeCat {
			ex.note("runs in decode steps: %s", attnDecodeCat)
		}
		return attnDecodeCat
	case c.prefill[name]:
		if cat != attnPrefillCat {
			ex.note("runs in prefill steps: %s", attnPrefillCat)
		}
		return attnPrefillCat
	case cat == attentionUnknown:
		ex.note("attention of unknown kind outside engine steps: %s", attnPrefillCat)
		return attnPrefillCat
	}
	return cat
}

// provider names the library that owns a kernel's code: its namespace,
// else what the rule or its spelling said, else the custom-op library that
// launched it, else unknown; bounded by the trace's vendor.
func (c *Classifier) provider(name, op, said string, ex *explain) string {
	p := said
	ns := namespaceProvider(readableName(matchText(name)))
	switch {
	case said == EngineCustom && (ns == "" || ns == engineProviders[EngineVLLM] || ns == engineProviders[EngineSGLang]):
		p = c.engineCustomProvider(name, ex)
	case ns == "CUTLASS" && said != "":
		// Libraries write their kernels with CUTLASS's templates (TensorRT-
		// LLM's MoeFCGemm is a cutlass::gemm::kernel): the rule knows the
		// owner.
	case ns != "" && !strings.HasPrefix(said, ns):
		ex.note("its namespace names the code owner: %s", ns)
		p = ns
	}
	if p == "" {
		p = providerOf(readableName(matchText(name)))
	}
	if p == "" && op != "" {
		for _, o := range opProviders {
			if strings.HasPrefix(op, o.prefix) {
				ex.note("the name names no library; its op %s is %s's", op, o.provider)
				p = o.provider
				break
			}
		}
	}
	if p == "" {
		ex.note("nothing names its library: %s", Unknown)
		return Unknown
	}
	if b := boundByVendor(p, c.vendor); b != p {
		ex.note("%s does not run on a %s GPU: %s", p, c.vendor, b)
		p = b
	}
	return p
}

// Explain returns the classification of a kernel name and the evidence
// that decided it, one line each, in the order it was weighed.
func (c *Classifier) Explain(name string) (Class, []string) {
	ex := &explain{}
	cl := c.classify(name, ex)
	if op := c.ops[name]; op != "" {
		ex.lines = append([]string{"launching op (most of its time): " + op}, ex.lines...)
	}
	return cl, ex.lines
}

// Learn takes the position hints of the robust layer tables made with this
// classifier (and of the tables against each other): kernels the rules,
// ops and names leave in Other that run where other layers run a
// categorised kernel. It relabels the tables' positions and reports how
// many kernel names it categorised.
func (c *Classifier) Learn(tables ...*LayerTable) int {
	n := 0
	pairs := c.pending
	c.pending = nil
	for i, t := range tables {
		if t == nil {
			continue
		}
		// The decode and the prefill layers run the same layer with other
		// kernels at some positions.
		for _, u := range tables[i+1:] {
			if u != nil {
				pairs = append(pairs, tablePairs(t, u)...)
			}
		}
	}
	for _, p := range pairs {
		{
			got, want := c.Classify(p[0]), c.Classify(p[1])
			if got.Source != SourceNone || want.Category == Other {
				continue
			}
			cl := Class{Category: want.Category, Provider: c.provider(p[0], c.ops[p[0]], providerOf(readableName(p[0])), nil), ShortName: got.ShortName, Source: SourcePosition}
			c.position[p[0]] = cl
			c.memo[p[0]] = cl
			n++
		}
	}
	c.learnLayerEvidence(tables...)
	for _, t := range tables {
		c.Relabel(t)
	}
	return n
}

// Relabel updates the categories of a table's positions to what the
// classifier says now.
func (c *Classifier) Relabel(t *LayerTable) {
	if t == nil {
		return
	}
	for i := range t.Positions {
		p := &t.Positions[i]
		cl := c.Classify(p.Kernel)
		p.Category, p.Provider, p.Source = cl.Category, cl.Provider, cl.Source
	}
}

// tablePairs aligns the first layer kind of two tables and returns the
// kernel names that differ at aligned positions, both ways.
func tablePairs(a, b *LayerTable) [][2]string {
	in := &interner{ids: map[string]int32{}}
	seq := func(t *LayerTable) []int32 {
		var ids []int32
		for _, p := range t.Positions {
			if p.LayerKind == 0 {
				ids = append(ids, in.id(p.Kernel))
			}
		}
		return ids
	}
	x, y := seq(a), seq(b)
	if len(x) == 0 || len(y) == 0 {
		return nil
	}
	var out [][2]string
	for _, d := range diffs(align(x, y), len(y)) {
		if d.op == "differs" {
			p, q := in.names[x[d.got]], in.names[y[d.pos]]
			out = append(out, [2]string{p, q}, [2]string{q, p})
		}
	}
	return out
}

// gemmOp is what categoryOfOp says of a GEMM op; the precision comes from
// the kernel's and the op's names.
const gemmOp = "Dense GEMM"

// atenOps are the ATen ops (aten::NAME) that say what their kernels
// compute, by NAME; built on first use (see lazyRegexp).
var atenOps = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	add := func(cat string, names ...string) {
		for _, n := range names {
			m[n] = cat
		}
	}
	add(gemmOp, "mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "addmv", "mv", "dot", "_scaled_mm", "_int_mm", "_addmm_activation", "addbmm", "einsum")
	add("Convolution", "convolution", "_convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
		"cudnn_convolution", "cudnn_convolution_transpose", "miopen_convolution", "miopen_depthwise_convolution", "convolution_backward", "_convolution_mode", "mkldnn_convolution")
	add(attentionUnknown, "scaled_dot_product_attention", "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
		"_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu", "_flash_attention_forward", "_efficient_attention_forward",
		"_scaled_dot_product_attention_math", "_flash_attention_backward", "_efficient_attention_backward")
	add("RMSNorm / LayerNorm", "layer_norm", "native_layer_norm", "native_layer_norm_backward", "rms_norm", "_fused_rms_norm")
	add("GroupNorm", "group_norm", "native_group_norm", "native_group_norm_backward", "instance_norm")
	add("BatchNorm", "batch_norm", "native_batch_norm", "cudnn_batch_norm", "miopen_batch_norm", "_batch_norm_impl_index", "native_batch_norm_backward", "cudnn_batch_norm_backward", "miopen_batch_norm_backward")
	add("Softmax", "softmax", "_softmax", "log_softmax", "_log_softmax", "_softmax_backward_data")
	add("Embedding", "embedding", "embedding_bag", "_embedding_bag", "embedding_dense_backward", "index_select")
	add("Activation (SiLU/GELU and mul)", "silu", "silu_", "gelu", "gelu_", "relu", "relu_", "sigmoid", "tanh", "mish", "hardswish", "silu_backward", "gelu_backward")
	add("Reduction / scan / sort", "sort", "argsort", "topk", "cumsum", "cumprod", "sum", "mean", "amax", "amin", "argmax", "argmin", "max", "min", "prod", "norm", "linalg_vector_norm", "var_mean", "std", "var", "nonzero", "unique", "_unique2", "all", "any")
	add("Elementwise / copy", "copy_", "_to_copy", "to", "clone", "contiguous", "cat", "stack", "fill_", "zero_", "zeros", "ones", "full", "empty",
		"add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "where", "index", "index_put_", "_index_put_impl_", "gather", "scatter", "scatter_", "scatter_add_",
		"masked_fill_", "masked_fill", "clamp", "clamp_", "clamp_min", "clamp_max", "neg", "exp", "pow", "sqrt", "rsqrt", "abs", "arange", "pad", "constant_pad_nd",
		"repeat", "repeat_interleave", "flip", "roll", "tril", "triu", "lt", "gt", "le", "ge", "eq", "ne", "bitwise_and", "bitwise_or", "bitwise_not", "logical_and", "logical_not",
		"floor", "ceil", "round", "remainder", "fmod", "dropout", "native_dropout", "uniform_", "normal_", "bernoulli_", "rand", "randn", "lerp_", "addcmul_", "addcdiv_",
		"max_pool2d_with_indices", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "upsample_nearest2d", "upsample_bilinear2d", "grid_sampler_2d",
		"_foreach_copy_", "_foreach_add_", "_foreach_mul_", "mse_loss", "nll_loss", "cross_entropy_loss")
	return m
})

// customOps map the words of an op that is not ATen (vLLM's _C:: and
// vllm::, SGLang's sgl_kernel::, aiter::, collectives) to a category;
// first match wins.
var customOps = []struct {
	re       *lazyRegexp
	category string
}{
	{lazyRE(`_(c10d|nccl|rccl|allreduce|all_reduce\w*|allgather|all_gather\w*|reduce_scatter\w*|all_to_all\w*|alltoall\w*|custom_ar|record_param_comms|gloo)_|_c10d_functional_|all_reduce|all_gather|reduce_scatter`), "All-reduce / collectives"},
	{lazyRE(`_(fused_moe\w*|moe_gemm|fused_experts\w*|grouped_gemm\w*|moe_mlp|ck_moe\w*|fmoe\w*|asm_moe\w*|cutlass_moe\w*|moe_wna16\w*|matmul_ogs)_`), "MoE expert GEMM"},
	{lazyRE(`_(moe_sum|moe_unpermute|moe_finalize\w*|moe_combine)_`), MoEFinalize},
	{lazyRE(`_(moe_align\w*|moe_sort\w*|moe_permute|moe_dispatch|permute_rows|shuffle_rows)_`), "MoE sort / align"},
	{lazyRE(`_(topk_softmax|topk_sigmoid|grouped_topk\w*|biased_grouped_topk\w*|moe_gate|moe_topk\w*|fused_topk\w*|router\w*)_`), "MoE gate"},
	{lazyRE(`_(reshape_and_cache\w*|concat_and_cache\w*|store_kv\w*|set_kv_buffer|kv_cache\w*|write_to_kv_cache)_`), "KV cache"},
	{lazyRE(`_(flash_attn\w*|flash_attention\w*|fmha\w*|mha\w*|mla\w*|paged_attention\w*|unified_attention\w*|attention\w*|attn\w*|pa_fwd\w*|decode_attention\w*|extend_attention\w*|prefill_attention\w*|sdpa\w*)_|attention|flash_attn`), attentionUnknown},
	{lazyRE(`_(rotary_embedding\w*|rotary\w*|rope\w*|apply_rotary\w*|mrope\w*)_`), "RoPE"},
	{lazyRE(`_(\w*gemm\w*|\w*gemv\w*|\w*matmul\w*|scaled_mm\w*|w8a8\w*|wvsplitk\w*|llmm\w*)_`), gemmOp},
	{lazyRE(`_(rms_norm\w*|fused_add_rms_norm\w*|rmsnorm\w*|layernorm\w*|layer_norm\w*)_`), "RMSNorm / LayerNorm"},
	{lazyRE(`_(\w*quant\w*|\w*dequant\w*)_`), "Activation quant"},
	{lazyRE(`_(silu_and_mul|gelu_and_mul|gelu_tanh_and_mul|act_and_mul|swiglu\w*)_`), "Activation (SiLU/GELU and mul)"},
	{lazyRE(`_(sample|sampler|sampling\w*|top_k_top_p\w*|top_p\w*|min_p\w*|apply_penalties\w*|gumbel\w*)_`), "Sampling"},
}

// categoryOfOp maps the op that launched kernel to a category. An op named
// like the kernel (inductor's Triton wrappers) says nothing new.
func categoryOfOp(op, kernel string) (string, bool) {
	if op == kernel || strings.HasPrefix(op, "triton_") {
		return "", false
	}
	if base, ok := strings.CutPrefix(op, "aten::"); ok {
		cat, ok := atenOps()[base]
		return cat, ok
	}
	w := nameWords(op)
	for _, f := range customOps {
		if f.re.MatchString(w) {
			return f.category, true
		}
	}
	return "", false
}
