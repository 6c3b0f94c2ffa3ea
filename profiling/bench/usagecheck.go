package bench

import (
	"fmt"
	"strings"
)

// checkUsage compares the usage frame's figures with what was streamed and
// asked for, before the output tokens are shared out among the frames:
// total is usage.completion_tokens (-1 without), text and empty the frames
// that carried text and those that carried none (a detokenizer holding a
// token back). Every frame with text carries at least one token, and a
// server stops at max_tokens (a speculative step may pass it by a few); a
// figure outside that is the server's bug, and taken at its word it turns
// into throughputs of 10¹⁰ tokens a second. Such a figure is dropped as if
// the server had sent none (the frames are counted instead), a prompt
// figure is replaced by the requested length, and the reason is kept. It
// returns the total to share out.
func (o *Output) checkUsage(total, text, empty int) int {
	var why []string
	if total >= 0 {
		if w := implausibleOutput(total, text, text+empty, o.MaxTokens); w != "" {
			why = append(why, w)
			o.UsageOutput, total = false, -1
		}
	}
	// A chat template or a BOS adds a few tokens, a word-shaped prompt
	// a few per word: eight times the request and 4096 more is no count.
	if o.UsagePrompt && o.PromptLen > 0 && o.PromptTokens > 8*o.PromptLen+4096 {
		why = append(why, fmt.Sprintf("usage.prompt_tokens %d for a prompt of about %d tokens", o.PromptTokens, o.PromptLen))
		o.PromptTokens, o.UsagePrompt = o.PromptLen, false
	}
	o.UsageRejected = strings.Join(why, "; ")
	return total
}

// implausibleOutput says what is wrong with usage.completion_tokens total
// for a stream of text frames with text (frames in all) asked for
// maxTokens, "" when nothing is.
func implausibleOutput(total, text, frames, maxTokens int) string {
	switch {
	case total > 2*max(maxTokens, frames)+16:
		return fmt.Sprintf("usage.completion_tokens %d for max_tokens %d and %d token frames streamed", total, maxTokens, frames)
	case total < text:
		return fmt.Sprintf("usage.completion_tokens %d below the %d frames with text streamed", total, text)
	}
	return ""
}
