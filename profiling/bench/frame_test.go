package bench

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// frameSeeds are frames as engines stream them and the cases around what
// the fast path takes.
var frameSeeds = []string{
	`{"id": "cmpl-18ed05363c17d61f000000000003c05b", "object": "text_completion", "created": 1796098838, "model": "sim", "choices": [{"index": 0, "text": " on", "finish_reason": null, "logprobs": null}]}`,
	`{"id": "cmpl-1", "object": "text_completion", "created": 1796098838, "model": "sim", "usage": {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5}}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" step"},"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
	`{"choices":[{"text":"","delta":{"content":"x"}},{"text":"y"}],"usage":null}`,
	`{"choices":[{"text":"caf\u00e9"}]}`,
	`{"choices":[{"text":"line\n"}]}`,
	"{\"choices\":[{\"text\":\"é\"}]}",
	"{\"id\":\"\xff\",\"choices\":[{\"text\":\"a\"}]}",
	`{"object":"error","message":"boom","code":500}`,
	`{"error":{"message":"overloaded"}}`,
	`{"error":null,"choices":[{"text":"a"}]}`,
	`{"choices":[{"text":"a","text":"b"}]}`,
	`{"choices":[],"choices":[{"text":"b"}]}`,
	`{"usage":{"prompt_tokens":1.0,"completion_tokens":2}}`,
	`{"usage":{"prompt_tokens":-0,"completion_tokens":99999999999999999999}}`,
	`{"created": 01}`,
	`{"created": 1e5, "x": true, "y": false, "z": null}`,
	`{"choices":[{"index":0,"delta":{"reasoning_content":"think"},"finish_reason":null}]}`,
	`{"choices":[{"delta":{"reasoning":"think","content":""}}]}`,
	`{"choices":[{"delta":{"content":"answer","reasoning_content":"think"}}]}`,
	`{"choices":[{"delta":{"reasoning_content":null,"content":"x"}}]}`,
	`{"choices":[{"index":0,"text":"","finish_reason":"stop"}]}`,
	`{"choices":[{"delta":{"role":null,"content":""},"finish_reason":null}]}`,
	`{"choices":[{"delta":{"role":"assistant","role":"x"}}]}`,
	`{"choices":[{"text":"","finish_reason":null,"finish_reason":"length"}]}`,
	`{"choices":[{"text":"","finish_reason":{"type":"stop"}}]}`,
	`{"choices":[{"text":"a"}]} x`,
	`{"choices":[{"text":"a"}]}  ` + "\n",
	`{"choices":null}`,
	`{"choices":[{"delta":null}]}`,
	`{"Choices":[{"text":"a"}]}`,
	`[1]`,
	``,
}

// The fast path gives exactly what the general decoder gives, on every
// frame it takes.
func FuzzParseFrame(f *testing.F) {
	for _, s := range frameSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFrame(t, data)
	})
}

func checkFrame(t *testing.T, data []byte) (fast bool) {
	got, ok := parseFrameFast(data)
	// A reused chunk, as a stream reuses it, and a fresh one.
	reused := chunk{}
	_, _ = parseFrameSlow([]byte(`{"choices":[{"text":"stale","finish_reason":"stale","delta":{"content":"stale","reasoning_content":"stale","reasoning":"stale","role":"stale"}}],"usage":{"prompt_tokens":7,"completion_tokens":7},"object":"x"}`), &reused)
	for _, ch := range []*chunk{{}, &reused} {
		want, err := parseFrameSlow(data, ch)
		if !ok {
			continue
		}
		require.NoError(t, err, "the fast path took a frame the decoder rejects")
		if len(want.delta) == 0 {
			want.delta = nil
		}
		if len(got.delta) == 0 {
			got.delta = nil
		}
		require.Equal(t, want, got)
	}
	return ok
}

func TestParseFrameSeeds(t *testing.T) {
	t.Parallel()
	fast := 0
	for _, s := range frameSeeds {
		if checkFrame(t, []byte(s)) {
			fast++
		}
	}
	// The engines' frames are read by the fast path.
	for _, s := range frameSeeds[:5] {
		_, ok := parseFrameFast([]byte(s))
		require.True(t, ok, s)
	}
	require.Less(t, fast, len(frameSeeds), "some seeds must go the general way")
}

// A thinking model streams its reasoning as reasoning_content (or
// reasoning) deltas before the answer: those are tokens too.
func TestParseFrameReasoning(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, frame, delta string
		reasoning          bool
	}{
		{"reasoning_content", `{"choices":[{"index":0,"delta":{"reasoning_content":"hmm"},"finish_reason":null}]}`, "hmm", true},
		{"reasoning", `{"choices":[{"delta":{"reasoning":"hmm"}}]}`, "hmm", true},
		{"content wins", `{"choices":[{"delta":{"content":"yes","reasoning_content":"hmm"}}]}`, "yes", false},
		{"answer", `{"choices":[{"delta":{"content":"yes"}}]}`, "yes", false},
		{"non-ASCII reasoning (general decoder)", `{"choices":[{"delta":{"reasoning_content":"é"}}]}`, "é", true},
	} {
		f, err := parseFrame([]byte(tt.frame), &chunk{})
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.delta, string(f.delta), tt.name)
		require.Equal(t, tt.reasoning, f.reasoning, tt.name)
		checkFrame(t, []byte(tt.frame))
	}
}
