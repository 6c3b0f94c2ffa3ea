package bench

import (
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
)

// The request as a struct: what appendBody writes out by hand.
type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type requestBody struct {
	Model         string        `json:"model"`
	Prompt        string        `json:"prompt,omitempty"`
	Messages      []chatMessage `json:"messages,omitempty"`
	MaxTokens     int           `json:"max_tokens"`
	Temperature   float64       `json:"temperature"`
	IgnoreEOS     bool          `json:"ignore_eos,omitempty"`
	Stream        bool          `json:"stream"`
	StreamOptions streamOptions `json:"stream_options"`
}

func marshalBody(c *client, req request) ([]byte, error) {
	body := requestBody{
		Model:         c.Model,
		MaxTokens:     req.MaxTokens,
		IgnoreEOS:     c.IgnoreEOS,
		Stream:        true,
		StreamOptions: streamOptions{IncludeUsage: true},
	}
	if c.chat() {
		body.Messages = []chatMessage{{Role: "user", Content: req.Prompt}}
	} else {
		body.Prompt = req.Prompt
	}
	return json.Marshal(body)
}

func checkBody(t *testing.T, model, prompt string, maxTokens int, ignoreEOS, chat bool) {
	c := &client{Model: model, IgnoreEOS: ignoreEOS, Endpoint: "/v1/completions"}
	if chat {
		c.Endpoint = "/v1/chat/completions"
	}
	req := request{Prompt: prompt, MaxTokens: maxTokens}
	want, wantErr := marshalBody(c, req)
	got, err := c.appendBody(nil, req)
	require.Equal(t, wantErr != nil, err != nil, "errors: %v, %v", wantErr, err)
	if err == nil {
		require.Equal(t, string(want), string(got))
	}
}

// appendBody writes what json.Marshal writes, for every kind of text.
func TestRequestBody(t *testing.T) {
	t.Parallel()
	for _, prompt := range []string{"r1a the of and", "", `quo"te \ back`, "tab\t nl\n cr\r \x00\x1f", "<a>&b", "caf\u00e9 \u2028 \U0001F600", "bad \xff utf8"} {
		for _, chat := range []bool{false, true} {
			for _, ignore := range []bool{false, true} {
				checkBody(t, "MiniMaxAI/MiniMax-M2.5", prompt, 128, ignore, chat)
			}
		}
	}
	checkBody(t, "m\u00e9\"x", "p", -1, true, false)
}

func FuzzRequestBody(f *testing.F) {
	f.Add("MiniMaxAI/MiniMax-M2.5", "r1a the of and", 128, true, false)
	f.Add("m", "quo\"te <&> \u2028 \xff", 0, false, true)
	f.Fuzz(checkBody)
}
