package tokenizer

import (
	"os"
	"slices"
	"testing"

	"github.com/go-json-experiment/json"
)

// TestCrossCheck compares Encode and Count on a real tokenizer.json with ids
// produced by another implementation of Hugging Face tokenizers. Both files
// come from the environment, so the test needs nothing downloaded:
//
//	PROFILE_MODEL_TOKENIZER=path/to/tokenizer.json (or its directory)
//	PROFILE_MODEL_TOKENIZER_EXPECT=expect.json, {"cases": [{"text", "ids", "count"}]}
//
// where ids are without special tokens and count is with them.
func TestCrossCheck(t *testing.T) {
	path, expectPath := os.Getenv("PROFILE_MODEL_TOKENIZER"), os.Getenv("PROFILE_MODEL_TOKENIZER_EXPECT")
	if path == "" || expectPath == "" {
		t.Skip("set PROFILE_MODEL_TOKENIZER and PROFILE_MODEL_TOKENIZER_EXPECT to cross-check a real tokenizer against expected ids")
	}
	tok, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(expectPath)
	if err != nil {
		t.Fatal(err)
	}
	var expect struct {
		Cases []struct {
			Text  string `json:"text"`
			IDs   []int  `json:"ids"`
			Count int    `json:"count"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &expect); err != nil {
		t.Fatalf("%s: %v", expectPath, err)
	}
	if len(expect.Cases) == 0 {
		t.Fatalf("%s has no cases", expectPath)
	}
	idMismatch, countMismatch, decodeDiffers := 0, 0, 0
	for i, c := range expect.Cases {
		got := tok.Encode(c.Text)
		if !slices.Equal(got, c.IDs) {
			idMismatch++
			if idMismatch <= 5 {
				t.Errorf("case %d %q:\n got  %v\n want %v", i, c.Text, got, c.IDs)
			}
		}
		if tok.Decode(got) != c.Text {
			decodeDiffers++ // reported only: Decode is for debugging, and normalizers change text
		}
		if n := tok.Count(c.Text); n != c.Count {
			countMismatch++
			if countMismatch <= 5 {
				t.Errorf("case %d %q: Count = %d, want %d", i, c.Text, n, c.Count)
			}
		}
	}
	t.Logf("%s: %d strings, %d id mismatches, %d count mismatches (%d special tokens); Decode(Encode(s)) != s for %d",
		path, len(expect.Cases), idMismatch, countMismatch, tok.specialTokens(), decodeDiffers)
}
