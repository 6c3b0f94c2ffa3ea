package sim

import "hash/fnv"

// bytesPerToken is how many bytes of a word one stand-in token covers.
const bytesPerToken = 8

// CountTokens counts the prompt tokens of text with the stand-in tokenizer
// the server uses unless Config.Tokenizer is set: deterministic, without a
// vocabulary. A token is a run of up to 8 bytes of a whitespace-separated
// word, so a word of 1–8 bytes is one token and a 20-byte word is three
// (ceil(len/8)); whitespace is ASCII space, tab, CR and LF; an empty prompt
// counts as one token. A chat request counts each message as "ROLE CONTENT"
// (the role is one more word). A client hits a prompt length of N tokens by
// sending N short words, or calibrates from usage.prompt_tokens.
//
// With Config.Tokenizer prompts are counted by that tokenizer instead,
// special tokens included, and a chat request is rendered with a ChatML
// template ("<|im_start|>ROLE\nCONTENT<|im_end|>\n" per message, then
// "<|im_start|>assistant\n") before it is counted.
func CountTokens(text string) int {
	n, word := 0, 0
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case ' ', '\t', '\n', '\r':
			n += (word + bytesPerToken - 1) / bytesPerToken
			word = 0
		default:
			word++
		}
	}
	n += (word + bytesPerToken - 1) / bytesPerToken
	if n == 0 {
		return 1
	}
	return n
}

// vocabulary holds the output words; each is one stand-in token and needs
// no JSON escaping.
var vocabulary = [...]string{
	" the", " of", " and", " to", " in", " a", " is", " that",
	" for", " it", " as", " with", " was", " on", " be", " by",
	" kernel", " layer", " token", " batch", " step", " graph", " decode", " expert",
}

// tokenText is the text of output token i of the request with sequence number seq.
func tokenText(seq uint64, i int) string {
	return vocabulary[(seq*7+uint64(i))%uint64(len(vocabulary))]
}

// eosLength is where a request without ignore_eos meets its simulated
// end-of-sequence token.
func eosLength(prompt string) int {
	h := fnv.New32a()
	h.Write([]byte(prompt))
	return 16 + int(h.Sum32()%241)
}
