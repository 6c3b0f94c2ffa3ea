// Package modelconfig reads a Hugging Face model config.json: what the
// analysis checks layer counts against and what the run report describes
// (architecture, sizes, experts, quantisation, an estimated parameter
// count). Dense and mixture-of-experts models are understood under the key
// names their families use (Llama, Qwen3, Qwen3-MoE, DeepSeek-V3,
// MiniMax-M2, Mixtral). Multimodal configs keep the language model's
// figures under text_config; they are read from there.
//
// Reading is tolerant of what it does not need: unknown keys are ignored
// and missing keys leave their field zero. A key it reads whose value has
// the wrong type (a string where a count belongs), or more key-value heads
// than attention heads, is an error naming the field: left blank, it would
// blank or inflate the roofline without a word.
package modelconfig

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/profile-model/profile-model/internal/sidefile"
)

// Config is the part of a config.json the tool uses. Zero means absent.
type Config struct {
	ModelType       string
	Architectures   []string
	NumHiddenLayers int
	HiddenSize      int
	VocabSize       int

	IntermediateSize      int // dense MLP (Mixtral and MiniMax style: the expert's)
	NumAttentionHeads     int
	NumKeyValueHeads      int
	HeadDim               int
	MaxPositionEmbeddings int
	Dtype                 string // torch_dtype, or dtype in newer files
	TieWordEmbeddings     bool

	// Mixture of experts.
	NumExperts          int // num_experts, num_local_experts or n_routed_experts
	NumExpertsPerTok    int // top-k
	MoEIntermediateSize int // moe_intermediate_size
	SharedExperts       int // n_shared_experts (each of MoEIntermediateSize)
	// SharedIntermediateSize is one shared expert of its own size
	// (shared_expert_intermediate_size, shared_intermediate_size).
	SharedIntermediateSize int
	FirstKDenseReplace     int   // DeepSeek: the first k layers are dense
	MoELayerFreq           int   // DeepSeek: every n-th layer is MoE
	DecoderSparseStep      int   // Qwen-MoE: every n-th layer is MoE
	MLPOnlyLayers          []int // Qwen-MoE: layers that are dense

	// Layers of more than one kind. LayerTypesList is layer_types, one
	// attention type per layer ("full_attention", "linear_attention",
	// "sliding_attention"); FullAttentionInterval (Qwen3-Next, Qwen3.5)
	// makes every n-th layer full attention and the rest linear;
	// SlidingWindowPattern (Gemma 3) every n-th layer global and the rest
	// sliding-window. MTPLayers are multi-token-prediction layers beyond
	// num_hidden_layers (num_nextn_predict_layers, mtp_num_hidden_layers),
	// run by the draft, not by the model's forward.
	LayerTypesList        []string
	FullAttentionInterval int
	SlidingWindowPattern  int
	MTPLayers             int

	// Multi-head latent attention (DeepSeek).
	QLoraRank     int
	KVLoraRank    int
	QKNopeHeadDim int
	QKRopeHeadDim int
	VHeadDim      int

	Quantization *Quantization // nil: not quantised (or not said)

	TextConfig *Config

	// Notes name the keys that were present but could not be read.
	Notes []string
}

// Quantization is a config's quantization_config.
type Quantization struct {
	Method          string // quant_method: fp8, awq, gptq, compressed-tensors, mxfp4, ...
	Format          string // fmt: e4m3, float8_e4m3fn, ...
	WeightBlockSize []int  // e.g. [128, 128]
	Bits            int
	GroupSize       int
}

// Load reads a config.json file.
func Load(path string) (*Config, error) {
	data, err := sidefile.Read(context.Background(), path, "the model config", sidefile.Small)
	if err != nil {
		return nil, err
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse parses a config.json document. The language model's figures of a
// multimodal config (text_config) fill what the top level leaves out.
func Parse(data []byte) (*Config, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		if err == nil {
			err = fmt.Errorf("null document")
		}
		return nil, fmt.Errorf("not a model config.json (a JSON object expected): %w", err)
	}
	c := fromRaw(raw, "")
	if len(c.Notes) > 0 {
		// A field of the wrong type left blank would blank the roofline of
		// the positions it sizes, without a word: say which, and stop.
		return nil, fmt.Errorf("%s: fix the field or leave it out", strings.Join(c.Notes, "; "))
	}
	if h, kv := c.NumAttentionHeads, c.NumKeyValueHeads; h > 0 && kv > h {
		return nil, fmt.Errorf("num_key_value_heads %d is more than num_attention_heads %d: no model groups queries so; fix the config", kv, h)
	}
	return c, nil
}

// reader decodes keys of one object leniently, collecting notes.
type reader struct {
	raw    map[string]json.RawMessage
	prefix string
	notes  []string
}

func (r *reader) value(key string, dst any) bool {
	v, ok := r.raw[key]
	if !ok || string(v) == "null" {
		return false
	}
	if err := json.Unmarshal(v, dst); err != nil {
		r.notes = append(r.notes, fmt.Sprintf("%s%s: %s is not a %s", r.prefix, key, short(v), kindOf(dst)))
		return false
	}
	return true
}

func short(v json.RawMessage) string {
	s := string(v)
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

func kindOf(dst any) string {
	switch dst.(type) {
	case *float64:
		return "number"
	case *string:
		return "string"
	case *bool:
		return "boolean"
	}
	return "list"
}

// int reads the first of keys present as a whole number.
func (r *reader) int(keys ...string) int {
	for _, k := range keys {
		var f float64
		if r.value(k, &f) {
			if f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
				r.notes = append(r.notes, fmt.Sprintf("%s%s: %v is not a count", r.prefix, k, f))
				continue
			}
			return int(f)
		}
	}
	return 0
}

func (r *reader) str(keys ...string) string {
	for _, k := range keys {
		var s string
		if r.value(k, &s) {
			return s
		}
	}
	return ""
}

func (r *reader) ints(key string) []int {
	var fs []float64
	if !r.value(key, &fs) {
		return nil
	}
	out := make([]int, 0, len(fs))
	for _, f := range fs {
		out = append(out, int(f))
	}
	return out
}

func fromRaw(raw map[string]json.RawMessage, prefix string) *Config {
	r := &reader{raw: raw, prefix: prefix}
	c := &Config{}
	c.ModelType = r.str("model_type")
	r.value("architectures", &c.Architectures)
	c.NumHiddenLayers = r.int("num_hidden_layers", "n_layer", "num_layers")
	c.HiddenSize = r.int("hidden_size", "n_embd", "d_model")
	c.VocabSize = r.int("vocab_size")
	c.IntermediateSize = r.int("intermediate_size", "ffn_hidden_size")
	c.NumAttentionHeads = r.int("num_attention_heads", "n_head")
	c.NumKeyValueHeads = r.int("num_key_value_heads", "num_kv_heads")
	c.HeadDim = r.int("head_dim")
	c.MaxPositionEmbeddings = r.int("max_position_embeddings", "n_positions", "max_seq_len")
	c.Dtype = r.str("torch_dtype", "dtype")
	r.value("tie_word_embeddings", &c.TieWordEmbeddings)
	c.NumExperts = r.int("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
	c.NumExpertsPerTok = r.int("num_experts_per_tok", "moe_top_k", "num_experts_per_token")
	c.MoEIntermediateSize = r.int("moe_intermediate_size")
	c.SharedExperts = r.int("n_shared_experts", "num_shared_experts")
	c.SharedIntermediateSize = r.int("shared_expert_intermediate_size", "shared_intermediate_size")
	c.FirstKDenseReplace = r.int("first_k_dense_replace")
	c.MoELayerFreq = r.int("moe_layer_freq")
	c.DecoderSparseStep = r.int("decoder_sparse_step")
	c.MLPOnlyLayers = r.ints("mlp_only_layers")
	r.value("layer_types", &c.LayerTypesList)
	c.FullAttentionInterval = r.int("full_attention_interval")
	c.SlidingWindowPattern = r.int("sliding_window_pattern")
	c.MTPLayers = r.int("num_nextn_predict_layers", "mtp_num_hidden_layers", "mtp_num_layers")
	c.QLoraRank = r.int("q_lora_rank")
	c.KVLoraRank = r.int("kv_lora_rank")
	c.QKNopeHeadDim = r.int("qk_nope_head_dim")
	c.QKRopeHeadDim = r.int("qk_rope_head_dim")
	c.VHeadDim = r.int("v_head_dim")
	var q map[string]json.RawMessage
	if r.value("quantization_config", &q) && q != nil {
		qr := &reader{raw: q, prefix: prefix + "quantization_config."}
		c.Quantization = &Quantization{
			Method: qr.str("quant_method"), Format: qr.str("fmt", "format"),
			WeightBlockSize: qr.ints("weight_block_size"), Bits: qr.int("bits", "w_bit"), GroupSize: qr.int("group_size", "q_group_size"),
		}
		r.notes = append(r.notes, qr.notes...)
	}
	var text map[string]json.RawMessage
	if r.value("text_config", &text) && text != nil {
		c.TextConfig = fromRaw(text, prefix+"text_config.")
		r.notes = append(r.notes, c.TextConfig.Notes...)
		c.TextConfig.Notes = nil
		c.fillFrom(c.TextConfig)
	}
	c.Notes = r.notes
	return c
}

// fillFrom fills the zero fields of c from t (a multimodal config's
// language model).
func (c *Config) fillFrom(t *Config) {
	setInt := func(dst *int, v int) {
		if *dst == 0 {
			*dst = v
		}
	}
	setStr := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	setStr(&c.ModelType, t.ModelType)
	setInt(&c.NumHiddenLayers, t.NumHiddenLayers)
	setInt(&c.HiddenSize, t.HiddenSize)
	setInt(&c.VocabSize, t.VocabSize)
	setInt(&c.IntermediateSize, t.IntermediateSize)
	setInt(&c.NumAttentionHeads, t.NumAttentionHeads)
	setInt(&c.NumKeyValueHeads, t.NumKeyValueHeads)
	setInt(&c.HeadDim, t.HeadDim)
	setInt(&c.MaxPositionEmbeddings, t.MaxPositionEmbeddings)
	setStr(&c.Dtype, t.Dtype)
	setInt(&c.NumExperts, t.NumExperts)
	setInt(&c.NumExpertsPerTok, t.NumExpertsPerTok)
	setInt(&c.MoEIntermediateSize, t.MoEIntermediateSize)
	setInt(&c.SharedExperts, t.SharedExperts)
	setInt(&c.SharedIntermediateSize, t.SharedIntermediateSize)
	setInt(&c.FirstKDenseReplace, t.FirstKDenseReplace)
	setInt(&c.MoELayerFreq, t.MoELayerFreq)
	setInt(&c.DecoderSparseStep, t.DecoderSparseStep)
	if c.MLPOnlyLayers == nil {
		c.MLPOnlyLayers = t.MLPOnlyLayers
	}
	if c.LayerTypesList == nil {
		c.LayerTypesList = t.LayerTypesList
	}
	setInt(&c.FullAttentionInterval, t.FullAttentionInterval)
	setInt(&c.SlidingWindowPattern, t.SlidingWindowPattern)
	setInt(&c.MTPLayers, t.MTPLayers)
	if c.Quantization == nil {
		c.Quantization = t.Quantization
	}
}

// Architecture is what a report says about a model, derived from its
// config. Zero fields are unknown.
type Architecture struct {
	Name      string // architectures[0], else model_type
	ModelType string

	Layers       int
	Hidden       int
	Heads        int
	KVHeads      int
	HeadDim      int
	Intermediate int // dense MLP size (0 for an all-MoE model)
	Vocab        int
	MaxPositions int
	Attention    string // MHA, GQA, MQA or MLA; "" when unknown
	// MLA's sizes (latent attention, kv_lora_rank > 0), 0 otherwise:
	// QLoraRank is 0 when the query is projected directly.
	QLoraRank, KVLoraRank                  int
	QKNopeHeadDim, QKRopeHeadDim, VHeadDim int

	MoE                bool
	Experts            int
	TopK               int
	SharedExperts      int // shared experts of ExpertIntermediate size
	ExpertIntermediate int
	SharedIntermediate int // one shared expert of its own size
	MoELayers          int
	DenseLayers        int

	// LayerKinds names each layer's kind (index = layer) when the config
	// says the layers differ: the attention type ("linear_attention",
	// "full_attention", "sliding_attention") and, in a model that mixes
	// dense and MoE layers, the MLP ("full_attention, dense MLP"). Nil
	// when every layer is alike or the config does not say.
	LayerKinds []string
	MTPLayers  int // multi-token-prediction layers beyond Layers

	Dtype        string
	Quantization *Quantization

	// Params and ActiveParams are estimated parameter counts (see
	// Architecture.estimate); 0 when the config lacks the sizes.
	Params       int64
	ActiveParams int64
}

// Kind is "MoE" or "dense".
func (a *Architecture) Kind() string {
	if a.MoE {
		return "MoE"
	}
	return "dense"
}

// Architecture derives the model description from the config.
func (c *Config) Architecture() Architecture {
	a := Architecture{
		ModelType: c.ModelType, Layers: c.NumHiddenLayers, Hidden: c.HiddenSize,
		Heads: c.NumAttentionHeads, KVHeads: c.NumKeyValueHeads, HeadDim: c.HeadDim,
		Vocab: c.VocabSize, MaxPositions: c.MaxPositionEmbeddings, Dtype: c.Dtype,
		Quantization: c.Quantization,
	}
	a.Name = c.ModelType
	if len(c.Architectures) > 0 {
		a.Name = c.Architectures[0]
	}
	if a.KVHeads == 0 {
		a.KVHeads = a.Heads // no num_key_value_heads: plain multi-head attention
	}
	if a.HeadDim == 0 && a.Heads > 0 && a.Hidden%a.Heads == 0 {
		a.HeadDim = a.Hidden / a.Heads
	}
	switch {
	case c.KVLoraRank > 0:
		a.Attention = "MLA"
		a.HeadDim = c.QKNopeHeadDim + c.QKRopeHeadDim
		a.QLoraRank, a.KVLoraRank = c.QLoraRank, c.KVLoraRank
		a.QKNopeHeadDim, a.QKRopeHeadDim, a.VHeadDim = c.QKNopeHeadDim, c.QKRopeHeadDim, c.VHeadDim
	case a.Heads == 0:
	case a.KVHeads == 1 && a.Heads > 1:
		a.Attention = "MQA"
	case a.KVHeads < a.Heads:
		a.Attention = "GQA"
	default:
		a.Attention = "MHA"
	}
	if c.NumExperts > 1 && c.NumExpertsPerTok > 0 {
		a.MoE = true
		a.Experts, a.TopK = c.NumExperts, c.NumExpertsPerTok
		a.SharedExperts, a.SharedIntermediate = c.SharedExperts, c.SharedIntermediateSize
		a.ExpertIntermediate = c.MoEIntermediateSize
		if a.ExpertIntermediate == 0 {
			// Mixtral and MiniMax name the expert's size intermediate_size.
			a.ExpertIntermediate = c.IntermediateSize
		} else {
			a.Intermediate = c.IntermediateSize
		}
		for l := range a.Layers {
			if c.isMoELayer(l) {
				a.MoELayers++
			}
		}
		a.DenseLayers = a.Layers - a.MoELayers
		if a.DenseLayers == 0 {
			a.Intermediate = 0
		}
	} else {
		a.Intermediate = c.IntermediateSize
		a.DenseLayers = a.Layers
	}
	a.LayerKinds = c.layerKinds(a.Layers, a.MoE)
	a.MTPLayers = c.MTPLayers
	a.Params, a.ActiveParams = a.estimate(c)
	return a
}

// layerKinds names the kind of each of n layers (see
// Architecture.LayerKinds), nil when they are all alike.
func (c *Config) layerKinds(n int, moe bool) []string {
	if n <= 0 {
		return nil
	}
	attn := make([]string, n)
	switch {
	case len(c.LayerTypesList) == n:
		copy(attn, c.LayerTypesList)
	case c.FullAttentionInterval > 1:
		// Qwen3-Next: layer i is full attention when (i+1) is a multiple
		// of the interval (transformers' Qwen3NextConfig default layer_types).
		for i := range attn {
			attn[i] = "linear_attention"
			if (i+1)%c.FullAttentionInterval == 0 {
				attn[i] = "full_attention"
			}
		}
	case c.SlidingWindowPattern > 1:
		// Gemma 3: every sliding_window_pattern-th layer attends globally.
		for i := range attn {
			attn[i] = "sliding_attention"
			if (i+1)%c.SlidingWindowPattern == 0 {
				attn[i] = "full_attention"
			}
		}
	}
	mixed := false
	if moe {
		for l := 1; l < n; l++ {
			mixed = mixed || c.isMoELayer(l) != c.isMoELayer(0)
		}
	}
	out := make([]string, n)
	kinds := map[string]bool{}
	for i := range out {
		parts := []string{}
		if attn[i] != "" {
			parts = append(parts, attn[i])
		}
		if mixed {
			mlp := "dense MLP"
			if c.isMoELayer(i) {
				mlp = "MoE MLP"
			}
			parts = append(parts, mlp)
		}
		out[i] = strings.Join(parts, ", ")
		kinds[out[i]] = true
	}
	if len(kinds) < 2 {
		return nil
	}
	return out
}

// isMoELayer says whether layer l (from 0) has the expert MLP, by the
// rules of the families that mix dense and MoE layers.
func (c *Config) isMoELayer(l int) bool {
	if l < c.FirstKDenseReplace {
		return false
	}
	if f := c.MoELayerFreq; f > 1 && l%f != 0 {
		return false
	}
	if s := c.DecoderSparseStep; s > 1 && (l+1)%s != 0 {
		return false
	}
	return !slices.Contains(c.MLPOnlyLayers, l)
}

// estimate counts the weights of the linear layers and embeddings:
//
//	embeddings   V·H, plus V·H for the output head unless tied
//	attention    H·d·(2·heads + 2·kv_heads) per layer (q, k, v, o; d the
//	             head dim); with latent attention (kv_lora_rank > 0):
//	             H·q_lora + q_lora·heads·(nope+rope) (or H·heads·(nope+rope)
//	             without q_lora_rank) + H·(kv_lora+rope)
//	             + kv_lora·heads·(nope+v) + heads·v·H
//	dense MLP    3·H·I per dense layer (gate, up, down)
//	MoE MLP      E·3·H·Ie + H·E (router) + shared·3·H·Ie + 3·H·Is per MoE
//	             layer; active per token: top_k experts instead of E
//
// Norms, biases, multi-token-prediction layers and vision towers are left
// out (under 1% for the models above). Active parameters are those one
// token uses: embeddings, attention, dense MLPs, and per MoE layer the
// router, the shared experts and top_k routed experts. Zero when hidden
// size, layers, vocabulary, heads or an MLP size is unknown.
func (a *Architecture) estimate(c *Config) (total, active int64) {
	H, L, V := int64(a.Hidden), int64(a.Layers), int64(a.Vocab)
	if H == 0 || L == 0 || V == 0 || a.Heads == 0 {
		return 0, 0
	}
	emb := V * H
	if !c.TieWordEmbeddings {
		emb *= 2
	}
	heads := int64(a.Heads)
	var attn int64
	if c.KVLoraRank > 0 {
		qk := int64(c.QKNopeHeadDim + c.QKRopeHeadDim)
		if c.QLoraRank > 0 {
			attn += H*int64(c.QLoraRank) + int64(c.QLoraRank)*heads*qk
		} else {
			attn += H * heads * qk
		}
		attn += H * int64(c.KVLoraRank+c.QKRopeHeadDim)
		attn += int64(c.KVLoraRank) * heads * int64(c.QKNopeHeadDim+c.VHeadDim)
		attn += heads * int64(c.VHeadDim) * H
	} else {
		if a.HeadDim == 0 {
			return 0, 0
		}
		attn = H * int64(a.HeadDim) * (2*heads + 2*int64(a.KVHeads))
	}
	total = emb + L*attn
	active = total
	if a.DenseLayers > 0 {
		if a.Intermediate == 0 {
			return 0, 0
		}
		mlp := int64(a.DenseLayers) * 3 * H * int64(a.Intermediate)
		total += mlp
		active += mlp
	}
	if a.MoE && a.MoELayers > 0 {
		if a.ExpertIntermediate == 0 {
			return 0, 0
		}
		expert := 3 * H * int64(a.ExpertIntermediate)
		shared := int64(a.SharedExperts)*expert + 3*H*int64(a.SharedIntermediate)
		router := H * int64(a.Experts)
		n := int64(a.MoELayers)
		total += n * (int64(a.Experts)*expert + router + shared)
		active += n * (int64(a.TopK)*expert + router + shared)
	}
	return total, active
}

// String describes the quantisation: "fp8 (e4m3, block 128×128)".
func (q *Quantization) String() string {
	if q == nil {
		return ""
	}
	s := q.Method
	if s == "" {
		s = "quantised"
	}
	var det []string
	if q.Format != "" {
		det = append(det, q.Format)
	}
	if q.Bits > 0 {
		det = append(det, fmt.Sprintf("%d-bit", q.Bits))
	}
	if len(q.WeightBlockSize) > 0 {
		dims := make([]string, len(q.WeightBlockSize))
		for i, d := range q.WeightBlockSize {
			dims[i] = fmt.Sprint(d)
		}
		det = append(det, "block "+strings.Join(dims, "×"))
	}
	if q.GroupSize > 0 {
		det = append(det, fmt.Sprintf("group %d", q.GroupSize))
	}
	if len(det) > 0 {
		s += " (" + strings.Join(det, ", ") + ")"
	}
	return s
}
