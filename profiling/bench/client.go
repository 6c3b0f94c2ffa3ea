package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// FailureKind says why a request failed.
type FailureKind string

// The failure kinds a level counts.
const (
	FailTimeout    FailureKind = "timeout"      // the request's deadline passed
	FailConnection FailureKind = "connection"   // no response: refused, reset, DNS, dial
	FailHTTP4xx    FailureKind = "http_4xx"     // the server answered 4xx
	FailHTTP5xx    FailureKind = "http_5xx"     // the server answered 5xx (or another non-200)
	FailStream     FailureKind = "stream_error" // malformed frame, in-stream error, cut stream
	FailNoTokens   FailureKind = "no_tokens"    // a clean stream without any token
	FailCancelled  FailureKind = "cancelled"    // the run was interrupted
)

// FailureKinds lists the kinds in report order.
var FailureKinds = []FailureKind{FailTimeout, FailConnection, FailHTTP4xx, FailHTTP5xx, FailStream, FailNoTokens, FailCancelled}

// Request is one prompt to send.
type Request struct {
	Index     int
	Prompt    string
	PromptLen int // requested prompt tokens (the fallback when usage is absent)
	MaxTokens int
}

// Output is what one request measured. Durations are from the moment the
// request was handed to the transport.
type Output struct {
	Index        int
	Start        time.Time
	TTFT         time.Duration
	ITL          []time.Duration // gaps between consecutive tokens
	E2EL         time.Duration
	TokenEvents  int    // events carrying a choice with non-empty text
	OutputTokens int    // usage.completion_tokens, else TokenEvents
	PromptTokens int    // usage.prompt_tokens, else the requested length
	PromptLen    int    // the requested length (Request.PromptLen)
	Text         string // the generated text, when Client.KeepText
	UsageOutput  bool
	UsagePrompt  bool
	Failure      FailureKind // "" on success
	Error        string
}

// OK reports whether the request succeeded.
func (o *Output) OK() bool { return o.Failure == "" }

// Client sends streaming completion requests to one OpenAI-compatible server.
type Client struct {
	BaseURL   string // e.g. http://localhost:8000
	Endpoint  string // /v1/completions (default) or /v1/chat/completions
	Model     string
	IgnoreEOS bool
	Timeout   time.Duration // per request; 0 = none
	KeepText  bool          // keep each request's generated text in Output.Text
	HTTP      *http.Client

	readers sync.Pool
}

// NewTransport returns a transport tuned for many concurrent long-lived
// streams to one host: enough idle connections to reuse every stream's
// connection, no compression, HTTP/1.1 (as the engines speak).
func NewTransport(maxConns int) *http.Transport {
	if maxConns < 100 {
		maxConns = 100
	}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          maxConns * 2,
		MaxIdleConnsPerHost:   maxConns * 2,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		ExpectContinueTimeout: 0,
		ReadBufferSize:        32 << 10,
		WriteBufferSize:       32 << 10,
	}
}

// NewClient returns a client of baseURL whose transport holds maxConns
// connections.
func NewClient(baseURL, model string, maxConns int) *Client {
	return &Client{
		BaseURL:   strings.TrimRight(baseURL, "/"),
		Endpoint:  "/v1/completions",
		Model:     model,
		IgnoreEOS: true,
		HTTP:      &http.Client{Transport: NewTransport(maxConns)},
	}
}

func (c *Client) chat() bool { return strings.Contains(c.Endpoint, "chat/completions") }

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

// chunk is one streamed frame; completions carry text, chat a delta.
type chunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error   jsontext.Value `json:"error"`
	Object  string         `json:"object"`
	Message string         `json:"message"`
}

var decodeOpts = json.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

// Do sends req and reads its stream to the end. It never returns an error:
// a failure is recorded in the Output with its kind.
func (c *Client) Do(ctx context.Context, req Request) Output {
	out := Output{Index: req.Index, PromptTokens: req.PromptLen, PromptLen: req.PromptLen}
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
	payload, err := json.Marshal(body)
	if err != nil {
		out.fail(FailStream, fmt.Errorf("encoding request: %w", err))
		return out
	}
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	url := c.BaseURL + c.Endpoint
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		out.fail(FailConnection, err)
		return out
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")

	out.Start = time.Now()
	resp, err := c.HTTP.Do(hreq)
	if err != nil {
		out.fail(classify(ctx, err, FailConnection), err) // a *url.Error names the method and URL
		return out
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		kind := FailHTTP5xx
		if resp.StatusCode >= 400 && resp.StatusCode < 500 {
			kind = FailHTTP4xx
		}
		out.fail(kind, fmt.Errorf("POST %s: HTTP %d: %s", url, resp.StatusCode, bytes.TrimSpace(msg)))
		return out
	}
	br, _ := c.readers.Get().(*bufio.Reader)
	if br == nil {
		br = bufio.NewReaderSize(resp.Body, 16<<10)
	} else {
		br.Reset(resp.Body)
	}
	defer func() {
		br.Reset(nil)
		c.readers.Put(br)
	}()
	c.readStream(ctx, &out, NewSSEReader(br))
	if out.OK() {
		// Drain the end of the chunked body so the connection is reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(br, 64<<10))
	}
	return out
}

// readStream consumes the events of one response into out.
func (c *Client) readStream(ctx context.Context, out *Output, sse *SSEReader) {
	var last time.Time
	var ch chunk
	var text strings.Builder
	if c.KeepText {
		defer func() { out.Text = text.String() }()
	}
	for {
		data, err := sse.Next()
		now := time.Now()
		if err != nil {
			switch {
			case err == io.EOF:
				out.fail(FailStream, fmt.Errorf("stream ended after %d events without data: [DONE]", sse.Events()))
			case errors.Is(err, ErrCutMidEvent):
				out.fail(FailStream, err)
			default:
				out.fail(classify(ctx, err, FailStream), fmt.Errorf("reading stream after %d events: %w", sse.Events(), err))
			}
			return
		}
		if string(data) == "[DONE]" {
			out.E2EL = now.Sub(out.Start)
			break
		}
		ch.Choices = ch.Choices[:0]
		ch.Usage, ch.Error, ch.Object, ch.Message = nil, nil, "", ""
		if err := json.Unmarshal(data, &ch, decodeOpts); err != nil {
			out.fail(FailStream, fmt.Errorf("event %d: malformed JSON frame %.80q: %w", sse.Events()-1, data, err))
			return
		}
		if len(ch.Error) > 0 && string(ch.Error) != "null" || ch.Object == "error" {
			msg := string(ch.Error)
			if ch.Object == "error" {
				msg = ch.Message
			}
			out.fail(FailStream, fmt.Errorf("event %d: server error in stream: %.300s", sse.Events()-1, msg))
			return
		}
		if len(ch.Choices) > 0 {
			delta := ch.Choices[0].Text
			if delta == "" {
				delta = ch.Choices[0].Delta.Content
			}
			if delta != "" {
				if c.KeepText {
					text.WriteString(delta)
				}
				if out.TokenEvents == 0 {
					out.TTFT = now.Sub(out.Start)
				} else {
					out.ITL = append(out.ITL, now.Sub(last))
				}
				last = now
				out.TokenEvents++
			}
		}
		if ch.Usage != nil {
			out.OutputTokens, out.UsageOutput = ch.Usage.CompletionTokens, true
			if ch.Usage.PromptTokens > 0 {
				out.PromptTokens, out.UsagePrompt = ch.Usage.PromptTokens, true
			}
		}
	}
	if !out.UsageOutput {
		out.OutputTokens = out.TokenEvents
	}
	if out.TokenEvents == 0 || out.OutputTokens == 0 {
		out.fail(FailNoTokens, fmt.Errorf("stream finished without any token (%d events)", sse.Events()))
	}
}

func (o *Output) fail(kind FailureKind, err error) {
	o.Failure = kind
	o.Error = err.Error()
}

// classify maps a transport error to a failure kind; other is the kind when
// it is neither a timeout nor a cancellation.
func classify(ctx context.Context, err error, other FailureKind) FailureKind {
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return FailCancelled
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return FailTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return FailTimeout
	}
	return other
}
