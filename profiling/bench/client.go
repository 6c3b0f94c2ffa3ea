package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/profile-model/profile-model/profiling/tokenizer"
)

// failureKind says why a request failed.
type failureKind string

// The failure kinds a level counts.
const (
	failTimeout    failureKind = "timeout"      // the request's deadline passed
	failStall      failureKind = "stall"        // no byte from the server for the stall timeout
	failConnection failureKind = "connection"   // no response: refused, reset, DNS, dial
	failHTTP4xx    failureKind = "http_4xx"     // the server answered 4xx
	failHTTP5xx    failureKind = "http_5xx"     // the server answered 5xx (or another non-200)
	failStream     failureKind = "stream_error" // malformed frame, in-stream error, cut stream
	failNoTokens   failureKind = "no_tokens"    // a clean stream without any token
	failCancelled  failureKind = "cancelled"    // the run was interrupted, or the level's deadline passed
)

// FailureKinds lists the kinds in report order.
var FailureKinds = []failureKind{failTimeout, failStall, failConnection, failHTTP4xx, failHTTP5xx, failStream, failNoTokens, failCancelled}

// request is one prompt to send.
type request struct {
	Index     int
	Prompt    string
	PromptLen int // requested prompt tokens (the fallback when usage is absent)
	MaxTokens int

	body []byte // the JSON body, when encoded ahead (Prompt is then dropped)
}

// output is what one request measured. Durations are from the moment the
// request was handed to the transport.
type output struct {
	Index        int
	Start        time.Time
	TTFT         time.Duration
	ITL          gaps // gaps between consecutive tokens
	E2EL         time.Duration
	TokenEvents  int    // frames that carried tokens (text, or a token sent as empty text)
	OutputTokens int    // usage.completion_tokens, else FrameTokens
	PromptTokens int    // usage.prompt_tokens, else the requested length
	PromptLen    int    // the requested length (Request.PromptLen)
	Text         string // the generated text, when Client.KeepText
	UsageOutput  bool
	UsagePrompt  bool
	Failure      failureKind // "" on success
	Error        string

	// How the tokens came in frames: FrameTokens is what the frames carried
	// (the usage total, shared out among them as Split says), of which
	// ReasoningTokens came as reasoning_content or reasoning deltas.
	FrameTokens     int
	ReasoningTokens int
	Split           tokenSplit

	// Resent: kept-alive connections the server had closed that the request
	// went past before it was sent on a live one (not failures).
	Resent int

	// MaxTokens is the requested max_tokens. UsageRejected says why the
	// server's usage figures were not believed (they contradict what was
	// streamed or asked for), "" when they were: the streamed count (the
	// requested prompt length) is used instead.
	MaxTokens     int
	UsageRejected string
	// SendLag is how late the client handed the request to the transport:
	// from its time in the schedule (or the moment a stream came free)
	// to Start. Set by Run.
	SendLag time.Duration
	// ReadSpan is the time from the first read of the response body to
	// the end of the last, ReadWait the part of it spent inside the reads
	// (waiting for bytes): the rest the client was busy elsewhere.
	ReadSpan, ReadWait time.Duration
}

// gaps are the gaps between a stream's consecutive tokens, held as varint
// nanoseconds: about 4 bytes a token instead of 8, which at thousands of
// requests of hundreds of tokens each is megabytes.
type gaps struct {
	b []byte
	n int
}

// gapsOf returns the gaps ds.
func gapsOf(ds ...time.Duration) gaps {
	var g gaps
	for _, d := range ds {
		g.add(d)
	}
	return g
}

// add appends a gap.
func (g *gaps) add(d time.Duration) {
	g.b = binary.AppendVarint(g.b, int64(d))
	g.n++
}

// Len is the number of gaps.
func (g gaps) Len() int { return g.n }

// All yields the gaps in order.
func (g gaps) All() iter.Seq[time.Duration] {
	return func(yield func(time.Duration) bool) {
		for i := 0; i < len(g.b); {
			v, n := binary.Varint(g.b[i:])
			i += n
			if !yield(time.Duration(v)) {
				return
			}
		}
	}
}

// OK reports whether the request succeeded.
func (o *output) OK() bool { return o.Failure == "" }

// client sends streaming completion requests to one OpenAI-compatible server.
type client struct {
	BaseURL   string // e.g. http://localhost:8000
	Endpoint  string // /v1/completions (default) or /v1/chat/completions
	Model     string
	IgnoreEOS bool
	Timeout   time.Duration // per request; 0 = none
	Stall     time.Duration // no byte for this long fails a request (FailStall); 0 = none
	KeepText  bool          // keep each request's generated text in Output.Text
	// FrameDelay makes the client this much slower at each event it
	// reads (a client starved of CPU), to test the client-bound check.
	FrameDelay time.Duration
	HTTP       *http.Client

	tok     tokenizer.Counter // counts each frame's tokens (SetTokenizer); nil: none
	special int               // what tok counts for an empty text (its added special tokens)
	now     func() time.Time  // the clock; nil: time.Now (tests drive a fake one)
	logs    sync.Pool         // *frameLog

	streamed atomic.Int64 // tokens streamed so far, as estimated while they stream

	stream  *streamTransport // completions of a plain http:// server; nil: HTTP
	readers sync.Pool
}

// newTransport returns a transport tuned for many concurrent long-lived
// streams to one host: enough idle connections to reuse every stream's
// connection, no compression, HTTP/1.1 (as the engines speak), and buffers
// sized to what flows. A token frame is a few hundred bytes, so 2 KB holds
// a burst of them; a request is written once per stream (a larger body
// goes past the buffer), so 1 KB is enough. At a thousand streams the
// buffers of larger sizes were most of the client's memory.
func newTransport(maxConns int) *http.Transport {
	if maxConns < 100 {
		maxConns = 100
	}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           touchDialer(&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}),
		MaxIdleConns:          maxConns * 2,
		MaxIdleConnsPerHost:   maxConns * 2,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		ExpectContinueTimeout: 0,
		ReadBufferSize:        streamBuf,
		WriteBufferSize:       1 << 10,
	}
}

// streamBuf is the size of each buffer a stream is read through (the
// connection's, and the event reader's above the chunked body).
const streamBuf = 2 << 10

// newClient returns a client of baseURL whose transport holds maxConns
// connections.
func newClient(baseURL, model string, maxConns int) *client {
	return &client{
		BaseURL:   strings.TrimRight(baseURL, "/"),
		Endpoint:  "/v1/completions",
		Model:     model,
		IgnoreEOS: true,
		Stall:     DefaultStallTimeout,
		HTTP:      &http.Client{Transport: newTransport(maxConns), CheckRedirect: noRedirects},
		stream:    newStreamTransport(strings.TrimRight(baseURL, "/"), 2*max(maxConns, 100), http.ProxyFromEnvironment),
	}
}

func (c *client) chat() bool { return strings.Contains(c.Endpoint, "chat/completions") }

// appendBody appends the JSON body of req: what json.Marshal makes of the
// request's fields (TestRequestBody holds it to that), byte for byte, written out directly (a request is a few KB
// of prompt, and a thousand streams start at once: reflection there cost
// both time and stack).
func (c *client) appendBody(b []byte, req request) ([]byte, error) {
	var err error
	b = append(b, `{"model":`...)
	if b, err = jsontext.AppendQuote(b, c.Model); err != nil {
		return nil, err
	}
	switch {
	case c.chat():
		b = append(b, `,"messages":[{"role":"user","content":`...)
		if b, err = jsontext.AppendQuote(b, req.Prompt); err != nil {
			return nil, err
		}
		b = append(b, "}]"...)
	case req.Prompt != "":
		b = append(b, `,"prompt":`...)
		if b, err = jsontext.AppendQuote(b, req.Prompt); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"max_tokens":`...)
	b = strconv.AppendInt(b, int64(req.MaxTokens), 10)
	b = append(b, `,"temperature":0,"ignore_eos":`...)
	b = strconv.AppendBool(b, c.IgnoreEOS)
	return append(b, `,"stream":true,"stream_options":{"include_usage":true}}`...), nil
}

// encode encodes req's body ahead of sending, and drops the prompt it was
// made from: a request waiting to be sent holds its text once. A request
// that cannot be encoded is left as it is (Do reports why).
func (c *client) encode(req request) request {
	if b, err := c.appendBody(nil, req); err == nil {
		req.body, req.Prompt = b, ""
	}
	return req
}

// Do sends req and reads its stream to the end. It never returns an error:
// a failure is recorded in the Output with its kind.
func (c *client) Do(ctx context.Context, req request) output {
	out := output{Index: req.Index, PromptTokens: req.PromptLen, PromptLen: req.PromptLen, MaxTokens: req.MaxTokens}
	payload, err := req.body, error(nil)
	if payload == nil {
		payload, err = c.appendBody(nil, req)
	}
	if err != nil {
		out.fail(failStream, fmt.Errorf("encoding request: %w", err))
		return out
	}
	ctx, cancel := withBound(ctx, c.Timeout, errRequestBound, "--timeout")
	defer cancel()
	ctx, wd := watch(ctx, c.Stall)
	defer wd.stop()
	ctx, cancelReq := context.WithCancelCause(ctx)
	defer cancelReq(nil)
	url := c.BaseURL + c.Endpoint
	status, body, err := c.post(ctx, &out, url, payload, wd)
	if err != nil {
		if b := boundOf(ctx); b != nil {
			err = fmt.Errorf("POST %s: %v, waiting for the response to begin", url, b)
		}
		out.fail(classify(ctx, err, failConnection), err) // a *url.Error names the method and URL
		return out
	}
	wd.touch()
	raw := body // its headers
	body = wd.wrap(body)
	defer body.Close()
	if status != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(body, 2048))
		kind := failHTTP5xx
		if status >= 400 && status < 500 {
			kind = failHTTP4xx
		}
		if err := redirectError("POST", url, status, headerOf(raw, "location")); err != nil {
			out.fail(kind, err)
			return out
		}
		out.fail(kind, fmt.Errorf("POST %s: HTTP %d: %s", url, status, bytes.TrimSpace(msg)))
		return out
	}
	timed := &timedBody{ReadCloser: body, clock: c.clock}
	first := &firstBytes{ReadCloser: timed}
	body = first
	br, _ := c.readers.Get().(*bufio.Reader)
	if br == nil {
		br = bufio.NewReaderSize(body, streamBuf)
	} else {
		br.Reset(body)
	}
	defer func() {
		br.Reset(nil)
		c.readers.Put(br)
	}()
	sse := newSSEReader(br)
	c.readStream(ctx, &out, sse)
	if out.Failure == failStream && sse.Events() == 0 {
		out.fail(failStream, notAStream(url, headerOf(raw, "content-type"), first.b, out.Error))
	}
	if out.OK() {
		// Drain the end of the chunked body so the connection is reused;
		// a server that sent [DONE] but keeps the body open loses the
		// connection instead of holding the request.
		t := time.AfterFunc(drainWait, func() { cancelReq(errDrained) })
		_, _ = io.Copy(io.Discard, io.LimitReader(br, 64<<10))
		t.Stop()
	}
	timed.record(&out)
	return out
}

// drainWait bounds reading what follows data: [DONE].
const drainWait = time.Second

var errDrained = errors.New("the body did not end within a second of data: [DONE]")

// post sends the request and returns the response's status and body;
// out.Start is the moment it is handed to the transport. Every byte of the
// response head touches wd: only silence is a stall.
func (c *client) post(ctx context.Context, out *output, u string, payload []byte, wd *watchdog) (int, io.ReadCloser, error) {
	if t := c.stream; t != nil && t.base == c.BaseURL {
		out.Start = c.clock()
		var onRead func()
		if wd != nil {
			onRead = wd.touch
		}
		status, body, resent, err := t.post(ctx, c.Endpoint, payload, onRead)
		out.Resent = resent
		if err != nil {
			return 0, nil, &url.Error{Op: "Post", URL: u, Err: err}
		}
		return status, body, nil
	}
	pl := &requestPayload{b: payload}
	if wd != nil {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { watchConn(info.Conn, wd) }})
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u, pl.reader())
	if err != nil {
		return 0, nil, err
	}
	hreq.ContentLength = int64(len(payload))
	hreq.GetBody = pl.rewind
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	out.Start = c.clock()
	resp, err := c.HTTP.Do(hreq)
	if err != nil {
		return 0, nil, err
	}
	pl.release() // the server answered: the request is not sent again
	return resp.StatusCode, &httpBody{resp.Body, resp.Header}, nil
}

// requestPayload is a request body the transport may read again (through
// GetBody, to resend it on a kept-alive connection the server had closed)
// until the response has begun; then its bytes are let go, so that a
// thousand streams do not each hold their prompt for the whole response.
type requestPayload struct {
	mu sync.Mutex
	b  []byte
}

func (p *requestPayload) reader() io.ReadCloser { return &payloadReader{p: p} }

func (p *requestPayload) rewind() (io.ReadCloser, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.b == nil {
		return nil, errors.New("the request body was let go once the response began")
	}
	return p.reader(), nil
}

func (p *requestPayload) release() {
	p.mu.Lock()
	p.b = nil
	p.mu.Unlock()
}

type payloadReader struct {
	p   *requestPayload
	off int
}

func (r *payloadReader) Read(q []byte) (int, error) {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	if r.off >= len(r.p.b) {
		return 0, io.EOF
	}
	n := copy(q, r.p.b[r.off:])
	r.off += n
	return n, nil
}

func (r *payloadReader) Close() error { return nil }

// readStream consumes the events of one response into out.
func (c *client) readStream(ctx context.Context, out *output, sse *sseReader) {
	var ch chunk
	var text strings.Builder
	if c.KeepText {
		defer func() { out.Text = text.String() }()
	}
	log, _ := c.logs.Get().(*frameLog)
	if log == nil {
		log = &frameLog{}
	}
	defer func() {
		log.reset()
		c.logs.Put(log)
	}()
	total := -1 // usage.completion_tokens
	for {
		data, err := sse.Next()
		if c.FrameDelay > 0 {
			time.Sleep(c.FrameDelay)
		}
		now := c.clock()
		if err != nil {
			switch {
			case err == io.EOF:
				out.fail(failStream, fmt.Errorf("stream ended after %d events without data: [DONE]", sse.Events()))
			case errors.Is(err, errCutMidEvent):
				out.fail(failStream, err)
			case boundOf(ctx) != nil:
				out.fail(classify(ctx, err, failStream), fmt.Errorf("%v, waiting for event %d of the stream", boundOf(ctx), sse.Events()+1))
			default:
				out.fail(classify(ctx, err, failStream), fmt.Errorf("reading stream after %d events: %w", sse.Events(), err))
			}
			return
		}
		if string(data) == "[DONE]" {
			out.E2EL = now.Sub(out.Start)
			break
		}
		f, err := parseFrame(data, &ch)
		if err != nil {
			out.fail(failStream, fmt.Errorf("event %d: malformed JSON frame %.80q: %w", sse.Events()-1, data, err))
			return
		}
		if f.failed {
			out.fail(failStream, fmt.Errorf("event %d: server error in stream: %.300s", sse.Events()-1, f.message))
			return
		}
		if f.choices {
			switch {
			case len(f.delta) > 0:
				if c.KeepText {
					text.Write(f.delta)
				}
				log.add(out.Start, now, f.delta, f.reasoning)
				c.streamed.Add(streamedTokens(f.delta))
			case f.finish || f.role:
				// The closing frame, or a chat stream's opening one.
			case c.chat() && sse.Events() == 1:
				// Older ATOM releases open a chat stream with an empty
				// delta at once, before any token.
			default:
				// A token whose text the detokenizer held back (it ended
				// inside a UTF-8 character): a token all the same.
				log.add(out.Start, now, nil, false)
				c.streamed.Add(1)
			}
		}
		if f.usage {
			out.OutputTokens, out.UsageOutput, total = f.output, true, f.output
			if f.prompt != 0 {
				out.PromptTokens, out.UsagePrompt = f.prompt, true
			}
		}
	}
	var count func(string) int
	if c.tok != nil {
		count = func(s string) int { return c.tok.Count(s) - c.special }
	}
	total = out.checkUsage(total, log.text, log.empty, log.bytes)
	log.split(out, total, count)
	if !out.UsageOutput {
		out.OutputTokens = out.FrameTokens
	}
	if out.TokenEvents == 0 || out.OutputTokens == 0 {
		out.fail(failNoTokens, fmt.Errorf("stream finished without any token (%d events)", sse.Events()))
	}
}

// clock is the time now.
func (c *client) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// SetTokenizer makes the client count each frame's tokens with t (the
// served model's tokenizer), so that a frame carrying several tokens is
// split by what its text holds; nil: none.
func (c *client) SetTokenizer(t tokenizer.Counter) {
	c.tok, c.special = t, 0
	if t != nil {
		c.special = t.Count("")
	}
}

func (o *output) fail(kind failureKind, err error) {
	o.Failure = kind
	o.Error = err.Error()
}

// classify maps a transport error to a failure kind; other is the kind when
// it is neither a timeout nor a cancellation.
func classify(ctx context.Context, err error, other failureKind) failureKind {
	if b := boundOf(ctx); b != nil {
		return b.kind()
	}
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return failCancelled
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return failTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return failTimeout
	}
	return other
}
