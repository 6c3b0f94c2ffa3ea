package tokenizer

import (
	"strings"
	"testing"

	"github.com/profile-model/profile-model/profiling/tokenizer/tokenizertest"
)

// FuzzParse feeds arbitrary bytes to Parse and encodes a little text with
// whatever parses: neither may panic.
func FuzzParse(f *testing.F) {
	tr := tokenizertest.Train(tokenizertest.TrainText, 40)
	for _, o := range []fixtureOpts{{}, {Split: true, MergePairs: true, BOS: true, Normalizer: "NFC"}} {
		data, err := tr.JSON(o)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]},"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"first"}}`))
	f.Add([]byte(`{"model":{"type":"BPE","byte_fallback":true,"unk_token":"u","fuse_unk":true,"vocab":{"u":0,"<0x61>":1},"merges":[]},"pre_tokenizer":{"type":"Digits","individual_digits":true}}`))
	f.Add([]byte(`{"added_tokens":[{"id":5,"content":"x","lstrip":true,"rstrip":true,"single_word":true}],"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"pre_tokenizer":{"type":"Split","pattern":{"String":""},"behavior":"MergedWithNext","invert":true}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := Parse(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		for _, s := range []string{"", "hello world", "a  b\n\n12345 don't", "x\xffa", "👍🏽 中文"} {
			ids := tok.Encode(s)
			if tok.Count(s) != len(ids)+tok.specialTokens() {
				t.Fatalf("Count(%q) != len(Encode)+SpecialTokens", s)
			}
			_ = tok.Decode(ids)
		}
	})
}

// FuzzEncode checks Encode on arbitrary text with the generated GPT-2 style
// fixture: no panic, and Decode gives the text back (with bad UTF-8 replaced
// as a JSON client would send it).
func FuzzEncode(f *testing.F) {
	tok, _, _ := fixture(f, fixtureOpts{})
	for _, s := range []string{"", "the quick brown fox", "don't I'LL 12345", "a  \n\n b\t", "👨‍👩‍👧 🇺🇸", "<|eos|>x<|bos|>", "\xff\xfe", strings.Repeat(" ", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := string([]rune(s)) // each bad byte becomes U+FFFD
		if got := tok.Decode(tok.Encode(s)); got != want {
			t.Fatalf("Decode(Encode(%q)) = %q", s, got)
		}
	})
}
