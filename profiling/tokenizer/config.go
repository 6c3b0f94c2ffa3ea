package tokenizer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/profile-model/profile-model/internal/sidefile"
)

// rebuildsPostProcessor says whether transformers' tokenizer class rebuilds
// the post-processor from add_bos_token/add_eos_token when loaded, overriding
// tokenizer.json's (DeepSeek V3 ships a ByteLevel post-processor but the
// server adds its BOS this way), and whether add_bos_token defaults to true.
func rebuildsPostProcessor(class string) (rebuilds, bosDefault bool) {
	switch class {
	case "LlamaTokenizer", "LlamaTokenizerFast", "CodeLlamaTokenizer", "CodeLlamaTokenizerFast",
		"GemmaTokenizer", "GemmaTokenizerFast", "CohereTokenizer", "CohereTokenizerFast":
		return true, true
	case "GPTNeoXTokenizer", "GPTNeoXTokenizerFast":
		return true, false
	}
	return false, false
}

type configJSON struct {
	TokenizerClass string         `json:"tokenizer_class"`
	AddBOS         *bool          `json:"add_bos_token"`
	AddEOS         *bool          `json:"add_eos_token"`
	BOS            jsontext.Value `json:"bos_token"`
	EOS            jsontext.Value `json:"eos_token"`
}

// applyConfig reads the tokenizer_config.json beside a tokenizer.json, if
// any, and sets the special-token count the way transformers does for the
// classes that rebuild the post-processor.
func (t *Tokenizer) applyConfig(dir string) error {
	path := filepath.Join(dir, "tokenizer_config.json")
	data, err := sidefile.Read(context.Background(), path, "the tokenizer config", sidefile.Small)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var c configJSON
	if err := json.Unmarshal(data, &c, jsontext.AllowDuplicateNames(true)); err != nil {
		return fmt.Errorf("tokenizer: %s is not valid JSON: %w", path, err)
	}
	rebuilds, bosDefault := rebuildsPostProcessor(c.TokenizerClass)
	if !rebuilds {
		return nil
	}
	n := 0
	if (c.AddBOS == nil && bosDefault || c.AddBOS != nil && *c.AddBOS) && isSet(c.BOS) {
		n++
	}
	if c.AddEOS != nil && *c.AddEOS && isSet(c.EOS) {
		n++
	}
	t.special = n
	return nil
}

func isSet(v jsontext.Value) bool { return len(v) > 0 && string(v) != "null" }
