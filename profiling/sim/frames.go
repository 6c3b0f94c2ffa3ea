package sim

import (
	"strconv"
	"unicode/utf8"
)

// Release is the ATOM release whose wire format the simulated server speaks.
type Release string

const (
	// ReleaseCurrent is ATOM as it ships in mid-2026: compact JSON frames
	// (no spaces after separators, UTF-8 not escaped), the raw finish
	// reason on the last content frame, a usage frame with "choices": [],
	// a chat role frame {"role":"assistant","content":""} before the first
	// token, prompt_tokens_details.cached_tokens in chat usage, and
	// /stop_profile listing {"trace_dir","elapsed"} objects.
	ReleaseCurrent Release = "current"
	// ReleaseLegacy is ATOM of early 2026: Python json.dumps spacing and
	// ASCII-only strings, finish reasons "length"/"stop", a usage frame with
	// no choices key, an empty-delta chat frame before anything else, and
	// /stop_profile listing trace directories as strings.
	ReleaseLegacy Release = "legacy"
)

// ParseRelease reads a --atom-release value ("" is current).
func ParseRelease(s string) (Release, bool) {
	switch Release(s) {
	case "", ReleaseCurrent:
		return ReleaseCurrent, true
	case ReleaseLegacy:
		return ReleaseLegacy, true
	}
	return "", false
}

// appendJSONString appends s as Python's json.dumps writes it: with
// ensure_ascii (legacy frames) every non-ASCII rune is a \u escape, without
// it (current frames) UTF-8 passes through.
func appendJSONString(b []byte, s string, ascii bool) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"':
			b = append(b, '\\', '"')
		case r == '\\':
			b = append(b, '\\', '\\')
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r == '\b':
			b = append(b, '\\', 'b')
		case r == '\f':
			b = append(b, '\\', 'f')
		case r < 0x20 || (ascii && r >= 0x7f && r < 0x10000):
			b = append(b, '\\', 'u', hex[r>>12&15], hex[r>>8&15], hex[r>>4&15], hex[r&15])
		case ascii && r >= 0x10000:
			r1, r2 := utf16Surrogates(r)
			b = append(b, '\\', 'u', hex[r1>>12&15], hex[r1>>8&15], hex[r1>>4&15], hex[r1&15])
			b = append(b, '\\', 'u', hex[r2>>12&15], hex[r2>>8&15], hex[r2>>4&15], hex[r2&15])
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}

func utf16Surrogates(r rune) (rune, rune) {
	if r > utf8.MaxRune {
		r = utf8.RuneError
	}
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

// frameMaker writes the SSE frames of one streamed request in one
// release's format, assembled from per-request prefixes so that the
// per-token cost is a few appends.
type frameMaker struct {
	rel  Release
	chat bool
	kv   string // separator between a key and its value: ": " or ":"
	item string // separator between items: ", " or ","
	// head is `data: {"id": ..., "model": ...` shared by every frame;
	// choice continues it up to the text or delta.
	head, choice []byte
}

func newFrameMaker(rel Release, chat bool, id string, created int64, model string) *frameMaker {
	f := &frameMaker{rel: rel, chat: chat, kv: ": ", item: ", "}
	if rel == ReleaseCurrent {
		f.kv, f.item = ":", ","
	}
	object := "text_completion"
	if chat {
		object = "chat.completion.chunk"
	}
	h := []byte(`data: {"id"` + f.kv)
	h = f.str(h, id)
	h = append(h, f.item+`"object"`+f.kv...)
	h = f.str(h, object)
	h = append(h, f.item+`"created"`+f.kv...)
	h = strconv.AppendInt(h, created, 10)
	h = append(h, f.item+`"model"`+f.kv...)
	h = f.str(h, model)
	c := append([]byte(nil), h...)
	c = append(c, f.item+`"choices"`+f.kv+`[{"index"`+f.kv+`0`+f.item...)
	if chat {
		c = append(c, `"delta"`+f.kv...)
	} else {
		c = append(c, `"text"`+f.kv...)
	}
	f.head, f.choice = h, c
	return f
}

func (f *frameMaker) str(b []byte, s string) []byte {
	return appendJSONString(b, s, f.rel == ReleaseLegacy)
}

// appendOpen appends what a chat stream sends before its first token:
// legacy releases an empty delta at once, current ones a role frame when
// the first token is ready (opensEarly says which).
func (f *frameMaker) appendOpen(b []byte) []byte {
	if f.rel == ReleaseLegacy {
		return f.appendChoice(b, "", false, "")
	}
	b = append(b, f.choice...)
	b = append(b, `{"role"`+f.kv+`"assistant"`+f.item+`"content"`+f.kv+`""}`...)
	return f.endChoice(b, "")
}

// opensEarly: the chat opening frame goes out before the first token.
func (f *frameMaker) opensEarly() bool { return f.rel == ReleaseLegacy }

// appendChoice appends one choice frame with text (as reasoning_content in
// a chat stream when reasoning) and a finish reason ("" = null).
func (f *frameMaker) appendChoice(b []byte, text string, reasoning bool, finish string) []byte {
	b = append(b, f.choice...)
	switch {
	case !f.chat:
		b = f.str(b, text)
	case text == "" && !reasoning:
		b = append(b, "{}"...)
	case reasoning:
		b = append(b, `{"reasoning_content"`+f.kv...)
		b = f.str(b, text)
		b = append(b, '}')
	default:
		b = append(b, `{"content"`+f.kv...)
		b = f.str(b, text)
		b = append(b, '}')
	}
	return f.endChoice(b, finish)
}

func (f *frameMaker) endChoice(b []byte, finish string) []byte {
	b = append(b, f.item+`"finish_reason"`+f.kv...)
	if finish == "" {
		b = append(b, "null"...)
	} else {
		b = f.str(b, finish)
	}
	return append(b, f.item+`"logprobs"`+f.kv+"null}]}\n\n"...)
}

// appendUsage appends the usage frame: legacy without a choices key,
// current with "choices": [] and, for chat, the cached prompt tokens.
func (f *frameMaker) appendUsage(b []byte, prompt, completion, cached int) []byte {
	b = append(b, f.head...)
	if f.rel == ReleaseCurrent {
		b = append(b, f.item+`"choices"`+f.kv+`[]`...)
	}
	b = append(b, f.item+`"usage"`+f.kv+`{"prompt_tokens"`+f.kv...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, f.item+`"completion_tokens"`+f.kv...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, f.item+`"total_tokens"`+f.kv...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	if f.rel == ReleaseCurrent && f.chat {
		b = append(b, f.item+`"prompt_tokens_details"`+f.kv+`{"cached_tokens"`+f.kv...)
		b = strconv.AppendInt(b, int64(cached), 10)
		b = append(b, '}')
	}
	return append(b, "}}\n\n"...)
}

// finishReason is the finish reason the last content frame carries:
// current releases pass the engine's raw reason through, legacy ones said
// "length" or "stop".
func (f *frameMaker) finishReason(maxTokens bool) string {
	switch {
	case f.rel == ReleaseLegacy && maxTokens:
		return "length"
	case f.rel == ReleaseLegacy:
		return "stop"
	case maxTokens:
		return "max_tokens"
	default:
		return "eos"
	}
}

// lastContentFinish: a current chat stream's content frames carry no
// finish reason (only the closing frame does).
func (f *frameMaker) lastContentFinish(maxTokens bool) string {
	if f.chat && f.rel == ReleaseCurrent {
		return ""
	}
	return f.finishReason(maxTokens)
}

const doneFrame = "data: [DONE]\n\n"

// appendStreamError appends the in-stream error frame of a failed request.
func (f *frameMaker) appendStreamError(b []byte, msg string) []byte {
	b = append(b, `data: {"error"`+f.kv+`{"message"`+f.kv...)
	b = f.str(b, msg)
	return append(b, f.item+`"type"`+f.kv+`"InternalServerError"`+f.item+`"code"`+f.kv+`500}}`+"\n\n"...)
}
