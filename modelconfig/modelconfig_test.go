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
	_, err := Parse([]byte(`[1,2]`))
	require.ErrorContains(t, err, "not a model config.json")
}

func TestLoadNamesFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(p, []byte("{"), 0o644))
	_, err := Load(p)
	require.ErrorContains(t, err, p+": not a model config.json")
}

func ExampleParse() {
	c, _ := Parse([]byte(`{"model_type":"minimax_m2","num_hidden_layers":62,"hidden_size":3072}`))
	fmt.Println(c.ModelType, c.NumHiddenLayers, c.HiddenSize)
	// Output: minimax_m2 62 3072
}
