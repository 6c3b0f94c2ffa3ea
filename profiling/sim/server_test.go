package sim

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/tracing"
)

func TestHealthAndModels(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{Model: "amd/MiniMax-M2.5", backend: &recBackend{}})

	code, body := get(t, ts.URL+"/health")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"status":"ok"}`, string(body))

	code, body = get(t, ts.URL+"/v1/models")
	require.Equal(t, http.StatusOK, code)
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID, Object, OwnedBy string
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &models))
	require.Equal(t, "list", models.Object)
	require.Len(t, models.Data, 1)
	require.Equal(t, "amd/MiniMax-M2.5", models.Data[0].ID)
	require.Equal(t, "model", models.Data[0].Object)

	code, _ = get(t, ts.URL+"/v1/completions")
	require.Equal(t, http.StatusMethodNotAllowed, code, "completions is POST only")
	code, body = get(t, ts.URL+"/v1/nothing")
	require.Equal(t, http.StatusNotFound, code)
	require.JSONEq(t, `{"detail":"Not Found"}`, string(body))
}

// wantTokens is the text of the first n output tokens of request seq.
func wantTokens(seq uint64, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = tokenText(seq, i)
	}
	return out
}

func TestCompletionStreamFrames(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{backend: &recBackend{}, Release: ReleaseLegacy})
	resp, body, err := streamBody(t, ts.URL+"/v1/completions", map[string]any{
		"model": "m", "prompt": "one two three", "max_tokens": 5, "ignore_eos": true, "stream": true,
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
	frames := sseFrames(t, body)
	// 5 token frames, the extra empty "stop" frame, the usage frame, [DONE].
	require.Len(t, frames, 8, "frames: %q", frames)
	require.Equal(t, "[DONE]", frames[7])

	type choice struct {
		Index        int     `json:"index"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	}
	type chunk struct {
		ID      string          `json:"id"`
		Object  string          `json:"object"`
		Model   string          `json:"model"`
		Choices []choice        `json:"choices"`
		Usage   *map[string]int `json:"usage"`
	}
	var texts []string
	var id string
	for i, f := range frames[:7] {
		var c chunk
		require.NoError(t, json.Unmarshal([]byte(f), &c), "frame %d: %s", i, f)
		require.Equal(t, "text_completion", c.Object)
		require.Equal(t, "m", c.Model)
		if i == 0 {
			id = c.ID
			require.True(t, strings.HasPrefix(id, "cmpl-"), "id %q", id)
		}
		require.Equal(t, id, c.ID, "one id per request")
		switch {
		case i < 5:
			require.Len(t, c.Choices, 1)
			require.NotNil(t, c.Choices[0].Text)
			texts = append(texts, *c.Choices[0].Text)
			if i < 4 {
				require.Nil(t, c.Choices[0].FinishReason, "frame %d: finish_reason must be null", i)
			} else {
				require.Equal(t, "length", *c.Choices[0].FinishReason, "last token frame carries the engine's finish")
			}
			require.Nil(t, c.Usage)
		case i == 5:
			require.Len(t, c.Choices, 1)
			require.Equal(t, "", *c.Choices[0].Text)
			require.Equal(t, "stop", *c.Choices[0].FinishReason)
		case i == 6:
			require.Empty(t, c.Choices, "usage frame has no choices")
			require.NotContains(t, f, `"choices"`)
			require.NotNil(t, c.Usage)
			require.Equal(t, map[string]int{"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}, *c.Usage)
		}
	}
	require.Equal(t, wantTokens(1, 5), texts)
	// Python json.dumps separators, byte for byte.
	require.True(t, strings.HasPrefix(frames[0], fmt.Sprintf(`{"id": "%s", "object": "text_completion", "created": `, id)), frames[0])
	require.True(t, strings.HasSuffix(frames[0], fmt.Sprintf(`"model": "m", "choices": [{"index": 0, "text": "%s", "finish_reason": null, "logprobs": null}]}`, texts[0])), frames[0])
}

func TestChatStreamFrames(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{backend: &recBackend{}, Release: ReleaseLegacy})
	resp, body, err := streamBody(t, ts.URL+"/v1/chat/completions", map[string]any{
		"model": "m", "messages": []map[string]string{{"role": "user", "content": "hi there"}},
		"max_tokens": 3, "ignore_eos": true, "stream": true,
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	frames := sseFrames(t, body)
	// initial empty chunk, 3 tokens, the extra "stop" chunk, usage, [DONE]
	require.Len(t, frames, 7, "frames: %q", frames)
	type chunk struct {
		Object  string `json:"object"`
		Choices []struct {
			Delta        map[string]string `json:"delta"`
			FinishReason *string           `json:"finish_reason"`
		} `json:"choices"`
		Usage map[string]int `json:"usage"`
	}
	var cs []chunk
	for _, f := range frames[:6] {
		var c chunk
		require.NoError(t, json.Unmarshal([]byte(f), &c), f)
		require.Equal(t, "chat.completion.chunk", c.Object)
		cs = append(cs, c)
	}
	require.Empty(t, cs[0].Choices[0].Delta, "initial chunk has an empty delta")
	require.Nil(t, cs[0].Choices[0].FinishReason)
	want := wantTokens(1, 3)
	for i := range 3 {
		require.Equal(t, map[string]string{"content": want[i]}, cs[1+i].Choices[0].Delta)
	}
	require.Equal(t, "length", *cs[3].Choices[0].FinishReason)
	require.Empty(t, cs[4].Choices[0].Delta)
	require.Equal(t, "stop", *cs[4].Choices[0].FinishReason)
	require.Empty(t, cs[5].Choices)
	// "user hi there": three words.
	require.Equal(t, map[string]int{"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}, cs[5].Usage)
	require.Equal(t, "[DONE]", frames[6])
}

func TestNonStreaming(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{backend: &recBackend{}})
	type reply struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Text         string            `json:"text"`
			Message      map[string]string `json:"message"`
			FinishReason string            `json:"finish_reason"`
		} `json:"choices"`
		Usage map[string]float64 `json:"usage"`
	}
	code, body := post(t, ts.URL+"/v1/completions", map[string]any{"prompt": "a b", "max_tokens": 4, "ignore_eos": true})
	require.Equal(t, http.StatusOK, code, string(body))
	var r reply
	require.NoError(t, json.Unmarshal(body, &r))
	require.Equal(t, "text_completion", r.Object)
	require.Equal(t, strings.Join(wantTokens(1, 4), ""), r.Choices[0].Text)
	require.Equal(t, "length", r.Choices[0].FinishReason)
	require.Equal(t, 2.0, r.Usage["prompt_tokens"])
	require.Equal(t, 4.0, r.Usage["completion_tokens"])
	require.Equal(t, 6.0, r.Usage["total_tokens"])
	for _, k := range []string{"ttft_s", "tpot_s", "latency_s"} {
		require.Contains(t, r.Usage, k)
	}

	code, body = post(t, ts.URL+"/v1/chat/completions", map[string]any{
		"messages": []map[string]string{{"role": "user", "content": "x"}}, "max_tokens": 2, "ignore_eos": true})
	require.Equal(t, http.StatusOK, code, string(body))
	r = reply{}
	require.NoError(t, json.Unmarshal(body, &r))
	require.Equal(t, "chat.completion", r.Object)
	require.Equal(t, map[string]string{"role": "assistant", "content": strings.Join(wantTokens(2, 2), "")}, r.Choices[0].Message)
}

func TestEOSAndMaxTokens(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{backend: &recBackend{}})
	prompt := "the quick brown fox"
	h := fnv.New32a()
	h.Write([]byte(prompt))
	eos := 16 + int(h.Sum32()%241) // the documented rule
	tests := []struct {
		name       string
		maxTokens  int
		ignoreEOS  bool
		wantTokens int
		wantFinish string
	}{
		{"eos before max_tokens", 1000, false, eos, "stop"},
		{"max_tokens before eos", 3, false, 3, "length"},
		{"ignore_eos runs to max_tokens", 1000, true, 1000, "length"},
	}
	for _, tc := range tests {
		code, body := post(t, ts.URL+"/v1/completions", map[string]any{
			"prompt": prompt, "max_tokens": tc.maxTokens, "ignore_eos": tc.ignoreEOS})
		require.Equal(t, http.StatusOK, code, tc.name)
		var r struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		require.NoError(t, json.Unmarshal(body, &r))
		require.Equal(t, tc.wantTokens, r.Usage.CompletionTokens, tc.name)
		require.Equal(t, tc.wantFinish, r.Choices[0].FinishReason, tc.name)
	}
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{Model: "served", backend: &recBackend{}})
	tests := []struct {
		name, path string
		body       any
		wantMsg    string
	}{
		{"wrong model", "/v1/completions", map[string]any{"model": "other", "prompt": "x"}, "Requested model 'other' does not match server model 'served'"},
		{"wrong model chat", "/v1/chat/completions", map[string]any{"model": "served ", "messages": []any{}}, "does not match"},
		{"token list prompt", "/v1/completions", map[string]any{"prompt": []int{1, 2, 3}}, "string"},
		{"list of strings prompt", "/v1/completions", map[string]any{"prompt": []string{"a"}}, "string"},
		{"number prompt", "/v1/completions", map[string]any{"prompt": 7}, "string"},
		{"missing prompt", "/v1/completions", map[string]any{"model": "served"}, "string"},
		{"no messages", "/v1/chat/completions", map[string]any{"model": "served"}, "messages"},
		{"non-string content", "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": []int{1}}}}, "messages"},
		{"zero max_tokens", "/v1/completions", map[string]any{"prompt": "x", "max_tokens": 0}, "max_tokens"},
		{"not JSON", "/v1/completions", "{nope", "JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, body := post(t, ts.URL+tc.path, tc.body)
			require.Equal(t, http.StatusBadRequest, code, string(body))
			msg, typ, ecode := errorBody(t, body)
			require.Contains(t, msg, tc.wantMsg)
			require.Equal(t, "BadRequestError", typ)
			require.Equal(t, 400, ecode)
		})
	}
}

func TestPromptTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prompt string
		want   int
	}{
		{"", 1},
		{"   ", 1},
		{"word", 1},
		{"eightchr", 1},
		{"ninechars", 2},
		{"a b\tc\nd", 4},
		{strings.Repeat("x", 20), 3},
		{strings.Repeat("tok ", 1000), 1000},
	}
	ts := start(t, Config{backend: &recBackend{}})
	for _, tc := range tests {
		code, body := post(t, ts.URL+"/v1/completions", map[string]any{"prompt": tc.prompt, "max_tokens": 1})
		require.Equal(t, http.StatusOK, code)
		var r struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
		}
		require.NoError(t, json.Unmarshal(body, &r))
		require.Equal(t, tc.want, r.Usage.PromptTokens, "prompt %.20q", tc.prompt)
	}
}

// TestContinuousBatching checks the scheduler's invariants from the steps it ran.
func TestContinuousBatching(t *testing.T) {
	t.Parallel()
	b := &recBackend{}
	ts := start(t, Config{backend: b, MaxNumSeqs: 4, MaxNumBatchedTokens: 10})
	const n = 12
	var wg sync.WaitGroup
	var mu sync.Mutex
	var promptSum, outSum int
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			osl := 3 + i
			prompt := strings.TrimSpace(strings.Repeat("w ", 6)) // 6 tokens
			_, body, err := streamBody(t, ts.URL+"/v1/completions", map[string]any{
				"prompt": prompt, "max_tokens": osl, "ignore_eos": true, "stream": true})
			if !assert.NoError(t, err) {
				return
			}
			// osl tokens, the stop frame, usage, [DONE]
			assert.Equal(t, osl+3, strings.Count(string(body), "data: "))
			assert.True(t, strings.HasSuffix(string(body), "data: [DONE]\n\n"))
			mu.Lock()
			promptSum += 6
			outSum += osl
			mu.Unlock()
		}()
	}
	wg.Wait()
	var prefillTok, decodeTok int
	for _, s := range b.Steps() {
		require.LessOrEqual(t, s.BS, 4, "batch over max_num_seqs: %+v", s)
		switch s.Kind {
		case tracing.StepPrefill:
			prefillTok += s.Tokens
			require.True(t, s.Tokens <= 10 || s.BS == 1, "prefill over the token budget: %+v", s)
		case tracing.StepDecode:
			require.Equal(t, s.BS, s.Tokens)
			decodeTok += s.Tokens
		}
	}
	require.Equal(t, promptSum, prefillTok, "every prompt is prefilled once")
	// The prefill samples each request's first token; decode steps the rest.
	require.Equal(t, outSum-n, decodeTok)
	c := ts.stepCounts()
	require.Equal(t, int64(len(b.Steps())), c.Prefill+c.Decode)
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no model", Config{}, "--model"},
		{"capture size over max_num_seqs", Config{Model: "m", MaxNumSeqs: 8, CudagraphCaptureSizes: []int{1, 2, 4, 8, 16}}, "capture size 16 is larger than max_num_seqs 8"},
		{"negative time scale", Config{Model: "m", TimeScale: -1}, "time-scale"},
		{"error rate over 1", Config{Model: "m", StreamErrorRate: 1.5}, "stream-error-rate"},
		{"missing kernel table", Config{Model: "m", KernelCSVs: []string{"/nonexistent/conc8_layer.csv"}}, "--kernels"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
