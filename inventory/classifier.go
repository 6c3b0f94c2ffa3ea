package inventory

import (
	"regexp"
	"strings"

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
	rules    *Rules
	ops      map[string]string // kernel name -> the op that launched most of its time
	decode   map[string]bool   // kernel name -> more than half its time inside decode steps
	position map[string]Class  // kernel name -> what its layer position says
	memo     map[string]Class
}

// NewClassifier prepares the categories of tr's kernels; rules nil is the
// built-in table. tr nil gives a classifier of names alone.
func NewClassifier(tr *tracing.Trace, rules *Rules) *Classifier {
	if rules == nil {
		rules = DefaultRules()
	}
	c := &Classifier{rules: rules, ops: map[string]string{}, decode: map[string]bool{}, position: map[string]Class{}, memo: map[string]Class{}}
	if tr == nil {
		return c
	}
	type acc struct{ in, all int64 }
	share := map[string]*acc{}
	opTime := map[string]map[string]int64{}
	for i := range tr.Kernels {
		k := &tr.Kernels[i]
		if k.Kind != tracing.KindKernel {
			continue
		}
		a := share[k.Name]
		if a == nil {
			a = &acc{}
			share[k.Name] = a
		}
		a.all += k.Dur
		if k.Step >= 0 && int(k.Step) < len(tr.Steps) && tr.Steps[k.Step].Kind == tracing.StepDecode {
			a.in += k.Dur
		}
		if op := tr.LaunchOp(i); op != "" {
			m := opTime[k.Name]
			if m == nil {
				m = map[string]int64{}
				opTime[k.Name] = m
			}
			m[op] += max(k.Dur, 1)
		}
	}
	for name, a := range share {
		c.decode[name] = 2*a.in > a.all
	}
	for name, m := range opTime {
		best, bt := "", int64(-1)
		for op, t := range m {
			if t > bt || (t == bt && op < best) {
				best, bt = op, t
			}
		}
		c.ops[name] = best
	}
	return c
}

// Classify returns the category, provider, short name and provenance of a
// kernel name.
func (c *Classifier) Classify(name string) Class {
	if cl, ok := c.memo[name]; ok {
		return cl
	}
	cl := c.classify(name)
	c.memo[name] = cl
	return cl
}

func (c *Classifier) classify(name string) Class {
	if r := c.rules.Match(name); r != nil {
		cl := Class{Category: r.Category, Provider: r.Provider, ShortName: r.ShortName, Source: SourceRule}
		if cl.ShortName == "" {
			cl.ShortName = ShortName(name)
		}
		return cl
	}
	byName, named := classifyByName(name)
	if op := c.ops[name]; op != "" {
		if cat, ok := categoryOfOp(op); ok {
			cl := Class{Category: cat, ShortName: ShortName(name), Source: SourceLaunchOp, Provider: providerOf(Demangle(name))}
			switch {
			case cat == AttentionUnknown && named && isAttention(byName.Category):
				// The op says attention, the name which kind.
				cl.Category = byName.Category
			case cat == gemmOp:
				cl.Category = gemmPrecision(nameWords(Demangle(name)) + nameWords(op))
			}
			cl.Category = c.resolveAttention(name, cl.Category)
			return cl
		}
	}
	if named {
		byName.Category = c.resolveAttention(name, byName.Category)
		return byName
	}
	if pc, ok := c.position[name]; ok {
		return pc
	}
	return Class{Category: Other, ShortName: ShortName(name), Source: SourceNone}
}

// resolveAttention decides an attention kernel of unknown kind by where it
// runs.
func (c *Classifier) resolveAttention(name, cat string) string {
	if cat != AttentionUnknown {
		return cat
	}
	if c.decode[name] {
		return "Paged attention (decode)"
	}
	return "Flash attention (prefill)"
}

func isAttention(cat string) bool {
	return strings.Contains(cat, "attention") || cat == AttentionUnknown
}

// Learn takes the position hints of a robust layer table: kernels the
// rules, ops and names leave in Other that run where other layers run a
// categorised kernel. It relabels the table's positions and reports how
// many kernel names it categorised.
func (c *Classifier) Learn(tables ...*LayerTable) int {
	n := 0
	var pairs [][2]string
	for i, t := range tables {
		if t == nil {
			continue
		}
		pairs = append(pairs, t.pairs...)
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
			cl := Class{Category: want.Category, Provider: providerOf(Demangle(p[0])), ShortName: got.ShortName, Source: SourcePosition}
			c.position[p[0]] = cl
			c.memo[p[0]] = cl
			n++
		}
	}
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

// opFamilies map the name of the CPU op that launched a kernel to a
// category: ATen ops, torch custom ops of vLLM (_C::, vllm::), SGLang
// (sgl_kernel::) and aiter (aiter::), collectives. Matched on the op's
// words (see nameWords), first match wins.
var opFamilies = []struct {
	re       *regexp.Regexp
	category string
}{
	{regexp.MustCompile(`_(c10d|nccl|rccl|allreduce|all_reduce|all_reduce_\w*|allgather|all_gather\w*|reduce_scatter\w*|all_to_all\w*|alltoall\w*|broadcast_?|custom_ar|record_param_comms|gloo)_|_c10d_functional_|all_reduce|all_gather|reduce_scatter`), "All-reduce / collectives"},
	{regexp.MustCompile(`_(convolution|_convolution|conv\d?d|conv_transpose\d?d|cudnn_convolution\w*|miopen_convolution\w*|convolution_backward\w*|mkldnn_convolution)_`), "Convolution"},
	{regexp.MustCompile(`_(fused_moe\w*|moe_gemm|fused_experts\w*|grouped_gemm\w*|moe_mlp|ck_moe\w*|fmoe\w*|asm_moe\w*|cutlass_moe\w*|moe_wna16\w*|matmul_ogs)_`), "MoE expert GEMM"},
	{regexp.MustCompile(`_(moe_align\w*|moe_sum|moe_sort\w*|moe_permute|moe_unpermute|moe_finalize\w*|moe_combine|moe_dispatch|permute_rows|shuffle_rows)_`), "MoE sort / align"},
	{regexp.MustCompile(`_(topk_softmax|topk_sigmoid|grouped_topk\w*|biased_grouped_topk\w*|moe_gate|moe_topk\w*|fused_topk\w*|router\w*)_`), "MoE gate"},
	{regexp.MustCompile(`_(scaled_dot_product\w*|sdpa\w*|flash_attn\w*|flash_attention\w*|efficient_attention\w*|_flash_attention_forward|_efficient_attention_forward|fmha\w*|mha\w*|mla\w*|paged_attention\w*|unified_attention\w*|attention\w*|attn\w*|pa_fwd\w*|decode_attention\w*|extend_attention\w*|prefill_attention\w*)_|attention|flash_attn`), AttentionUnknown},
	{regexp.MustCompile(`_(reshape_and_cache\w*|concat_and_cache\w*|store_kv\w*|set_kv_buffer|kv_cache\w*|write_to_kv_cache)_`), "KV cache"},
	{regexp.MustCompile(`_(rotary_embedding\w*|rotary\w*|rope\w*|apply_rotary\w*|mrope\w*)_`), "RoPE"},
	{regexp.MustCompile(`_(mm|addmm|bmm|baddbmm|matmul|linear|addmv|mv|dot|_scaled_mm|scaled_mm|gemm\w*|gemv\w*|cutlass_scaled_mm\w*|w8a8\w*|fp8_gemm\w*|int8_gemm\w*|wvsplitk\w*|llmm\w*|skinny_gemm\w*|tgemm\w*|_int_mm|mm_\w*|bmm_\w*)_`), gemmOp},
	{regexp.MustCompile(`_(group_norm|native_group_norm\w*|instance_norm)_`), "GroupNorm"},
	{regexp.MustCompile(`_(batch_norm|native_batch_norm\w*|cudnn_batch_norm\w*|miopen_batch_norm\w*|_batch_norm_impl_index)_`), "BatchNorm"},
	{regexp.MustCompile(`_(layer_norm|native_layer_norm\w*|rms_norm\w*|fused_add_rms_norm\w*|rmsnorm\w*|layernorm\w*|_fused_rms_norm)_`), "RMSNorm / LayerNorm"},
	{regexp.MustCompile(`_(\w*quant\w*|\w*dequant\w*)_`), "Activation quant"},
	{regexp.MustCompile(`_(silu_and_mul|gelu_and_mul|gelu_tanh_and_mul|act_and_mul|silu|gelu|relu|swiglu|sigmoid|tanh|mish|hardswish)_`), "Activation (SiLU/GELU and mul)"},
	{regexp.MustCompile(`_(softmax|_softmax|log_softmax|_log_softmax)_`), "Softmax"},
	{regexp.MustCompile(`_(embedding|embedding_bag|_embedding_bag|embedding_dense_backward)_`), "Embedding"},
	{regexp.MustCompile(`_(sample|sampler|sampling\w*|top_k_top_p\w*|top_p\w*|min_p\w*|multinomial|apply_penalties\w*|gumbel\w*)_`), "Sampling"},
	{regexp.MustCompile(`_(sort|argsort|topk|cumsum|cumprod|sum|mean|amax|amin|max|min|argmax|argmin|prod|norm|var|std|var_mean|any|all|nonzero|unique\w*)_`), "Reduction / scan / sort"},
	{regexp.MustCompile(`_(max_pool\w*|avg_pool\w*|adaptive_avg_pool\w*|adaptive_max_pool\w*|upsample\w*|grid_sampler\w*)_`), "Elementwise / copy"},
	{regexp.MustCompile(`_(copy|copy_|_to_copy|to|clone|contiguous|cat|stack|fill|fill_|zero|zero_|zeros|ones|add|add_|sub|mul|mul_|div|div_|where|index|index_select|index_put\w*|gather|scatter\w*|masked_fill\w*|clamp\w*|neg|exp|pow|sqrt|rsqrt|abs|cast|_to_dtype|arange|full|empty|pad|constant_pad_nd|repeat\w*|expand|flip|roll|tril|triu|lt|gt|le|ge|eq|ne|bitwise\w*|logical\w*|floor\w*|ceil|round|remainder|fmod|dropout\w*|native_dropout\w*|uniform_|normal_|bernoulli_|rand\w*|lerp\w*|addcmul\w*|addcdiv\w*|_foreach\w*)_`), "Elementwise / copy"},
}

// categoryOfOp maps a launching op's name to a category.
func categoryOfOp(op string) (string, bool) {
	// Keep only the op's own name: "aten::addmm" -> "_aten_addmm_";
	// vLLM's "_C::rms_norm" and "vllm::unified_attention" alike.
	w := nameWords(op)
	for _, f := range opFamilies {
		if f.re.MatchString(w) {
			return f.category, true
		}
	}
	return "", false
}
