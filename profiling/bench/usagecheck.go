package bench

import (
	"fmt"
	"strings"
)

// checkUsage compares the usage frame's figures with what was streamed and
// asked for, before the output tokens are shared out among the frames:
// total is usage.completion_tokens (meaningful when o.UsageOutput), text
// and empty the frames that carried text and those that carried none (a
// detokenizer holding a token back), textBytes the bytes of text they
// carried. Every frame with text carries at least one token, every token
// at least one byte of text (or an empty frame), and a server stops at
// max_tokens (a speculative step may pass it by a few); a figure outside
// that, or a negative one, is the server's bug, and taken at its word it
// turns into negative throughputs or ones of 10¹⁰ tokens a second. Such a
// figure is dropped as if the server had sent none (the frames are counted
// instead), a prompt figure is replaced by the requested length, and the
// reason is kept. It returns the total to share out (-1: none).
func (o *output) checkUsage(total, text, empty, textBytes int) int {
	var why []string
	if !o.UsageOutput {
		total = -1
	} else if w := implausibleOutput(total, text, text+empty, textBytes+empty, o.MaxTokens); w != "" {
		why = append(why, w)
		o.UsageOutput, total = false, -1
	}
	// A chat template or a BOS adds a few tokens, a word-shaped prompt
	// a few per word: eight times the request and 4096 more is no count.
	switch {
	case o.UsagePrompt && o.PromptTokens < 0:
		why = append(why, fmt.Sprintf("usage.prompt_tokens %d is negative", o.PromptTokens))
		o.PromptTokens, o.UsagePrompt = o.PromptLen, false
	case o.UsagePrompt && o.PromptLen > 0 && o.PromptTokens > 8*o.PromptLen+4096:
		why = append(why, fmt.Sprintf("usage.prompt_tokens %d for a prompt of about %d tokens", o.PromptTokens, o.PromptLen))
		o.PromptTokens, o.UsagePrompt = o.PromptLen, false
	}
	o.UsageRejected = strings.Join(why, "; ")
	return total
}

// usageSlack is how many tokens a stream may hold beyond what its text
// shows: special tokens with no text (an end of sequence, a reasoning
// model's markers).
const usageSlack = 16

// implausibleOutput says what is wrong with usage.completion_tokens total
// for a stream of frames (text of them with text) that can carry at most
// most tokens (one a byte of text, one an empty frame), asked for
// maxTokens, "" when nothing is.
func implausibleOutput(total, text, frames, most, maxTokens int) string {
	switch {
	case total < 0:
		return fmt.Sprintf("usage.completion_tokens %d is negative", total)
	case total > 2*max(maxTokens, frames)+usageSlack:
		return fmt.Sprintf("usage.completion_tokens %d for max_tokens %d and %d token frames streamed", total, maxTokens, frames)
	case total > most+usageSlack:
		return fmt.Sprintf("usage.completion_tokens %d for %d token frames streamed that hold %d bytes of text: more tokens than the stream can carry", total, frames, most-(frames-text))
	case total < text:
		return fmt.Sprintf("usage.completion_tokens %d below the %d frames with text streamed", total, text)
	}
	return ""
}
