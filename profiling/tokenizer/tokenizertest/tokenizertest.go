// Package tokenizertest makes tokenizer.json fixtures for tests: it trains a
// tiny byte-level BPE on some text and writes it in Hugging Face's schema,
// so tests of the tokenizer and of the bench client need no downloaded file.
package tokenizertest

import (
	"cmp"
	"strings"

	"github.com/go-json-experiment/json"
)

// Llama3Pattern is the Split regex of Llama 3 (Qwen 2 differs only in \p{N}).
const Llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

const TrainText = `The quick brown fox jumps over the lazy dog. It's the dog's day; don't
you think they'll say we've seen the best of it? The other one said: "I'm here."
There were 12345 people in the city in 2026, and 678 of them read the paper
every day. People like to read, write and think about the world and the sea.
Their house is near the school; the children go there each morning with their
mother and father. When the sun is high the water is warm. Café, naïve, Straße:
words from other languages also appear, as do numbers like 3.14159 and 1,000.
the the the of of and and to in is was for on are with as his they at be this`

// ByteTable is GPT-2's byte-to-unicode mapping, built from its
// definition: bytes that print as themselves keep their code point, the rest
// take U+0100, U+0101, ... in byte order.
func ByteTable() [256]rune {
	var t [256]rune
	next := rune(0x100)
	for b := range 256 {
		keep := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if keep {
			t[b] = rune(b)
		} else {
			t[b] = next
			next++
		}
	}
	return t
}

func MapBytes(s string) []string {
	table := ByteTable()
	out := make([]string, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = string(table[s[i]])
	}
	return out
}

// trained is a tiny byte-level BPE: the 256 byte tokens, then one token per
// merge, then two special tokens.
type Trained struct {
	Vocab  map[string]int
	Merges [][2]string
	BOS    int
	EOS    int
}

// Train learns n merges from text split at spaces (each word but the
// first keeps its leading space), merging the most frequent pair first and
// breaking ties by the pair's text so the result is deterministic.
func Train(text string, n int) Trained {
	var words [][]string
	for i, w := range strings.Fields(text) {
		if i > 0 {
			w = " " + w
		}
		words = append(words, MapBytes(w))
	}
	tr := Trained{Vocab: map[string]int{}}
	for _, r := range ByteTable() {
		tr.Vocab[string(r)] = len(tr.Vocab)
	}
	for len(tr.Merges) < n {
		counts := map[[2]string]int{}
		for _, w := range words {
			for i := 0; i+1 < len(w); i++ {
				counts[[2]string{w[i], w[i+1]}]++
			}
		}
		var best [2]string
		bestN := 0
		for p, c := range counts {
			if c > bestN || (c == bestN && cmp.Compare(p[0]+"\x00"+p[1], best[0]+"\x00"+best[1]) < 0) {
				best, bestN = p, c
			}
		}
		if bestN == 0 {
			break
		}
		tr.Merges = append(tr.Merges, best)
		if _, ok := tr.Vocab[best[0]+best[1]]; !ok {
			tr.Vocab[best[0]+best[1]] = len(tr.Vocab)
		}
		for wi, w := range words {
			var out []string
			for i := 0; i < len(w); i++ {
				if i+1 < len(w) && w[i] == best[0] && w[i+1] == best[1] {
					out = append(out, best[0]+best[1])
					i++
					continue
				}
				out = append(out, w[i])
			}
			words[wi] = out
		}
	}
	tr.BOS, tr.EOS = len(tr.Vocab), len(tr.Vocab)+1
	return tr
}

type Options struct {
	MergePairs bool   // merges as ["a","b"] rather than "a b"
	Split      bool   // Sequence[Split(Llama3Pattern), ByteLevel(use_regex=false)], else ByteLevel(use_regex=true)
	BOS        bool   // TemplateProcessing adding <|bos|>, else ByteLevel post-processor
	Normalizer string // "" for null
}

// JSON writes tr as a tokenizer.json in Hugging Face's schema.
func (tr Trained) JSON(o Options) ([]byte, error) {
	var merges []any
	for _, m := range tr.Merges {
		if o.MergePairs {
			merges = append(merges, []string{m[0], m[1]})
		} else {
			merges = append(merges, m[0]+" "+m[1])
		}
	}
	byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
	var pre any = byteLevel
	if o.Split {
		pre = map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": Llama3Pattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}}
	}
	var post any = byteLevel
	if o.BOS {
		post = map[string]any{
			"type":   "TemplateProcessing",
			"single": []any{map[string]any{"SpecialToken": map[string]any{"id": "<|bos|>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"pair": []any{map[string]any{"SpecialToken": map[string]any{"id": "<|bos|>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"SpecialToken": map[string]any{"id": "<|bos|>", "type_id": 1}}, map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}},
			"special_tokens": map[string]any{"<|bos|>": map[string]any{"id": "<|bos|>", "ids": []int{tr.BOS}, "tokens": []string{"<|bos|>"}}},
		}
	}
	var norm any
	if o.Normalizer != "" {
		norm = map[string]any{"type": o.Normalizer}
	}
	added := func(id int, content string) map[string]any {
		return map[string]any{"id": id, "content": content, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
	}
	doc := map[string]any{
		"version":        "1.0",
		"truncation":     nil,
		"padding":        nil,
		"added_tokens":   []any{added(tr.BOS, "<|bos|>"), added(tr.EOS, "<|eos|>")},
		"normalizer":     norm,
		"pre_tokenizer":  pre,
		"post_processor": post,
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil, "end_of_word_suffix": nil,
			"fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": tr.Vocab, "merges": merges,
		},
	}
	return json.Marshal(doc, json.Deterministic(true))
}
