package tokenizer

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

// This file generates the test fixtures: it trains a tiny byte-level BPE on
// some text and writes it as a tokenizer.json in Hugging Face's schema.

// llama3Pattern is the Split regex of Llama 3 (Qwen 2 differs only in \p{N}).
const llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

const trainText = `The quick brown fox jumps over the lazy dog. It's the dog's day; don't
you think they'll say we've seen the best of it? The other one said: "I'm here."
There were 12345 people in the city in 2026, and 678 of them read the paper
every day. People like to read, write and think about the world and the sea.
Their house is near the school; the children go there each morning with their
mother and father. When the sun is high the water is warm. Café, naïve, Straße:
words from other languages also appear, as do numbers like 3.14159 and 1,000.
the the the of of and and to in is was for on are with as his they at be this`

// testByteTable is GPT-2's byte-to-unicode mapping, built from its
// definition: bytes that print as themselves keep their code point, the rest
// take U+0100, U+0101, ... in byte order.
func testByteTable() [256]rune {
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

func mapBytes(s string) []string {
	table := testByteTable()
	out := make([]string, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = string(table[s[i]])
	}
	return out
}

// trained is a tiny byte-level BPE: the 256 byte tokens, then one token per
// merge, then two special tokens.
type trained struct {
	vocab  map[string]int
	merges [][2]string
	bos    int
	eos    int
}

// trainBPE learns n merges from text split at spaces (each word but the
// first keeps its leading space), merging the most frequent pair first and
// breaking ties by the pair's text so the result is deterministic.
func trainBPE(text string, n int) trained {
	var words [][]string
	for i, w := range strings.Fields(text) {
		if i > 0 {
			w = " " + w
		}
		words = append(words, mapBytes(w))
	}
	tr := trained{vocab: map[string]int{}}
	for _, r := range testByteTable() {
		tr.vocab[string(r)] = len(tr.vocab)
	}
	for len(tr.merges) < n {
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
		tr.merges = append(tr.merges, best)
		if _, ok := tr.vocab[best[0]+best[1]]; !ok {
			tr.vocab[best[0]+best[1]] = len(tr.vocab)
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
	tr.bos, tr.eos = len(tr.vocab), len(tr.vocab)+1
	return tr
}

type fixtureOpts struct {
	mergePairs bool   // merges as ["a","b"] rather than "a b"
	split      bool   // Sequence[Split(llama3Pattern), ByteLevel(use_regex=false)], else ByteLevel(use_regex=true)
	bos        bool   // TemplateProcessing adding <|bos|>, else ByteLevel post-processor
	normalizer string // "" for null
}

// fixtureJSON writes tr as a tokenizer.json in Hugging Face's schema.
func fixtureJSON(t testing.TB, tr trained, o fixtureOpts) []byte {
	t.Helper()
	var merges []any
	for _, m := range tr.merges {
		if o.mergePairs {
			merges = append(merges, []string{m[0], m[1]})
		} else {
			merges = append(merges, m[0]+" "+m[1])
		}
	}
	byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
	var pre any = byteLevel
	if o.split {
		pre = map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": llama3Pattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}}
	}
	var post any = byteLevel
	if o.bos {
		post = map[string]any{
			"type":   "TemplateProcessing",
			"single": []any{map[string]any{"SpecialToken": map[string]any{"id": "<|bos|>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"pair": []any{map[string]any{"SpecialToken": map[string]any{"id": "<|bos|>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"SpecialToken": map[string]any{"id": "<|bos|>", "type_id": 1}}, map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}},
			"special_tokens": map[string]any{"<|bos|>": map[string]any{"id": "<|bos|>", "ids": []int{tr.bos}, "tokens": []string{"<|bos|>"}}},
		}
	}
	var norm any
	if o.normalizer != "" {
		norm = map[string]any{"type": o.normalizer}
	}
	added := func(id int, content string) map[string]any {
		return map[string]any{"id": id, "content": content, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
	}
	doc := map[string]any{
		"version":        "1.0",
		"truncation":     nil,
		"padding":        nil,
		"added_tokens":   []any{added(tr.bos, "<|bos|>"), added(tr.eos, "<|eos|>")},
		"normalizer":     norm,
		"pre_tokenizer":  pre,
		"post_processor": post,
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil, "end_of_word_suffix": nil,
			"fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": tr.vocab, "merges": merges,
		},
	}
	data, err := json.Marshal(doc, json.Deterministic(true))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// fixture trains the standard tiny tokenizer and parses it with options o.
func fixture(t testing.TB, o fixtureOpts) (*Tokenizer, trained, []byte) {
	t.Helper()
	tr := trainBPE(trainText, 300)
	data := fixtureJSON(t, tr, o)
	tok, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse of the generated fixture: %v", err)
	}
	return tok, tr, data
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// bruteBPE encodes one pre-tokenised chunk by the definition of BPE: map its
// bytes, then while any adjacent pair has a merge, merge the pair of lowest
// rank (leftmost on ties).
func bruteBPE(tr trained, chunk string) []int {
	rank := map[[2]string]int{}
	for i, m := range tr.merges {
		if _, ok := rank[m]; !ok {
			rank[m] = i
		}
	}
	syms := mapBytes(chunk)
	for {
		best, at := -1, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := rank[[2]string{syms[i], syms[i+1]}]; ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		syms = slices.Replace(syms, at, at+2, syms[at]+syms[at+1])
	}
	ids := make([]int, len(syms))
	for i, s := range syms {
		ids[i] = tr.vocab[s]
	}
	return ids
}
