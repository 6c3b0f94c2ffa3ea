package tokenizer

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/profile-model/profile-model/profiling/tokenizer/tokenizertest"
)

func TestByteTableAnchors(t *testing.T) {
	t.Parallel()
	// Well-known GPT-2 facts: space is 'Ġ', newline 'Ċ', tab 'ĉ', and printable
	// ASCII maps to itself.
	table := tokenizertest.ByteTable()
	for b, want := range map[byte]rune{' ': 'Ġ', '\n': 'Ċ', '\t': 'ĉ', 'a': 'a', '!': '!', 0xAD: 'Ń'} {
		if table[b] != want || byteToRune[b] != want {
			t.Errorf("byte %#x: test table %q, package table %q, want %q", b, table[b], byteToRune[b], want)
		}
	}
	seen := map[rune]bool{}
	for b, r := range byteToRune {
		if seen[r] {
			t.Fatalf("rune %q used twice", r)
		}
		seen[r] = true
		if back, ok := unicodeToByte(r); !ok || int(back) != b {
			t.Errorf("unicodeToByte(%q) = %#x, %v; want %#x", r, back, ok, b)
		}
	}
	if _, ok := unicodeToByte('€'); ok {
		t.Error("unicodeToByte accepted a rune outside the table")
	}
}

// chunkCases are pre-tokenisations reasoned by hand from the two patterns.
var chunkCases = []struct {
	text         string
	llama3, gpt2 []string
}{
	{"the cat sat", []string{"the", " cat", " sat"}, []string{"the", " cat", " sat"}},
	{"don't stop", []string{"don", "'t", " stop"}, []string{"don", "'t", " stop"}},
	{"I'LL go", []string{"I", "'LL", " go"}, []string{"I", "'", "LL", " go"}},
	{"12345 apples", []string{"123", "45", " apples"}, []string{"12345", " apples"}},
	{"a  b", []string{"a", " ", " b"}, []string{"a", " ", " b"}},
	{"hi\n\nthere", []string{"hi", "\n\n", "there"}, []string{"hi", "\n", "\n", "there"}},
	{"end.  ", []string{"end", ".", "  "}, []string{"end", ".", "  "}},
	{"héllo wörld", []string{"héllo", " wörld"}, []string{"héllo", " wörld"}},
	{"say \"hi\"!", []string{"say", " \"", "hi", "\"!"}, []string{"say", " \"", "hi", "\"!"}},
}

func TestEncodeMatchesBruteForce(t *testing.T) {
	t.Parallel()
	split, tr, _ := fixture(t, fixtureOpts{Split: true, MergePairs: true})
	gpt2, _, _ := fixture(t, fixtureOpts{})
	for _, c := range chunkCases {
		for _, v := range []struct {
			name   string
			tok    *Tokenizer
			chunks []string
		}{{"split", split, c.llama3}, {"gpt2", gpt2, c.gpt2}} {
			var want []int
			for _, ch := range v.chunks {
				want = append(want, bruteBPE(tr, ch)...)
			}
			if got := v.tok.Encode(c.text); !slices.Equal(got, want) {
				t.Errorf("%s: Encode(%q) = %v, want %v (chunks %q)", v.name, c.text, got, want, v.chunks)
			}
		}
	}
}

// TestEncodeRandomWords checks bench-style prompts (lowercase words joined by
// single spaces, so each word is one chunk with its leading space) against the
// brute-force definition.
func TestEncodeRandomWords(t *testing.T) {
	t.Parallel()
	split, tr, _ := fixture(t, fixtureOpts{Split: true})
	gpt2, _, _ := fixture(t, fixtureOpts{MergePairs: true})
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields(strings.ToLower(tokenizertest.TrainText))
	for i := range 300 {
		n := 1 + rng.IntN(40)
		var b strings.Builder
		var want []int
		for j := range n {
			w := randomWord(rng, words)
			if j > 0 {
				w = " " + w
			}
			b.WriteString(w)
			want = append(want, bruteBPE(tr, w)...)
		}
		text := b.String()
		for name, tok := range map[string]*Tokenizer{"split": split, "gpt2": gpt2} {
			if got := tok.Encode(text); !slices.Equal(got, want) {
				t.Fatalf("case %d %s: Encode(%q) = %v, want %v", i, name, text, got, want)
			}
		}
	}
}

// randomWord is a word from the training text with punctuation dropped, or a
// random run of lowercase letters (which exercises merges out of context).
func randomWord(rng *rand.Rand, words []string) string {
	if rng.IntN(3) == 0 {
		b := make([]byte, 1+rng.IntN(12))
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return string(b)
	}
	w := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' {
			return r
		}
		return -1
	}, words[rng.IntN(len(words))])
	if w == "" {
		return "x"
	}
	return w
}

// randomText mixes words, contractions, digits, whitespace, accents, CJK and
// emoji.
func randomText(rng *rand.Rand) string {
	parts := []string{"the", "Dog", "don't", "I'LL", "we've", "12", "34567", "3.14", " ", "  ", "\n", "\r\n", "\t", "\n\n", ".", "!?", "\"", "café", "e\u0301", "Straße",
		"中文", "日本語", "한국어", "Русский", "👍", "👍🏽", "👨‍👩‍👧", "🇺🇸", "\u00a0", "\u3000", "x=y+1;", "<|eos", "|>", "ĠĊ"}
	var b strings.Builder
	for range 1 + rng.IntN(25) {
		if rng.IntN(4) == 0 {
			b.WriteRune(rune(0x20 + rng.IntN(0x3000)))
			continue
		}
		b.WriteString(parts[rng.IntN(len(parts))])
	}
	return b.String()
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	gpt2, _, _ := fixture(t, fixtureOpts{})
	nfc, _, _ := fixture(t, fixtureOpts{Split: true, Normalizer: "NFC", BOS: true})
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		s := randomText(rng)
		if got := gpt2.Decode(gpt2.Encode(s)); got != s {
			t.Fatalf("case %d: gpt2 Decode(Encode(%q)) = %q", i, s, got)
		}
		if got, want := nfc.Decode(nfc.Encode(s)), norm.NFC.String(s); got != want {
			t.Fatalf("case %d: NFC Decode(Encode(%q)) = %q, want %q", i, s, got, want)
		}
	}
}

func TestNFCNormalizes(t *testing.T) {
	t.Parallel()
	nfc, _, _ := fixture(t, fixtureOpts{Split: true, Normalizer: "NFC"})
	if a, b := nfc.Encode("cafe\u0301"), nfc.Encode("caf\u00e9"); !slices.Equal(a, b) {
		t.Errorf("decomposed and composed é encode differently under NFC: %v vs %v", a, b)
	}
	raw, _, _ := fixture(t, fixtureOpts{Split: true})
	if a, b := raw.Encode("cafe\u0301"), raw.Encode("caf\u00e9"); slices.Equal(a, b) {
		t.Errorf("without a normalizer the two forms should differ, both %v", a)
	}
}

func TestSpecialTokensAndCount(t *testing.T) {
	t.Parallel()
	bos, tr, _ := fixture(t, fixtureOpts{Split: true, BOS: true})
	plain, _, _ := fixture(t, fixtureOpts{Split: true})
	if bos.specialTokens() != 1 || plain.specialTokens() != 0 {
		t.Fatalf("SpecialTokens = %d with a BOS template, %d with ByteLevel; want 1 and 0", bos.specialTokens(), plain.specialTokens())
	}
	text := "the quick brown fox"
	if got, want := bos.Count(text), len(bos.Encode(text))+1; got != want {
		t.Errorf("Count = %d, want %d", got, want)
	}
	if slices.Contains(bos.Encode(text), tr.BOS) {
		t.Errorf("Encode added the BOS id %d", tr.BOS)
	}

	// Post-processors by type.
	for _, c := range []struct {
		post string
		want int
	}{
		{`null`, 0},
		{`{"type":"ByteLevel"}`, 0},
		{`{"type":"RobertaProcessing","sep":["</s>",2],"cls":["<s>",0]}`, 2},
		{`{"type":"BertProcessing","sep":["[SEP]",2],"cls":["[CLS]",0]}`, 2},
		{`{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"</s>","type_id":0}}],"special_tokens":{"<s>":{"id":"<s>","ids":[1],"tokens":["<s>"]},"</s>":{"id":"</s>","ids":[2],"tokens":["</s>"]}}}`, 2},
		{`{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"pre","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],"special_tokens":{"pre":{"id":"pre","ids":[1,2,3],"tokens":["a","b","c"]}}}`, 3},
		{`{"type":"Sequence","processors":[{"type":"ByteLevel"},{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],"special_tokens":{"<s>":{"id":"<s>","ids":[1],"tokens":["<s>"]}}}]}`, 1},
	} {
		tok, err := Parse([]byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"post_processor":` + c.post + `}`))
		if err != nil {
			t.Fatalf("%s: %v", c.post, err)
		}
		if got := tok.specialTokens(); got != c.want {
			t.Errorf("%s: SpecialTokens = %d, want %d", c.post, got, c.want)
		}
	}
}

func TestAddedTokensMatchedWhole(t *testing.T) {
	t.Parallel()
	tok, tr, _ := fixture(t, fixtureOpts{Split: true})
	got := tok.Encode("the dog<|eos|> said<|bos|><|eos|>")
	var want []int
	want = append(want, tok.Encode("the dog")...)
	want = append(want, tr.EOS)
	want = append(want, tok.Encode(" said")...)
	want = append(want, tr.BOS, tr.EOS)
	if !slices.Equal(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
	if s := tok.Decode(got); s != "the dog<|eos|> said<|bos|><|eos|>" {
		t.Errorf("Decode = %q", s)
	}
	// A partial special token is plain text.
	if ids := tok.Encode("<|eos"); slices.Contains(ids, tr.EOS) {
		t.Errorf("Encode(%q) = %v contains the eos id", "<|eos", ids)
	}
}

func TestAddedTokenStrip(t *testing.T) {
	t.Parallel()
	doc := `{"added_tokens":[{"id":3,"content":"<m>","lstrip":true,"rstrip":true,"special":true}],
		"pre_tokenizer":{"type":"WhitespaceSplit"},
		"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}}`
	tok, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	// lstrip/rstrip: the token absorbs the spaces around it.
	if got, want := tok.Encode("ab  <m>  ab"), []int{2, 3, 2}; !slices.Equal(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
}

func TestMergeFormsAgree(t *testing.T) {
	t.Parallel()
	a, _, da := fixture(t, fixtureOpts{Split: true, MergePairs: true})
	b, _, db := fixture(t, fixtureOpts{Split: true})
	if !strings.Contains(string(da), `"merges":[["`) || strings.Contains(string(db), `"merges":[["`) {
		t.Fatal("fixtures do not use the two merge forms")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		s := randomText(rng)
		if x, y := a.Encode(s), b.Encode(s); !slices.Equal(x, y) {
			t.Fatalf("Encode(%q): pairs %v, strings %v", s, x, y)
		}
	}
}

func TestIgnoreMerges(t *testing.T) {
	t.Parallel()
	// "abc" is in the vocab but no merge reaches it; ignore_merges takes it
	// whole, otherwise the merges give "ab" "c".
	doc := func(ignore bool) string {
		ig := "false"
		if ignore {
			ig = "true"
		}
		return `{"model":{"type":"BPE","ignore_merges":` + ig + `,"vocab":{"a":0,"b":1,"c":2,"ab":3,"abc":4},"merges":["a b"]}}`
	}
	for ignore, want := range map[bool][]int{true: {4}, false: {3, 2}} {
		tok, err := Parse([]byte(doc(ignore)))
		if err != nil {
			t.Fatal(err)
		}
		if got := tok.Encode("abc"); !slices.Equal(got, want) {
			t.Errorf("ignore_merges=%v: Encode = %v, want %v", ignore, got, want)
		}
	}
}

func TestMergeRankOrder(t *testing.T) {
	t.Parallel()
	// "abc": merge "b c" (rank 0) beats "a b" (rank 1), so the result is a+bc.
	doc := `{"model":{"type":"BPE","vocab":{"a":0,"b":1,"c":2,"ab":3,"bc":4,"abc":5},"merges":["b c","a b"]}}`
	tok, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tok.Encode("abc"), []int{0, 4}; !slices.Equal(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
	// Equal pairs merge leftmost first: "aaa" -> "aa" "a".
	doc = `{"model":{"type":"BPE","vocab":{"a":0,"aa":1},"merges":["a a"]}}`
	if tok, err = Parse([]byte(doc)); err != nil {
		t.Fatal(err)
	}
	if got, want := tok.Encode("aaa"), []int{1, 0}; !slices.Equal(got, want) {
		t.Errorf("Encode(aaa) = %v, want %v", got, want)
	}
}

func TestByteFallbackMetaspace(t *testing.T) {
	t.Parallel()
	// Llama 2 style: the normalizer turns spaces into ▁ and prepends one;
	// characters outside the vocab become their UTF-8 bytes.
	vocab := `"<unk>":0,"▁":1,"h":2,"i":3,"▁h":4,"▁hi":5`
	for b := range 256 {
		vocab += `,"<0x` + strings.ToUpper(string("0123456789abcdef"[b>>4])+string("0123456789abcdef"[b&15])) + `>":` + strconv.Itoa(6+b)
	}
	doc := `{"normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"String":" "},"content":"▁"}]},
		"decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]},
		"model":{"type":"BPE","byte_fallback":true,"unk_token":"<unk>","vocab":{` + vocab + `},"merges":["▁ h","▁h i"]}}`
	tok, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	// "hi é": ▁hi, ▁, then é as bytes C3 A9.
	want := []int{5, 1, 6 + 0xC3, 6 + 0xA9}
	if got := tok.Encode("hi é"); !slices.Equal(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
	if got := tok.Decode(want); got != "hi é" {
		t.Errorf("Decode = %q", got)
	}
}

func TestPreTokenizerBehaviors(t *testing.T) {
	t.Parallel()
	matches := [][]int{{1, 2}, {3, 4}} // the two "-" in "a-b-c"
	for _, c := range []struct {
		behavior string
		invert   bool
		want     []string
	}{
		{"Isolated", false, []string{"a", "-", "b", "-", "c"}},
		{"Removed", false, []string{"a", "b", "c"}},
		{"Removed", true, []string{"-", "-"}},
		{"MergedWithPrevious", false, []string{"a-", "b-", "c"}},
		{"MergedWithNext", false, []string{"a", "-b", "-c"}},
		{"Contiguous", false, []string{"a", "-", "b", "-", "c"}},
	} {
		if got := splitPiece("a-b-c", matches, c.behavior, c.invert, nil); !slices.Equal(got, c.want) {
			t.Errorf("%s invert=%v: %q, want %q", c.behavior, c.invert, got, c.want)
		}
	}
	if got, want := splitPiece("a--b", [][]int{{1, 2}, {2, 3}}, "Contiguous", false, nil), []string{"a", "--", "b"}; !slices.Equal(got, want) {
		t.Errorf("Contiguous: %q, want %q", got, want)
	}
	if got, want := runs("ab123c4", func(r rune) bool { return r >= '0' && r <= '9' }, false), [][]int{{2, 5}, {6, 7}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("runs = %v, want %v", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, doc   string
		want        string
		unsupported bool
	}{
		{"not json", `{"model":`, "not a valid tokenizer.json", false},
		{"no model", `{"added_tokens":[]}`, `no "model"`, false},
		{"wordpiece", `{"model":{"type":"WordPiece","vocab":{"a":0}}}`, `tokenizer.json: model type "WordPiece": not supported`, true},
		{"unigram", `{"model":{"type":"Unigram","vocab":[["a",0.0]]}}`, `model type "Unigram": not supported`, true},
		{"no vocab", `{"model":{"type":"BPE","merges":[]}}`, "no vocab", false},
		{"merge unknown", `{"model":{"type":"BPE","vocab":{"a":0},"merges":["a z"]}}`, `names "z", which is not in the vocab`, false},
		{"merge result unknown", `{"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[["a","b"]]}}`, `makes "ab"`, false},
		{"merge malformed", `{"model":{"type":"BPE","vocab":{"a":0},"merges":["abc"]}}`, "not two tokens", false},
		{"merge three", `{"model":{"type":"BPE","vocab":{"a":0},"merges":[["a","a","a"]]}}`, "has 3 string parts", false},
		{"unk missing", `{"model":{"type":"BPE","unk_token":"<unk>","vocab":{"a":0},"merges":[]}}`, `unk_token "<unk>"`, false},
		{"normalizer", `{"normalizer":{"type":"BertNormalizer"},"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`, `unsupported normalizer "BertNormalizer"`, true},
		{"pre_tokenizer", `{"pre_tokenizer":{"type":"UnicodeScripts"},"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`, `unsupported pre_tokenizer "UnicodeScripts"`, true},
		{"bad regex", `{"pre_tokenizer":{"type":"Split","pattern":{"Regex":"(("},"behavior":"Isolated"},"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`, "regex", false},
		{"bad behavior", `{"pre_tokenizer":{"type":"Split","pattern":{"String":"x"},"behavior":"Sideways"},"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`, `unknown behavior "Sideways"`, false},
		{"post_processor", `{"post_processor":{"type":"Mystery"},"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`, `unsupported post_processor "Mystery"`, true},
		{"huge id", `{"model":{"type":"BPE","vocab":{"a":100000000},"merges":[]}}`, "implausibly large", false},
		{"negative id", `{"model":{"type":"BPE","vocab":{"a":-1},"merges":[]}}`, "negative id", false},
		{"dropout", `{"model":{"type":"BPE","dropout":0.1,"vocab":{"a":0},"merges":[]}}`, "dropout", true},
	} {
		_, err := Parse([]byte(c.doc))
		if err == nil {
			t.Errorf("%s: Parse succeeded", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not contain %q", c.name, err, c.want)
		}
		if errors.Is(err, errUnsupported) != c.unsupported {
			t.Errorf("%s: errors.Is(ErrUnsupported) = %v, want %v (%v)", c.name, !c.unsupported, c.unsupported, err)
		}
	}
}

func TestLoadNamesFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, _, data := fixture(t, fixtureOpts{Split: true, BOS: true})
	writeFile(t, dir+"/m/tokenizer.json", data)
	for _, p := range []string{dir + "/m", dir + "/m/tokenizer.json"} {
		tok, err := Load(p)
		if err != nil {
			t.Fatalf("Load(%s): %v", p, err)
		}
		if tok.specialTokens() != 1 {
			t.Errorf("Load(%s): SpecialTokens = %d", p, tok.specialTokens())
		}
	}
	writeFile(t, dir+"/bad/tokenizer.json", []byte(`{"model":{"type":"WordPiece","vocab":{}}}`))
	if _, err := Load(dir + "/bad"); err == nil || !strings.Contains(err.Error(), dir+"/bad/tokenizer.json") {
		t.Errorf("Load of a WordPiece file: %v, want an error naming the file", err)
	}
	if _, err := Load(dir + "/none"); err == nil {
		t.Error("Load of a missing path succeeded")
	}
}

func TestConcurrentEncode(t *testing.T) {
	t.Parallel()
	tok, _, _ := fixture(t, fixtureOpts{Split: true})
	ref, _, _ := fixture(t, fixtureOpts{Split: true})
	rng := rand.New(rand.NewPCG(7, 8))
	texts := make([]string, 200)
	for i := range texts {
		texts[i] = randomText(rng)
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(texts)*4)
	for g := range 4 {
		wg.Go(func() {
			for i := range texts {
				s := texts[(i+g*50)%len(texts)]
				if got, want := tok.Encode(s), ref.Encode(s); !slices.Equal(got, want) {
					errs <- s
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for s := range errs {
		t.Errorf("concurrent Encode(%q) differs from a fresh tokenizer's", s)
	}
}

func TestInvalidUTF8(t *testing.T) {
	t.Parallel()
	tok, _, _ := fixture(t, fixtureOpts{})
	// A JSON client sends each bad byte as U+FFFD.
	if got, want := tok.Encode("a\xff\xfeb"), tok.Encode("a\uFFFD\uFFFDb"); !slices.Equal(got, want) {
		t.Errorf("Encode(a\\xff\\xfeb) = %v, want %v", got, want)
	}
	if !utf8.ValidString(tok.Decode(tok.Encode("a\xffb"))) {
		t.Error("Decode returned invalid UTF-8")
	}
}

func TestLoadReadsConfig(t *testing.T) {
	t.Parallel()
	_, _, plain := fixture(t, fixtureOpts{Split: true}) // ByteLevel post-processor: 0 special tokens
	for _, c := range []struct {
		name, config string
		want         int
	}{
		{"none", "", 0},
		{"llama bos", `{"tokenizer_class":"LlamaTokenizerFast","add_bos_token":true,"add_eos_token":false,"bos_token":{"content":"<|bos|>"}}`, 1},
		{"llama default bos", `{"tokenizer_class":"LlamaTokenizerFast","bos_token":"<|bos|>"}`, 1},
		{"llama bos and eos", `{"tokenizer_class":"LlamaTokenizer","add_eos_token":true,"bos_token":"<|bos|>","eos_token":"<|eos|>"}`, 2},
		{"llama no bos token", `{"tokenizer_class":"LlamaTokenizerFast","add_bos_token":true,"bos_token":null}`, 0},
		{"qwen", `{"tokenizer_class":"Qwen2Tokenizer","add_bos_token":true,"bos_token":"<|bos|>"}`, 0},
	} {
		dir := t.TempDir()
		writeFile(t, dir+"/tokenizer.json", plain)
		if c.config != "" {
			writeFile(t, dir+"/tokenizer_config.json", []byte(c.config))
		}
		tok, err := Load(dir)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := tok.specialTokens(); got != c.want {
			t.Errorf("%s: SpecialTokens = %d, want %d", c.name, got, c.want)
		}
	}
	dir := t.TempDir()
	writeFile(t, dir+"/tokenizer.json", plain)
	writeFile(t, dir+"/tokenizer_config.json", []byte(`{"tokenizer_class":`))
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "tokenizer_config.json") {
		t.Errorf("bad config: %v, want an error naming tokenizer_config.json", err)
	}
}

func TestMetaspacePrependScheme(t *testing.T) {
	t.Parallel()
	doc := func(scheme string) string {
		return `{"added_tokens":[{"id":9,"content":"<s>","special":true}],
			"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"` + scheme + `","split":true},
			"model":{"type":"BPE","vocab":{"▁":0,"h":1,"i":2,"t":3,"e":4,"r":5,"▁h":6,"▁hi":7,"hi":8},"merges":["▁ h","▁h i","h i"]}}`
	}
	// "hi there" becomes "▁hi▁there", split before each ▁; "there" has no
	// merges. After <s>, "first" adds no ▁ (that text does not start the
	// input), "always" does.
	there := []int{0, 3, 1, 4, 5, 4}
	for scheme, tail := range map[string][]int{"first": {8}, "always": {7}, "never": {8}} {
		tok, err := Parse([]byte(doc(scheme)))
		if err != nil {
			t.Fatal(err)
		}
		head := []int{7}
		if scheme == "never" {
			head = []int{8}
		}
		want := slices.Concat(head, there, []int{9}, tail)
		if got := tok.Encode("hi there<s>hi"); !slices.Equal(got, want) {
			t.Errorf("%s: Encode = %v, want %v", scheme, got, want)
		}
	}
}

// TestPreTokenizerBoundaries checks where pre-tokenizers cut, through merges
// that would join across a cut: "1 2" and ". |" merge only within a piece.
func TestPreTokenizerBoundaries(t *testing.T) {
	t.Parallel()
	vocab := `{"1":0,"2":1,"12":2,".":3,"|":4,".|":5,"a":6,"a.":7}`
	merges := `["1 2",". |","a ."]`
	for _, c := range []struct {
		pre  string
		text string
		want []int
	}{
		{`{"type":"Digits","individual_digits":true}`, "12", []int{0, 1}},
		{`{"type":"Digits","individual_digits":false}`, "12", []int{2}},
		{`{"type":"Digits","individual_digits":false}`, "a12a", []int{6, 2, 6}},
		// A String pattern is literal: "." is not "any character".
		{`{"type":"Split","pattern":{"String":"."},"behavior":"Isolated","invert":false}`, "a.|", []int{6, 3, 4}},
		{`{"type":"Split","pattern":{"String":"."},"behavior":"MergedWithPrevious","invert":false}`, "a.|", []int{7, 4}},
		{`{"type":"Split","pattern":{"String":"."},"behavior":"MergedWithNext","invert":false}`, "a.|", []int{6, 5}},
		{`{"type":"Split","pattern":{"String":"|"},"behavior":"Removed","invert":false}`, "1|2", []int{0, 1}},
		{`{"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},{"type":"Digits","individual_digits":true}]}`, " 12  a. ", []int{0, 1, 7}},
		{`{"type":"Punctuation","behavior":"Isolated"}`, "a.|", []int{6, 3, 4}},
	} {
		tok, err := Parse([]byte(`{"pre_tokenizer":` + c.pre + `,"model":{"type":"BPE","vocab":` + vocab + `,"merges":` + merges + `}}`))
		if err != nil {
			t.Fatalf("%s: %v", c.pre, err)
		}
		if got := tok.Encode(c.text); !slices.Equal(got, c.want) {
			t.Errorf("%s: Encode(%q) = %v, want %v", c.pre, c.text, got, c.want)
		}
	}
}
