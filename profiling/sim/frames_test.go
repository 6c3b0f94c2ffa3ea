package sim

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestPyString(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"plain", `"plain"`},
		{`q"b\`, `"q\"b\\"`},
		{"tab\tnl\ncr\r", `"tab\tnl\ncr\r"`},
		{"\x01\x7f", `"\u0001\u007f"`},
		{"é", `"\u00e9"`},
		{"😀", `"\ud83d\ude00"`}, // json.dumps writes a surrogate pair
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, string(appendPyString(nil, tc.in)), "%q", tc.in)
	}
}

// FuzzPyString: every string becomes ASCII JSON that decodes back to it
// (invalid UTF-8 decodes to U+FFFD, as Go reads it).
func FuzzPyString(f *testing.F) {
	for _, s := range []string{"", "a b", "\"\\", "é😀", "\xff", "\x00\x1f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := appendPyString(nil, s)
		for _, c := range b {
			if c < 0x20 || c > 0x7e {
				t.Fatalf("non-printable-ASCII byte %#x in %q", c, b)
			}
		}
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		want := strings.ToValidUTF8(s, "\uFFFD")
		if !utf8.ValidString(s) {
			// Go's range yields one U+FFFD per bad byte; ToValidUTF8 merges runs.
			want = string([]rune(s))
		}
		if back != want {
			t.Fatalf("%q round-trips to %q, want %q", s, back, want)
		}
	})
}

func TestFrameShapes(t *testing.T) {
	t.Parallel()
	fm := newFrameMaker(false, "cmpl-1", 7, "m")
	require.Equal(t, `data: {"id": "cmpl-1", "object": "text_completion", "created": 7, "model": "m", "choices": [{"index": 0, "text": " a", "finish_reason": null, "logprobs": null}]}`+"\n\n",
		string(fm.appendDelta(nil, " a", "")))
	require.Equal(t, `data: {"id": "cmpl-1", "object": "text_completion", "created": 7, "model": "m", "usage": {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5}}`+"\n\n",
		string(fm.appendUsage(nil, 2, 3)))
	chat := newFrameMaker(true, "chatcmpl-1", 7, "m")
	require.Equal(t, `data: {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 7, "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "logprobs": null}]}`+"\n\n",
		string(chat.appendDelta(nil, "", "stop")))
}
