package tokenizer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/profile-model/profile-model/internal/sidefile"
)

// Tokenizer counts tokens the way the served model's tokenizer does. It is
// safe for concurrent use: the only state it changes after Parse is its
// per-chunk cache, which is synchronised.
type Tokenizer struct {
	normalize  normalizer
	preTok     []preTokenizer
	byteLevel  bool // pieces are mapped through GPT-2's byte-to-unicode table before BPE
	model      *bpe
	added      addedMatcher
	special    int // tokens the post-processor adds to a single sequence
	idToToken  []string
	specialIDs map[int]bool // special added tokens, which Decode copies as they are
	decodeByte bool         // decoder maps GPT-2's unicode chars back to bytes
	decoders   []componentJSON
}

// Load reads a tokenizer.json file, or the tokenizer.json in directory path.
// A tokenizer_config.json beside it is read too: for Llama and Gemma
// tokenizer classes its add_bos_token/add_eos_token decide SpecialTokens, as
// they do when transformers loads the tokenizer for the server.
func Load(path string) (*Tokenizer, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	data, err := sidefile.Read(context.Background(), path, "the tokenizer", sidefile.Large)
	if err != nil {
		return nil, err
	}
	t, err := parse(data, path)
	if err != nil {
		return nil, err
	}
	if err := t.applyConfig(filepath.Dir(path)); err != nil {
		return nil, err
	}
	return t, nil
}

// Parse reads the contents of a tokenizer.json (without a
// tokenizer_config.json; see Load).
func Parse(data []byte) (*Tokenizer, error) {
	return parse(data, "tokenizer.json")
}

// errUnsupported says a tokenizer.json uses a model or component this package
// cannot reproduce exactly; the bench then calibrates instead.
var errUnsupported = errors.New("not supported by this tokenizer reader")

// maxTokenID bounds token ids so a damaged file cannot make Parse allocate
// gigabytes for the id table.
const maxTokenID = 1 << 22

func parse(data []byte, name string) (*Tokenizer, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f, jsontext.AllowDuplicateNames(true)); err != nil {
		return nil, fmt.Errorf("tokenizer: %s is not a valid tokenizer.json: %w", name, err)
	}
	if f.Model == nil {
		return nil, fmt.Errorf("tokenizer: %s has no \"model\"", name)
	}
	t := &Tokenizer{specialIDs: map[int]bool{}}
	var err error
	if t.model, err = newBPE(f.Model, name); err != nil {
		return nil, err
	}
	if t.normalize, err = newNormalizer(f.Normalizer); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", name, err)
	}
	if t.preTok, t.byteLevel, err = newPreTokenizer(f.PreTokenizer); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", name, err)
	}
	if t.special, err = specialCount(f.PostProcessor); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", name, err)
	}
	t.added = newAddedMatcher(f.AddedTokens)
	t.decodeByte, t.decoders = decoderSpec(f.Decoder)

	maxID := -1
	for _, id := range t.model.vocab {
		maxID = max(maxID, id)
	}
	for _, a := range f.AddedTokens {
		if a.ID < 0 {
			return nil, fmt.Errorf("tokenizer: %s: added token %q has negative id %d", name, a.Content, a.ID)
		}
		maxID = max(maxID, a.ID)
	}
	if maxID >= maxTokenID {
		return nil, fmt.Errorf("tokenizer: %s: token id %d is implausibly large (over %d)", name, maxID, maxTokenID)
	}
	t.idToToken = make([]string, maxID+1)
	for tok, id := range t.model.vocab {
		t.idToToken[id] = tok
	}
	for _, a := range f.AddedTokens {
		t.idToToken[a.ID] = a.Content
		if a.Special {
			t.specialIDs[a.ID] = true
		}
	}
	return t, nil
}

// Encode returns the token ids of text, with no special tokens added.
// Text that is not valid UTF-8 is encoded as encoding/json would send it,
// with each bad byte replaced by U+FFFD.
func (t *Tokenizer) Encode(text string) []int {
	if !utf8.ValidString(text) {
		text = string([]rune(text)) // one U+FFFD per bad byte
	}
	ids := make([]int, 0, len(text)/3+4)
	for i, seg := range t.added.split(text) {
		if seg.id >= 0 {
			ids = append(ids, seg.id)
			continue
		}
		s := seg.text
		if t.normalize != nil {
			s = t.normalize(s)
		}
		if s == "" {
			continue
		}
		pieces := []string{s}
		for _, p := range t.preTok {
			pieces = p(pieces, i == 0)
		}
		for _, piece := range pieces {
			if piece == "" {
				continue
			}
			ids = t.model.encodeWord(piece, t.byteLevel, ids)
		}
	}
	return ids
}

// Counter counts the prompt tokens of a text the way a served model's
// tokenizer does, special tokens included (as usage.prompt_tokens reports
// them). *Tokenizer is one; the bench client shapes prompts with a Counter
// and the simulated engine counts them with one.
type Counter interface{ Count(text string) int }

var _ Counter = (*Tokenizer)(nil)

// Count is what a vLLM-style server reports as usage.prompt_tokens for a
// completion request with prompt text: Encode plus the special tokens the
// post-processor adds.
func (t *Tokenizer) Count(text string) int {
	return len(t.Encode(text)) + t.special
}

// specialTokens is the number of tokens the post-processor adds to a single
// sequence (a BOS for Llama 3, none for Qwen).
func (t *Tokenizer) specialTokens() int { return t.special }

// Decode turns ids back into text; unknown ids are skipped. It is meant for
// tests and debugging: it handles the byte-level, byte-fallback and
// metaspace decoders.
func (t *Tokenizer) Decode(ids []int) string {
	var out []byte
	var pending []string // consecutive model tokens, decoded together
	flush := func() {
		if len(pending) > 0 {
			out = append(out, t.decodeTokens(pending, len(out) == 0)...)
			pending = pending[:0]
		}
	}
	for _, id := range ids {
		if id < 0 || id >= len(t.idToToken) {
			continue
		}
		if t.specialIDs[id] {
			flush()
			out = append(out, t.idToToken[id]...)
			continue
		}
		pending = append(pending, t.idToToken[id])
	}
	flush()
	return string(out)
}

func (t *Tokenizer) decodeTokens(toks []string, first bool) []byte {
	if t.decodeByte {
		var out []byte
		for _, tok := range toks {
			for _, r := range tok {
				if b, ok := unicodeToByte(r); ok {
					out = append(out, b)
				} else {
					out = utf8.AppendRune(out, r)
				}
			}
		}
		return out
	}
	// Sentencepiece style: byte fallback tokens, then the metaspace replacement.
	var out []byte
	for _, tok := range toks {
		if b, ok := byteFallbackToken(tok); ok {
			out = append(out, b)
			continue
		}
		out = append(out, tok...)
	}
	s := string(out)
	for _, d := range t.decoders {
		switch d.Type {
		case "Replace":
			if d.Pattern != nil && d.Pattern.String != nil {
				s = strings.ReplaceAll(s, *d.Pattern.String, d.Content)
			}
		case "Metaspace":
			s = strings.ReplaceAll(s, metaspaceReplacement(d), " ")
			if first && d.PrependScheme != "never" {
				s = strings.TrimPrefix(s, " ")
			}
		case "Strip":
			if first {
				for i := 0; i < d.Start && strings.HasPrefix(s, d.Content); i++ {
					s = s[len(d.Content):]
				}
			}
		}
	}
	return []byte(s)
}

// decoderSpec flattens the decoder into whether it is byte-level and the
// string decoders Decode applies otherwise.
func decoderSpec(c *componentJSON) (byteLevel bool, flat []componentJSON) {
	if c == nil {
		return false, nil
	}
	if c.Type == "Sequence" {
		for i := range c.Decoders {
			b, f := decoderSpec(&c.Decoders[i])
			byteLevel = byteLevel || b
			flat = append(flat, f...)
		}
		return byteLevel, flat
	}
	return c.Type == "ByteLevel", []componentJSON{*c}
}

// specialCount is the number of tokens the post-processor adds to a single
// sequence.
func specialCount(c *componentJSON) (int, error) {
	if c == nil {
		return 0, nil
	}
	switch c.Type {
	case "ByteLevel":
		return 0, nil
	case "BertProcessing", "RobertaProcessing":
		return 2, nil
	case "TemplateProcessing":
		n := 0
		for _, item := range c.Single {
			if item.SpecialToken == nil {
				continue
			}
			sp, ok := c.SpecialTokens[item.SpecialToken.ID]
			if !ok {
				// Older files list the id itself only; it is one token.
				n++
				continue
			}
			n += len(sp.IDs)
		}
		return n, nil
	case "Sequence":
		n := 0
		for i := range c.Processors {
			k, err := specialCount(&c.Processors[i])
			if err != nil {
				return 0, err
			}
			n += k
		}
		return n, nil
	}
	return 0, fmt.Errorf("unsupported post_processor %q: %w", c.Type, errUnsupported)
}

// addedMatcher finds added tokens (special or not) in raw text; they are
// matched whole, before normalisation and pre-tokenisation.
type addedMatcher struct {
	tokens []addedTokenJSON // longest content first
	first  [256][]int       // first byte of content -> indexes in tokens
}

func newAddedMatcher(toks []addedTokenJSON) addedMatcher {
	var m addedMatcher
	for _, a := range toks {
		if a.Content != "" {
			m.tokens = append(m.tokens, a)
		}
	}
	sort.SliceStable(m.tokens, func(i, j int) bool { return len(m.tokens[i].Content) > len(m.tokens[j].Content) })
	for i, a := range m.tokens {
		m.first[a.Content[0]] = append(m.first[a.Content[0]], i)
	}
	return m
}

type segment struct {
	text string
	id   int // -1: plain text
}

// split cuts text at added tokens, leftmost and then longest first, honouring
// lstrip/rstrip (the token absorbs neighbouring whitespace) and single_word.
func (m addedMatcher) split(text string) []segment {
	if len(m.tokens) == 0 {
		return []segment{{text, -1}}
	}
	var out []segment
	start := 0 // start of pending plain text
	for i := 0; i < len(text); {
		if m.first[text[i]] == nil {
			i++
			continue
		}
		idx := m.matchAt(text, i)
		if idx < 0 {
			i++
			continue
		}
		a := m.tokens[idx]
		lo, hi := i, i+len(a.Content)
		if a.LStrip {
			for lo > start {
				r, n := utf8.DecodeLastRuneInString(text[start:lo])
				if !isSpace(r) {
					break
				}
				lo -= n
			}
		}
		if a.RStrip {
			for hi < len(text) {
				r, n := utf8.DecodeRuneInString(text[hi:])
				if !isSpace(r) {
					break
				}
				hi += n
			}
		}
		if lo > start {
			out = append(out, segment{text[start:lo], -1})
		}
		out = append(out, segment{text[lo:hi], a.ID})
		start, i = hi, hi
	}
	if start < len(text) {
		out = append(out, segment{text[start:], -1})
	}
	return out
}

func (m addedMatcher) matchAt(text string, i int) int {
	for _, idx := range m.first[text[i]] {
		a := m.tokens[idx]
		if !strings.HasPrefix(text[i:], a.Content) {
			continue
		}
		if a.SingleWord {
			before, _ := utf8.DecodeLastRuneInString(text[:i])
			after, _ := utf8.DecodeRuneInString(text[i+len(a.Content):])
			if (i > 0 && isWordRune(before)) || (i+len(a.Content) < len(text) && isWordRune(after)) {
				continue
			}
		}
		return idx
	}
	return -1
}
