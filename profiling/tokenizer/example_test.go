package tokenizer_test

import (
	"fmt"

	"github.com/profile-model/profile-model/profiling/tokenizer"
	"github.com/profile-model/profile-model/profiling/tokenizer/tokenizertest"
)

// Parse reads a tokenizer.json (here a small byte-level BPE trained on a few
// words, with a post-processor that adds a BOS token); Count is what a
// server reports as usage.prompt_tokens for that prompt.
func ExampleParse() {
	data, err := tokenizertest.Train("the cat sat on the mat, the cat sat", 20).JSON(tokenizertest.Options{BOS: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	tok, err := tokenizer.Parse(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	ids := tok.Encode("the cat sat")
	fmt.Println("tokens:", len(ids), "decoded:", tok.Decode(ids))

	var c tokenizer.Counter = tok // what the bench client and the simulated engine take
	fmt.Println("prompt tokens:", c.Count("the cat sat"), "(with the BOS)")
	// Output:
	// tokens: 3 decoded: the cat sat
	// prompt tokens: 4 (with the BOS)
}
