package modelconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		name, doc string
		layers    int
		typ       string
	}{
		{"plain", `{"model_type":"qwen3","num_hidden_layers":36,"hidden_size":4096}`, 36, "qwen3"},
		{"multimodal", `{"model_type":"llava","text_config":{"model_type":"llama","num_hidden_layers":32}}`, 32, "llava"},
		{"no layers", `{"model_type":"x"}`, 0, "x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.doc))
			require.NoError(t, err)
			require.Equal(t, tt.layers, c.NumHiddenLayers)
			require.Equal(t, tt.typ, c.ModelType)
		})
	}
	for _, bad := range []string{`[1,2]`, `null`, `{`} {
		_, err := Parse([]byte(bad))
		require.ErrorContains(t, err, "not a model config.json", bad)
	}
}

func TestLoadNamesFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(p, []byte("{"), 0o644))
	_, err := Load(p)
	require.ErrorContains(t, err, p+": not a model config.json")
}

// TestFixtures checks the architecture of each fixture against the model's
// published description: kind, sizes, and the parameter counts its makers
// state (total within 2%; active within 12%, as makers differ on whether
// the embeddings count as active — MiniMax-M2's "10B active" leaves its
// 1.2B of embeddings out).
func TestFixtures(t *testing.T) {
	for _, tt := range []struct {
		dir                   string
		kind, attn            string
		layers, hidden        int
		experts, topk         int
		moeLayers             int
		expertI               int
		quant                 string
		params, active        float64 // published, in billions
		heads, kvHeads, hdim  int
		vocab, maxPos, shared int
	}{
		{dir: "llama-3.1-8b-instruct", kind: "dense", attn: "GQA", layers: 32, hidden: 4096, heads: 32, kvHeads: 8, hdim: 128,
			vocab: 128256, maxPos: 131072, params: 8.03, active: 8.03},
		{dir: "qwen3-8b", kind: "dense", attn: "GQA", layers: 36, hidden: 4096, heads: 32, kvHeads: 8, hdim: 128,
			vocab: 151936, maxPos: 40960, params: 8.2, active: 8.2},
		{dir: "qwen3-30b-a3b", kind: "MoE", attn: "GQA", layers: 48, hidden: 2048, experts: 128, topk: 8, moeLayers: 48, expertI: 768,
			heads: 32, kvHeads: 4, hdim: 128, vocab: 151936, maxPos: 40960, params: 30.5, active: 3.3},
		{dir: "deepseek-v3", kind: "MoE", attn: "MLA", layers: 61, hidden: 7168, experts: 256, topk: 8, moeLayers: 58, expertI: 2048, shared: 1,
			heads: 128, kvHeads: 128, hdim: 192, vocab: 129280, maxPos: 163840, quant: "fp8 (e4m3, block 128×128)", params: 671, active: 37},
		{dir: "minimax-m2", kind: "MoE", attn: "GQA", layers: 62, hidden: 3072, experts: 256, topk: 8, moeLayers: 62, expertI: 1536,
			heads: 48, kvHeads: 8, hdim: 128, vocab: 200064, maxPos: 196608, quant: "fp8 (float8_e4m3fn, block 128×128)", params: 230, active: 10},
	} {
		t.Run(tt.dir, func(t *testing.T) {
			c, err := Load(filepath.Join("..", "..", "fixtures", "models", tt.dir, "config.json"))
			require.NoError(t, err)
			require.Empty(t, c.Notes)
			a := c.Architecture()
			require.Equal(t, tt.kind, a.Kind())
			require.Equal(t, tt.attn, a.Attention)
			require.Equal(t, tt.layers, a.Layers)
			require.Equal(t, tt.hidden, a.Hidden)
			require.Equal(t, tt.heads, a.Heads)
			require.Equal(t, tt.kvHeads, a.KVHeads)
			require.Equal(t, tt.hdim, a.HeadDim)
			require.Equal(t, tt.vocab, a.Vocab)
			require.Equal(t, tt.maxPos, a.MaxPositions)
			require.Equal(t, tt.experts, a.Experts)
			require.Equal(t, tt.topk, a.TopK)
			require.Equal(t, tt.moeLayers, a.MoELayers)
			require.Equal(t, tt.expertI, a.ExpertIntermediate)
			require.Equal(t, tt.shared, a.SharedExperts)
			require.Equal(t, "bfloat16", a.Dtype)
			if tt.quant == "" {
				require.Nil(t, a.Quantization)
			} else {
				require.Equal(t, tt.quant, a.Quantization.String())
			}
			require.InEpsilon(t, tt.params, float64(a.Params)/1e9, 0.02, "total parameters %d", a.Params)
			require.InEpsilon(t, tt.active, float64(a.ActiveParams)/1e9, 0.12, "active parameters %d", a.ActiveParams)
		})
	}
}

// TestTolerant: a config with missing or unknown keys still reads; a key
// it reads with the wrong type, or more KV heads than heads, is an error
// naming the field (it was once dropped without a word, leaving the
// roofline of 9 positions blank).
func TestTolerant(t *testing.T) {
	for _, tt := range []struct {
		name, doc string
		layers    int
		err       string
		params    bool
	}{
		{"empty object", `{}`, 0, "", false},
		{"unknown keys only", `{"foo": {"bar": [1, 2]}, "baz": null}`, 0, "", false},
		{"string where a number belongs", `{"num_hidden_layers": "62", "hidden_size": 3072}`, 0,
			`num_hidden_layers: "62" is not a number`, false},
		{"fraction where a count belongs", `{"num_hidden_layers": 2.5}`, 0, "num_hidden_layers: 2.5 is not a count", false},
		{"bad quantization block", `{"num_hidden_layers": 2, "quantization_config": {"quant_method": "fp8", "weight_block_size": "128"}}`, 2,
			`quantization_config.weight_block_size: "128" is not a list`, false},
		{"two fields", `{"num_key_value_heads": "8", "head_dim": true}`, 0, `num_key_value_heads: "8" is not a number; head_dim: true is not a number`, false},
		{"more KV heads than heads", `{"num_attention_heads": 8, "num_key_value_heads": 64}`, 0, "num_key_value_heads 64 is more than num_attention_heads 8", false},
		{"no intermediate size", `{"num_hidden_layers": 2, "hidden_size": 64, "vocab_size": 10, "num_attention_heads": 4}`, 2, "", false},
		{"enough for an estimate", `{"num_hidden_layers": 2, "hidden_size": 64, "vocab_size": 10, "num_attention_heads": 4, "intermediate_size": 128, "tie_word_embeddings": true}`, 2, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.doc))
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.layers, c.NumHiddenLayers)
			require.Empty(t, c.Notes)
			a := c.Architecture()
			require.Equal(t, tt.params, a.Params > 0, "params %d", a.Params)
		})
	}
}

// TestEstimateSmall checks the parameter formula on a model small enough
// to count by hand: 2 layers, H=64, 4 heads of 16 (MHA), I=128, V=10, tied
// embeddings: 10·64 + 2·(64·16·(8+8) + 3·64·128) = 640 + 2·(16384+24576).
func TestEstimateSmall(t *testing.T) {
	c, err := Parse([]byte(`{"num_hidden_layers": 2, "hidden_size": 64, "vocab_size": 10, "num_attention_heads": 4, "intermediate_size": 128, "tie_word_embeddings": true}`))
	require.NoError(t, err)
	a := c.Architecture()
	require.Equal(t, "MHA", a.Attention)
	require.Equal(t, int64(640+2*(16384+24576)), a.Params)
	require.Equal(t, a.Params, a.ActiveParams)
	// The same as a MoE with 4 experts of 32, top-2, and a first dense layer.
	c, err = Parse([]byte(`{"num_hidden_layers": 2, "hidden_size": 64, "vocab_size": 10, "num_attention_heads": 4, "intermediate_size": 128,
		"tie_word_embeddings": true, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "first_k_dense_replace": 1}`))
	require.NoError(t, err)
	a = c.Architecture()
	require.True(t, a.MoE)
	require.Equal(t, 1, a.MoELayers)
	require.Equal(t, 1, a.DenseLayers)
	attn := int64(64 * 16 * 16)
	dense := int64(3 * 64 * 128)
	expert := int64(3 * 64 * 32)
	router := int64(64 * 4)
	require.Equal(t, 640+2*attn+dense+4*expert+router, a.Params)
	require.Equal(t, 640+2*attn+dense+2*expert+router, a.ActiveParams)
}

func ExampleParse() {
	c, _ := Parse([]byte(`{"model_type":"minimax_m2","num_hidden_layers":62,"hidden_size":3072}`))
	fmt.Println(c.ModelType, c.NumHiddenLayers, c.HiddenSize)
	// Output: minimax_m2 62 3072
}

// TestLayerKinds: the kinds of a model's layers, from layer_types, the
// full-attention interval of a hybrid model, Gemma 3's sliding-window
// pattern, or a MoE model's leading dense layers; nil when all alike.
func TestLayerKinds(t *testing.T) {
	count := func(kinds []string) map[string]int {
		m := map[string]int{}
		for _, k := range kinds {
			m[k]++
		}
		return m
	}
	c, err := Load(filepath.Join("..", "..", "fixtures", "models", "qwen3-next-80b-a3b-instruct", "config.json"))
	require.NoError(t, err)
	require.Empty(t, c.Notes)
	a := c.Architecture()
	require.Len(t, a.LayerKinds, 48)
	require.Equal(t, map[string]int{"linear_attention": 36, "full_attention": 12}, count(a.LayerKinds))
	require.Equal(t, []string{"linear_attention", "linear_attention", "linear_attention", "full_attention"}, a.LayerKinds[:4])
	require.True(t, a.MoE)
	require.Equal(t, 48, a.MoELayers)

	c, err = Load(filepath.Join("..", "..", "fixtures", "models", "deepseek-v3", "config.json"))
	require.NoError(t, err)
	a = c.Architecture()
	require.Equal(t, map[string]int{"dense MLP": 3, "MoE MLP": 58}, count(a.LayerKinds))
	require.Equal(t, 1, a.MTPLayers, "num_nextn_predict_layers")

	for _, tt := range []struct {
		name, doc string
		want      map[string]int
	}{
		{"layer_types", `{"num_hidden_layers": 4, "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]}`,
			map[string]int{"sliding_attention": 2, "full_attention": 2}},
		{"layer_types of the wrong length are not trusted", `{"num_hidden_layers": 3, "layer_types": ["a", "b"]}`, map[string]int{}},
		{"sliding_window_pattern", `{"num_hidden_layers": 12, "sliding_window_pattern": 6}`, map[string]int{"sliding_attention": 10, "full_attention": 2}},
		{"text_config", `{"text_config": {"num_hidden_layers": 8, "full_attention_interval": 4}}`, map[string]int{"linear_attention": 6, "full_attention": 2}},
		{"hybrid and MoE with a dense first layer", `{"num_hidden_layers": 4, "full_attention_interval": 2, "num_experts": 8, "num_experts_per_tok": 2, "first_k_dense_replace": 1}`,
			map[string]int{"linear_attention, dense MLP": 1, "full_attention, MoE MLP": 2, "linear_attention, MoE MLP": 1}},
		{"uniform", `{"num_hidden_layers": 4, "layer_types": ["full_attention", "full_attention", "full_attention", "full_attention"]}`, map[string]int{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.doc))
			require.NoError(t, err)
			a := c.Architecture()
			require.Equal(t, tt.want, count(a.LayerKinds))
		})
	}
}
