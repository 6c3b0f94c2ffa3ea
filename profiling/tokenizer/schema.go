package tokenizer

import (
	"github.com/go-json-experiment/json/jsontext"
)

// fileJSON is the part of tokenizer.json this package reads.
type fileJSON struct {
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    *componentJSON   `json:"normalizer"`
	PreTokenizer  *componentJSON   `json:"pre_tokenizer"`
	PostProcessor *componentJSON   `json:"post_processor"`
	Decoder       *componentJSON   `json:"decoder"`
	Model         *modelJSON       `json:"model"`
}

type addedTokenJSON struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type modelJSON struct {
	Type                    string         `json:"type"`
	Vocab                   jsontext.Value `json:"vocab"` // read once the type is known to be BPE
	Merges                  jsontext.Value `json:"merges"`
	UnkToken                *string        `json:"unk_token"`
	ContinuingSubwordPrefix *string        `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string        `json:"end_of_word_suffix"`
	FuseUnk                 bool           `json:"fuse_unk"`
	ByteFallback            bool           `json:"byte_fallback"`
	IgnoreMerges            bool           `json:"ignore_merges"`
	Dropout                 *float64       `json:"dropout"`
}

// mergeJSON is one merge, written either as "a b" or as ["a", "b"].
type mergeJSON struct{ a, b string }

// componentJSON holds the fields of every normalizer, pre-tokenizer,
// post-processor and decoder type this package understands; each type reads
// its own.
type componentJSON struct {
	Type string `json:"type"`

	Normalizers   []componentJSON `json:"normalizers"`
	Pretokenizers []componentJSON `json:"pretokenizers"`
	Processors    []componentJSON `json:"processors"`
	Decoders      []componentJSON `json:"decoders"`

	AddPrefixSpace   *bool        `json:"add_prefix_space"`
	UseRegex         *bool        `json:"use_regex"`
	Pattern          *patternJSON `json:"pattern"`
	Behavior         string       `json:"behavior"`
	Invert           bool         `json:"invert"`
	IndividualDigits bool         `json:"individual_digits"`
	Replacement      string       `json:"replacement"`
	PrependScheme    string       `json:"prepend_scheme"`
	Split            *bool        `json:"split"`
	Content          string       `json:"content"`
	Prepend          string       `json:"prepend"`
	StripLeft        bool         `json:"strip_left"`
	StripRight       bool         `json:"strip_right"`
	Start            int          `json:"start"`
	Stop             int          `json:"stop"`

	Single        []templateItemJSON             `json:"single"`
	SpecialTokens map[string]templateSpecialJSON `json:"special_tokens"`
}

type patternJSON struct {
	Regex  *string `json:"Regex"`
	String *string `json:"String"`
}

type templateItemJSON struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

type templateSpecialJSON struct {
	IDs []int `json:"ids"`
}
