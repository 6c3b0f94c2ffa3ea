package sim

import (
	"strconv"
	"unicode/utf8"
)

// ATOM builds its SSE frames with Python's json.dumps defaults: ", " and ": "
// separators and ASCII-only strings. The frames here are byte-for-byte that
// shape, assembled from per-request prefixes so that the per-token cost is
// a few appends.

// appendPyString appends s as json.dumps(s) writes it (ensure_ascii=True).
func appendPyString(b []byte, s string) []byte {
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
		case r < 0x20 || (r >= 0x7f && r < 0x10000):
			b = append(b, '\\', 'u', hex[r>>12&15], hex[r>>8&15], hex[r>>4&15], hex[r&15])
		case r >= 0x10000:
			r1, r2 := utf16Surrogates(r)
			b = append(b, '\\', 'u', hex[r1>>12&15], hex[r1>>8&15], hex[r1>>4&15], hex[r1&15])
			b = append(b, '\\', 'u', hex[r2>>12&15], hex[r2>>8&15], hex[r2>>4&15], hex[r2&15])
		default:
			b = append(b, byte(r))
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

// frameMaker writes the SSE frames of one streamed request.
type frameMaker struct {
	chat bool
	head []byte // `data: {"id": ..., "model": ..., ` shared by every frame
	// choice is head plus the start of the choices list, up to the text or delta.
	choice []byte
}

func newFrameMaker(chat bool, id string, created int64, model string) *frameMaker {
	object := "text_completion"
	if chat {
		object = "chat.completion.chunk"
	}
	h := []byte(`data: {"id": `)
	h = appendPyString(h, id)
	h = append(h, `, "object": `...)
	h = appendPyString(h, object)
	h = append(h, `, "created": `...)
	h = strconv.AppendInt(h, created, 10)
	h = append(h, `, "model": `...)
	h = appendPyString(h, model)
	c := append([]byte(nil), h...)
	if chat {
		c = append(c, `, "choices": [{"index": 0, "delta": `...)
	} else {
		c = append(c, `, "choices": [{"index": 0, "text": `...)
	}
	return &frameMaker{chat: chat, head: h, choice: c}
}

// appendDelta appends one choice frame with text and finish reason ("" = null).
func (f *frameMaker) appendDelta(b []byte, text, finish string) []byte {
	b = append(b, f.choice...)
	if f.chat {
		if text == "" {
			b = append(b, "{}"...)
		} else {
			b = append(b, `{"content": `...)
			b = appendPyString(b, text)
			b = append(b, '}')
		}
	} else {
		b = appendPyString(b, text)
	}
	b = append(b, `, "finish_reason": `...)
	if finish == "" {
		b = append(b, "null"...)
	} else {
		b = appendPyString(b, finish)
	}
	return append(b, ", \"logprobs\": null}]}\n\n"...)
}

// appendUsage appends the usage-only frame (no choices key, as ATOM sends it).
func (f *frameMaker) appendUsage(b []byte, prompt, completion int) []byte {
	b = append(b, f.head...)
	b = append(b, `, "usage": {"prompt_tokens": `...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `, "completion_tokens": `...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, `, "total_tokens": `...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	return append(b, "}}\n\n"...)
}

const doneFrame = "data: [DONE]\n\n"

// appendStreamError appends the in-stream error frame of a failed request.
func appendStreamError(b []byte, msg string) []byte {
	b = append(b, `data: {"error": {"message": `...)
	b = appendPyString(b, msg)
	return append(b, `, "type": "InternalServerError", "code": 500}}`+"\n\n"...)
}
