package sim

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

func TestJSONString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, ascii, utf8 string
	}{
		{"plain", `"plain"`, `"plain"`},
		{`q"b\`, `"q\"b\\"`, `"q\"b\\"`},
		{"tab\tnl\ncr\r", `"tab\tnl\ncr\r"`, `"tab\tnl\ncr\r"`},
		{"\x01\x7f", `"\u0001\u007f"`, "\"\\u0001\x7f\""}, // DEL is escaped only with ensure_ascii
		{"é", `"\u00e9"`, `"é"`},
		{"😀", `"\ud83d\ude00"`, `"😀"`}, // json.dumps writes a surrogate pair with ensure_ascii
	}
	for _, tc := range tests {
		require.Equal(t, tc.ascii, string(appendJSONString(nil, tc.in, true)), "ascii %q", tc.in)
		require.Equal(t, tc.utf8, string(appendJSONString(nil, tc.in, false)), "utf-8 %q", tc.in)
	}
}

// FuzzJSONString: every string becomes JSON that decodes back to it
// (invalid UTF-8 decodes to U+FFFD, as Go reads it); with ensure_ascii the
// JSON is printable ASCII.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "a b", "\"\\", "é😀", "\xff", "\x00\x1f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := string([]rune(s)) // one U+FFFD per bad byte, as Go's range yields
		for _, ascii := range []bool{true, false} {
			b := appendJSONString(nil, s, ascii)
			for _, c := range b {
				if ascii && (c < 0x20 || c > 0x7e) {
					t.Fatalf("non-printable-ASCII byte %#x in %q", c, b)
				}
			}
			var back string
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("%q: %v", b, err)
			}
			if back != want {
				t.Fatalf("ascii=%v: %q round-trips to %q, want %q", ascii, s, back, want)
			}
		}
		_ = utf8.ValidString(s)
	})
}

// TestStreamConformance: the bytes of whole streams in both releases'
// formats, written out by hand from ATOM's serving code: legacy frames with
// json.dumps spacing, current compact ones with the raw finish reason, the
// "choices": [] usage frame, the chat role frame and cached tokens.
func TestStreamConformance(t *testing.T) {
	t.Parallel()
	type req struct {
		chat bool
		body map[string]any
	}
	completion := map[string]any{"model": "m", "prompt": "hi", "max_tokens": 3, "ignore_eos": true, "stream": true}
	chatBody := map[string]any{"model": "m", "messages": []map[string]string{{"role": "user", "content": "hi"}}, "max_tokens": 3, "ignore_eos": true, "stream": true}
	// Frames with %[1]s the id, %[2]s .. %[4]s the three tokens' texts,
	// %[5]d the prompt tokens, %[6]d prompt+3.
	cases := []struct {
		name string
		cfg  Config
		req  req
		want []string
	}{
		{"legacy completion", Config{Release: ReleaseLegacy}, req{false, completion}, []string{
			`{"id": "%[1]s", "object": "text_completion", "created": 1700000000, "model": "m", "choices": [{"index": 0, "text": "%[2]s", "finish_reason": null, "logprobs": null}]}`,
			`{"id": "%[1]s", "object": "text_completion", "created": 1700000000, "model": "m", "choices": [{"index": 0, "text": "%[3]s", "finish_reason": null, "logprobs": null}]}`,
			`{"id": "%[1]s", "object": "text_completion", "created": 1700000000, "model": "m", "choices": [{"index": 0, "text": "%[4]s", "finish_reason": "length", "logprobs": null}]}`,
			`{"id": "%[1]s", "object": "text_completion", "created": 1700000000, "model": "m", "choices": [{"index": 0, "text": "", "finish_reason": "stop", "logprobs": null}]}`,
			`{"id": "%[1]s", "object": "text_completion", "created": 1700000000, "model": "m", "usage": {"prompt_tokens": %[5]d, "completion_tokens": 3, "total_tokens": %[6]d}}`,
			`[DONE]`,
		}},
		{"current completion", Config{}, req{false, completion}, []string{
			`{"id":"%[1]s","object":"text_completion","created":1700000000,"model":"m","choices":[{"index":0,"text":"%[2]s","finish_reason":null,"logprobs":null}]}`,
			`{"id":"%[1]s","object":"text_completion","created":1700000000,"model":"m","choices":[{"index":0,"text":"%[3]s","finish_reason":null,"logprobs":null}]}`,
			`{"id":"%[1]s","object":"text_completion","created":1700000000,"model":"m","choices":[{"index":0,"text":"%[4]s","finish_reason":"max_tokens","logprobs":null}]}`,
			`{"id":"%[1]s","object":"text_completion","created":1700000000,"model":"m","choices":[{"index":0,"text":"","finish_reason":"stop","logprobs":null}]}`,
			`{"id":"%[1]s","object":"text_completion","created":1700000000,"model":"m","choices":[],"usage":{"prompt_tokens":%[5]d,"completion_tokens":3,"total_tokens":%[6]d}}`,
			`[DONE]`,
		}},
		{"current completion, frames of two tokens", Config{MergeFrames: 2}, req{false, completion}, []string{
			`{"id":"%[1]s","object":"text_completion","created":1700000000,"model":"m","choices":[{"index":0,"text":"%[2]s%[3]s","finish_reason":null,"logprobs":null}]}`,
			`{"id":"%[1]s","object":"text_completion","created":1700000000,"model":"m","choices":[{"index":0,"text":"%[4]s","finish_reason":"max_tokens","logprobs":null}]}`,
			`{"id":"%[1]s","object":"text_completion","created":1700000000,"model":"m","choices":[{"index":0,"text":"","finish_reason":"stop","logprobs":null}]}`,
			`{"id":"%[1]s","object":"text_completion","created":1700000000,"model":"m","choices":[],"usage":{"prompt_tokens":%[5]d,"completion_tokens":3,"total_tokens":%[6]d}}`,
			`[DONE]`,
		}},
		{"current completion, a token split inside a character", Config{EmptyTokenEvery: 2}, req{false, completion}, []string{
			`{"id":"%[1]s","object":"text_completion","created":1700000000,"model":"m","choices":[{"index":0,"text":"%[2]s","finish_reason":null,"logprobs":null}]}`,
			`{"id":"%[1]s","object":"text_completion","created":1700000000,"model":"m","choices":[{"index":0,"text":"","finish_reason":null,"logprobs":null}]}`,
			`{"id":"%[1]s","object":"text_completion","created":1700000000,"model":"m","choices":[{"index":0,"text":"%[3]s%[4]s","finish_reason":"max_tokens","logprobs":null}]}`,
			`{"id":"%[1]s","object":"text_completion","created":1700000000,"model":"m","choices":[{"index":0,"text":"","finish_reason":"stop","logprobs":null}]}`,
			`{"id":"%[1]s","object":"text_completion","created":1700000000,"model":"m","choices":[],"usage":{"prompt_tokens":%[5]d,"completion_tokens":3,"total_tokens":%[6]d}}`,
			`[DONE]`,
		}},
		{"legacy chat", Config{Release: ReleaseLegacy}, req{true, chatBody}, []string{
			`{"id": "%[1]s", "object": "chat.completion.chunk", "created": 1700000000, "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": null, "logprobs": null}]}`,
			`{"id": "%[1]s", "object": "chat.completion.chunk", "created": 1700000000, "model": "m", "choices": [{"index": 0, "delta": {"content": "%[2]s"}, "finish_reason": null, "logprobs": null}]}`,
			`{"id": "%[1]s", "object": "chat.completion.chunk", "created": 1700000000, "model": "m", "choices": [{"index": 0, "delta": {"content": "%[3]s"}, "finish_reason": null, "logprobs": null}]}`,
			`{"id": "%[1]s", "object": "chat.completion.chunk", "created": 1700000000, "model": "m", "choices": [{"index": 0, "delta": {"content": "%[4]s"}, "finish_reason": "length", "logprobs": null}]}`,
			`{"id": "%[1]s", "object": "chat.completion.chunk", "created": 1700000000, "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "logprobs": null}]}`,
			`{"id": "%[1]s", "object": "chat.completion.chunk", "created": 1700000000, "model": "m", "usage": {"prompt_tokens": %[5]d, "completion_tokens": 3, "total_tokens": %[6]d}}`,
			`[DONE]`,
		}},
		{"current chat, thinking model", Config{ReasoningTokens: 2}, req{true, chatBody}, []string{
			`{"id":"%[1]s","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null,"logprobs":null}]}`,
			`{"id":"%[1]s","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"reasoning_content":"%[2]s"},"finish_reason":null,"logprobs":null}]}`,
			`{"id":"%[1]s","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"reasoning_content":"%[3]s"},"finish_reason":null,"logprobs":null}]}`,
			`{"id":"%[1]s","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":"%[4]s"},"finish_reason":null,"logprobs":null}]}`,
			`{"id":"%[1]s","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop","logprobs":null}]}`,
			`{"id":"%[1]s","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[],"usage":{"prompt_tokens":%[5]d,"completion_tokens":3,"total_tokens":%[6]d,"prompt_tokens_details":{"cached_tokens":0}}}`,
			`[DONE]`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.cfg.backend = &recBackend{}
			ts := start(t, c.cfg)
			path, prefix := "/v1/completions", "cmpl-"
			prompt := ts.countPrompt("hi")
			if c.req.chat {
				path, prefix = "/v1/chat/completions", "chatcmpl-"
				prompt = ts.countChat([]chatMessage{{"user", "hi"}})
			}
			resp, body, err := streamBody(t, ts.URL+path, c.req.body)
			require.NoError(t, err)
			require.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
			id := fmt.Sprintf("%s%s%016x", prefix, ts.idPrefix, 1)
			var want []string
			for _, w := range c.want {
				if w == "[DONE]" {
					want = append(want, w)
					continue
				}
				want = append(want, fmt.Sprintf(w, id, tokenText(1, 0), tokenText(1, 1), tokenText(1, 2), prompt, prompt+3))
			}
			if d := cmp.Diff(want, sseFrames(t, body)); d != "" {
				t.Errorf("frames -want +got\n%s", d)
			}
		})
	}
}

// TestCurrentFramesKeepUTF8: current frames carry UTF-8 as is, legacy ones
// escape it.
func TestCurrentFramesKeepUTF8(t *testing.T) {
	t.Parallel()
	cur := newFrameMaker(ReleaseCurrent, false, "cmpl-1", 7, "m")
	require.Equal(t, `data: {"id":"cmpl-1","object":"text_completion","created":7,"model":"m","choices":[{"index":0,"text":" café","finish_reason":null,"logprobs":null}]}`+"\n\n",
		string(cur.appendChoice(nil, " café", false, "")))
	leg := newFrameMaker(ReleaseLegacy, false, "cmpl-1", 7, "m")
	require.True(t, strings.Contains(string(leg.appendChoice(nil, " café", false, "")), `" caf\u00e9"`))
}
