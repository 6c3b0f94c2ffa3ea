package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// atomFrames is a complete ATOM-style stream of n tokens: delta frames, the
// extra empty-text finish frame, a usage frame with empty choices, [DONE].
func atomFrames(n, promptTokens int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" w%d\",\"finish_reason\":null}]}\n\n", i)
	}
	b.WriteString("data: {\"id\":\"cmpl-1\",\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"stop\"}]}\n\n")
	fmt.Fprintf(&b, "data: {\"id\":\"cmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", promptTokens, n, promptTokens+n)
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

func streamHandler(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}
}

func TestClientOutcomes(t *testing.T) {
	t.Parallel()
	cutAbruptly := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choi")
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		timeout  time.Duration
		wantKind failureKind
		wantMsg  string
		tokens   int
		usage    bool
	}{
		{name: "atom stream", handler: streamHandler(atomFrames(5, 17)), tokens: 5, usage: true},
		{name: "usage frame without choices key", handler: streamHandler(
			"data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\ndata: {\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n"),
			tokens: 2, usage: true},
		{name: "no usage: tokens counted", handler: streamHandler(
			": keep-alive\n\ndata: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\ndata: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"),
			tokens: 2, usage: false},
		{name: "malformed frame", handler: streamHandler("data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {not json\n\ndata: [DONE]\n\n"),
			wantKind: failStream, wantMsg: "malformed JSON"},
		{name: "cut mid-event, clean close", handler: streamHandler("data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choi"),
			wantKind: failStream, wantMsg: "middle of an event"},
		{name: "cut mid-event, connection dropped", handler: cutAbruptly, wantKind: failStream},
		{name: "ended without [DONE]", handler: streamHandler("data: {\"choices\":[{\"text\":\"a\"}]}\n\n"),
			wantKind: failStream, wantMsg: "without data: [DONE]"},
		{name: "in-stream error frame with HTTP 200", handler: streamHandler(
			"data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"error\":{\"message\":\"engine died\",\"type\":\"InternalServerError\",\"code\":500}}\n\ndata: [DONE]\n\n"),
			wantKind: failStream, wantMsg: "engine died"},
		{name: "vLLM-style in-stream error object", handler: streamHandler(
			"data: {\"object\":\"error\",\"message\":\"out of blocks\",\"code\":500}\n\ndata: [DONE]\n\n"),
			wantKind: failStream, wantMsg: "out of blocks"},
		{name: "no tokens", handler: streamHandler(
			"data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"stop\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":0}}\n\ndata: [DONE]\n\n"),
			wantKind: failNoTokens},
		{name: "HTTP 400 wrong model", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"model 'x' not found","type":"invalid_request_error","code":400}}`)
		}, wantKind: failHTTP4xx, wantMsg: "not found"},
		{name: "HTTP 500", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
		}, wantKind: failHTTP5xx, wantMsg: "HTTP 500"},
		{name: "timeout", handler: func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // then the server notices the client leaving
			<-r.Context().Done()        // never answers
		}, timeout: 100 * time.Millisecond, wantKind: failTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			c := newClient(srv.URL, "m", 4)
			c.Timeout = tc.timeout
			o := c.Do(context.Background(), request{Prompt: "hi", PromptLen: 1, MaxTokens: 5})
			require.Equal(t, tc.wantKind, o.Failure, "error: %s", o.Error)
			require.Contains(t, o.Error, tc.wantMsg)
			if tc.wantKind != "" {
				return
			}
			require.Equal(t, tc.tokens, o.TokenEvents)
			require.Equal(t, tc.tokens, o.OutputTokens)
			require.Equal(t, tc.usage, o.UsageOutput)
			require.Equal(t, tc.tokens-1, o.ITL.Len())
			require.GreaterOrEqual(t, o.E2EL, o.TTFT)
		})
	}
}

func TestClientConnectionRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	c := newClient("http://"+addr, "m", 4)
	o := c.Do(context.Background(), request{Prompt: "hi", MaxTokens: 1})
	require.Equal(t, failConnection, o.Failure, o.Error)
	require.Contains(t, o.Error, addr)
}

func TestClientCancelled(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	c := newClient(srv.URL, "m", 4)
	done := make(chan output)
	go func() { done <- c.Do(ctx, request{Prompt: "hi", MaxTokens: 1}) }()
	cancel()
	o := <-done
	require.Equal(t, failCancelled, o.Failure, o.Error)
}

func TestClientRequestBody(t *testing.T) {
	t.Parallel()
	for _, endpoint := range []string{"/v1/completions", "/v1/chat/completions"} {
		t.Run(endpoint, func(t *testing.T) {
			t.Parallel()
			var got map[string]any
			var path string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				path = r.URL.Path
				if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
					w.WriteHeader(http.StatusBadRequest)
					return
				}
				if strings.Contains(endpoint, "chat") {
					io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"y\"}}]}\n\ndata: [DONE]\n\n")
					return
				}
				io.WriteString(w, atomFrames(2, 4))
			}))
			defer srv.Close()
			c := newClient(srv.URL, "MiniMaxAI/MiniMax-M2.5", 4)
			c.Endpoint = endpoint
			o := c.Do(context.Background(), request{Prompt: "one two three", PromptLen: 3, MaxTokens: 7})
			require.True(t, o.OK(), o.Error)
			require.Equal(t, 2, o.OutputTokens)
			require.Equal(t, endpoint, path)
			require.Equal(t, "MiniMaxAI/MiniMax-M2.5", got["model"])
			require.Equal(t, 7.0, got["max_tokens"])
			require.Equal(t, 0.0, got["temperature"])
			require.Equal(t, true, got["ignore_eos"])
			require.Equal(t, true, got["stream"])
			require.Equal(t, map[string]any{"include_usage": true}, got["stream_options"])
			if strings.Contains(endpoint, "chat") {
				require.Equal(t, []any{map[string]any{"role": "user", "content": "one two three"}}, got["messages"])
				require.Equal(t, 3, o.PromptTokens, "no usage: the requested length is the fallback")
				require.False(t, o.UsagePrompt)
			} else {
				require.Equal(t, "one two three", got["prompt"])
				require.Equal(t, 4, o.PromptTokens)
				require.True(t, o.UsagePrompt)
			}
		})
	}
}
