// Package modelconfig reads a Hugging Face model config.json: what the
// analysis checks layer counts against and what the run report describes
// (architecture, sizes, experts, quantisation). Multimodal configs keep the
// language model's figures under text_config; they are read from there.
package modelconfig

import (
	"encoding/json"
	"fmt"
	"os"
)

// Config is the part of a config.json the tool uses.
type Config struct {
	ModelType       string   `json:"model_type"`
	Architectures   []string `json:"architectures"`
	NumHiddenLayers int      `json:"num_hidden_layers"`
	HiddenSize      int      `json:"hidden_size"`
	VocabSize       int      `json:"vocab_size"`

	TextConfig *Config `json:"text_config,omitempty"`
}

// Load reads a config.json file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading model config: %w", err)
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
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("not a model config.json: %w", err)
	}
	if t := c.TextConfig; t != nil {
		if c.NumHiddenLayers == 0 {
			c.NumHiddenLayers = t.NumHiddenLayers
		}
		if c.HiddenSize == 0 {
			c.HiddenSize = t.HiddenSize
		}
		if c.VocabSize == 0 {
			c.VocabSize = t.VocabSize
		}
		if c.ModelType == "" {
			c.ModelType = t.ModelType
		}
	}
	return &c, nil
}
