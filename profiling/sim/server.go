package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrCrashed is what Serve returns after CrashAfterRequests ended the server
// (when Config.Exit returned instead of ending the process).
var ErrCrashed = errors.New("simulated engine crashed (crash-after-requests)")

// Server is one simulated ATOM server. It answers GET /health
// ({"status":"ok"}; 503 until ready), GET /v1/models, POST /v1/completions
// and /v1/chat/completions (streamed or not), POST /start_profile and
// /stop_profile. Errors are 400 {"error":{"message","type","code"}} for a
// request naming another model, a non-string prompt or bad fields.
//
// A streamed completion sends one data: frame per engine step that produced
// a token (the last one carries finish_reason "length" or "stop"), then
// ATOM's extra frame with empty text and finish_reason "stop", then a usage
// frame without choices, then data: [DONE]; a chat stream starts with an
// empty-delta frame. Frames use Python's json.dumps spacing, as ATOM's do.
// Output tokens are short words from a fixed vocabulary, each with a leading
// space, so each delta re-counts as one token. Without ignore_eos a request
// ends at a simulated end-of-sequence after L tokens, L = 16 + FNV-1a(prompt)
// mod 241; with it, after exactly max_tokens (default 256, like ATOM).
//
// /stop_profile waits for the export and lists the trace directories in
// "traces" (Config.AsyncStop: it answers at once, as older releases do). The
// profiler runs on the engine goroutine, as ATOM's utility commands do:
// while a trace is exported no step runs.
type Server struct {
	cfg Config
	eng *engine

	readyAt   atomic.Int64 // wall ns from which /health is ok; 0 before Serve
	nextSeq   atomic.Uint64
	completed atomic.Int64
	crashOnce sync.Once
	crashed   chan struct{}
	crashMu   sync.Mutex
	sent      int               // replies of allowed completions written (≤ CrashAfterRequests)
	pending   map[net.Conn]bool // connections whose completed reply is still leaving
	idPrefix  string
}

// New checks cfg and builds a server; Serve runs it.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, crashed: make(chan struct{}), pending: map[net.Conn]bool{}}
	b := cfg.backend
	if b == nil {
		if b, err = newSynthBackend(&s.cfg); err != nil {
			return nil, err
		}
	}
	s.eng = newEngine(&s.cfg, b)
	s.idPrefix = fmt.Sprintf("%016x", uint64(cfg.clock.Now().UnixNano())^cfg.Seed)
	return s, nil
}

// stepCounts reports the steps the engine executed so far.
func (s *Server) stepCounts() stepCounts { return s.eng.stepCounts() }

// Serve answers HTTP on ln until ctx ends (then in-flight requests get
// ShutdownGrace to finish) or a simulated crash; it returns nil after a
// graceful stop and ErrCrashed after a crash whose Exit returned. A Server
// serves once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	now := s.cfg.clock.Now()
	if s.cfg.NeverReady {
		s.readyAt.Store(-1)
	} else {
		s.readyAt.Store(now.Add(s.cfg.ReadyDelay).UnixNano())
	}
	engCtx, stopEngine := context.WithCancel(context.Background())
	engDone := make(chan struct{})
	go func() {
		defer close(engDone)
		s.eng.run(engCtx)
	}()
	defer func() {
		stopEngine()
		<-engDone
	}()

	fresh := &freshConns{m: map[net.Conn]time.Time{}}
	srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 30 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) },
		// A reply has left when its connection goes idle (or closes).
		ConnState: func(c net.Conn, st http.ConnState) {
			fresh.track(c, st)
			if st == http.StateIdle || st == http.StateClosed {
				s.replyLeft(c)
			}
		}}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(s.cfg.Log, "serve-sim: serving %q on http://%s (max_num_seqs %d, time scale %g)\n",
		s.cfg.Model, ln.Addr(), s.cfg.MaxNumSeqs, s.cfg.TimeScale)

	select {
	case <-ctx.Done():
		fmt.Fprintln(s.cfg.Log, "serve-sim: shutting down")
		sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
		defer cancel()
		// net/http waits 5 s before it counts a connection that has not
		// sent a request as idle. Once the listener is closed, a client's
		// spare connections are closed as soon as they have been quiet for
		// a moment (one whose first request is on its way gets to send it).
		shutDone := make(chan struct{})
		defer close(shutDone)
		srv.RegisterOnShutdown(func() { go fresh.closeQuiet(shutDone) })
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
		return nil
	case <-s.crashed:
		srv.Close()
		return ErrCrashed
	case err := <-errc:
		return fmt.Errorf("serving HTTP: %w", err)
	}
}

// freshConns are the connections that have not sent a request yet, with
// when they were accepted.
type freshConns struct {
	mu sync.Mutex
	m  map[net.Conn]time.Time
}

func (f *freshConns) track(c net.Conn, st http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st == http.StateNew {
		f.m[c] = time.Now()
	} else {
		delete(f.m, c)
	}
}

// quietFor is how long a fresh connection may stay silent at shutdown.
const quietFor = 100 * time.Millisecond

// closeQuiet closes fresh connections once they have been silent for
// quietFor, until done is closed.
func (f *freshConns) closeQuiet(done <-chan struct{}) {
	tick := time.NewTicker(quietFor / 4)
	defer tick.Stop()
	for {
		f.mu.Lock()
		for c, at := range f.m {
			if time.Since(at) >= quietFor {
				c.Close()
				delete(f.m, c)
			}
		}
		f.mu.Unlock()
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}

// handler is the HTTP surface; it needs Serve's engine to answer completions.
func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /v1/models", s.ready(s.models))
	mux.HandleFunc("POST /v1/completions", s.ready(s.completions))
	mux.HandleFunc("POST /v1/chat/completions", s.ready(s.chatCompletions))
	mux.HandleFunc("POST /start_profile", s.ready(s.startProfile))
	mux.HandleFunc("POST /stop_profile", s.ready(s.stopProfile))
	// FastAPI's replies to a wrong method and to an unknown path.
	for _, p := range []string{"/health", "/v1/models", "/v1/completions", "/v1/chat/completions", "/start_profile", "/stop_profile"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusMethodNotAllowed)
			io.WriteString(w, `{"detail":"Method Not Allowed"}`)
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"detail":"Not Found"}`)
	})
	return mux
}

func (s *Server) isReady() bool {
	at := s.readyAt.Load()
	return at > 0 && s.cfg.clock.Now().UnixNano() >= at
}

func (s *Server) ready(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.isReady() {
			writeError(w, http.StatusServiceUnavailable, "the engine is still starting", "ServiceUnavailableError")
			return
		}
		h(w, r)
	}
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if !s.isReady() {
		writeError(w, http.StatusServiceUnavailable, "the engine is still starting", "ServiceUnavailableError")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	type card struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	writeJSON(w, http.StatusOK, struct {
		Object string `json:"object"`
		Data   []card `json:"data"`
	}{"list", []card{{s.cfg.Model, "model", time.Now().Unix(), "atom"}}})
}

// statusReply is ATOM's profiler reply.
type statusReply struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

func (s *Server) startProfile(w http.ResponseWriter, r *http.Request) {
	if _, err := s.eng.profile(r.Context(), true, true); err != nil {
		writeError(w, http.StatusInternalServerError, "Failed to start profiling: "+err.Error(), "InternalServerError")
		return
	}
	fmt.Fprintln(s.cfg.Log, "serve-sim: profiling started")
	writeJSON(w, http.StatusOK, statusReply{"success", "Profiling started"})
}

func (s *Server) stopProfile(w http.ResponseWriter, r *http.Request) {
	write := !s.cfg.NoTraceOnStop
	if s.cfg.AsyncStop {
		// Older ATOM: the engine exports after the reply; errors only reach the log.
		go func() {
			if _, err := s.eng.profile(context.Background(), false, write); err != nil {
				fmt.Fprintf(s.cfg.Log, "serve-sim: stop_profile: %v\n", err)
			}
		}()
		writeJSON(w, http.StatusOK, statusReply{"success", "Profiling stopped. Trace files generated."})
		return
	}
	dirs, err := s.eng.profile(r.Context(), false, write)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "Failed to stop profiling: "+err.Error(), "InternalServerError")
		return
	}
	if dirs == nil {
		dirs = []string{}
	}
	fmt.Fprintf(s.cfg.Log, "serve-sim: profiling stopped, traces in %v\n", dirs)
	writeJSON(w, http.StatusOK, struct {
		Status  string   `json:"status"`
		Message string   `json:"message"`
		Traces  []string `json:"traces"`
	}{"success", "Profiling stopped. Trace files generated.", dirs})
}

// genRequest is the body of both completion endpoints.
type genRequest struct {
	Model     *string         `json:"model"`
	Prompt    json.RawMessage `json:"prompt"`
	Messages  json.RawMessage `json:"messages"`
	MaxTokens *int            `json:"max_tokens"`
	IgnoreEOS bool            `json:"ignore_eos"`
	Stream    bool            `json:"stream"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	req, ok := s.parse(w, r)
	if !ok {
		return
	}
	var prompt string
	if len(req.Prompt) == 0 || json.Unmarshal(req.Prompt, &prompt) != nil {
		writeError(w, http.StatusBadRequest, "prompt: a string is required (ATOM accepts only string prompts)", "BadRequestError")
		return
	}
	s.generate(w, r, req, prompt, s.countPrompt(prompt), false)
}

// countPrompt counts a completion prompt: with the stand-in tokenizer, or
// with Config.Tokenizer when given.
func (s *Server) countPrompt(prompt string) int {
	if s.cfg.Tokenizer != nil {
		return max(s.cfg.Tokenizer.Count(prompt), 1) // an empty prompt still takes a step's token, as with the stand-in
	}
	return CountTokens(prompt)
}

// countChat counts chat messages: with the stand-in tokenizer each message
// is "ROLE CONTENT"; with Config.Tokenizer the messages are rendered with a
// ChatML template, as a served model's chat template would, and counted.
func (s *Server) countChat(msgs []chatMessage) int {
	if s.cfg.Tokenizer == nil {
		tokens := 0
		for _, m := range msgs {
			tokens += CountTokens(m.Role + " " + m.Content)
		}
		return max(tokens, 1)
	}
	var sb strings.Builder
	for _, m := range msgs {
		sb.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
	}
	sb.WriteString("<|im_start|>assistant\n")
	return s.cfg.Tokenizer.Count(sb.String())
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	req, ok := s.parse(w, r)
	if !ok {
		return
	}
	raw := req.Messages
	if len(raw) == 0 || string(raw) == "null" {
		raw = req.Prompt // ATOM accepts 'prompt' as an alias of 'messages'
	}
	var msgs []chatMessage
	if len(raw) == 0 || string(raw) == "null" {
		writeError(w, http.StatusBadRequest, "Either 'messages' or 'prompt' field is required", "BadRequestError")
		return
	}
	if err := json.Unmarshal(raw, &msgs); err != nil {
		writeError(w, http.StatusBadRequest, "messages: a list of {role, content} with string content is required", "BadRequestError")
		return
	}
	var sb strings.Builder
	for _, m := range msgs {
		sb.WriteString(m.Role)
		sb.WriteByte('\n')
		sb.WriteString(m.Content)
		sb.WriteByte('\n')
	}
	s.generate(w, r, req, sb.String(), s.countChat(msgs), true)
}

// parse reads the body and checks the fields both endpoints share.
func (s *Server) parse(w http.ResponseWriter, r *http.Request) (genRequest, bool) {
	var req genRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error(), "BadRequestError")
		return req, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "the request body is not valid JSON for this endpoint: "+err.Error(), "BadRequestError")
		return req, false
	}
	if req.Model != nil && *req.Model != s.cfg.Model {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Requested model '%s' does not match server model '%s'", *req.Model, s.cfg.Model), "BadRequestError")
		return req, false
	}
	if req.MaxTokens != nil && *req.MaxTokens < 1 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("max_tokens must be at least 1, got %d", *req.MaxTokens), "BadRequestError")
		return req, false
	}
	return req, true
}

// generate submits the request to the engine and answers it, streamed or whole.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, req genRequest, prompt string, promptTokens int, chat bool) {
	maxTokens := defaultMaxTokens
	if req.MaxTokens != nil {
		maxTokens = *req.MaxTokens
	}
	target, finish := maxTokens, "length"
	if !req.IgnoreEOS {
		if eos := eosLength(prompt); eos < target {
			target, finish = eos, "stop"
		}
	}
	seq := s.nextSeq.Add(1)
	failAt := 0
	if req.Stream && s.cfg.StreamErrorRate > 0 && s.draw(seq) < s.cfg.StreamErrorRate {
		failAt = max(1, target/2)
	}
	now := s.cfg.clock.Now()
	er := newRequest(seq, promptTokens, target, finish, failAt, now)
	ctx := r.Context()
	if err := s.eng.add(ctx, er); err != nil {
		return
	}
	prefix := "cmpl-"
	if chat {
		prefix = "chatcmpl-"
	}
	id := fmt.Sprintf("%s%s%016x", prefix, s.idPrefix, seq)
	if req.Stream {
		s.stream(w, ctx, er, id, now.Unix(), chat)
	} else {
		s.whole(w, ctx, er, id, now, chat)
	}
}

// draw is a deterministic number in [0,1) for request seq.
func (s *Server) draw(seq uint64) float64 {
	h := fnv.New64a()
	var b [16]byte
	for i := range 8 {
		b[i] = byte(seq >> (8 * i))
		b[8+i] = byte(s.cfg.Seed >> (8 * i))
	}
	h.Write(b[:])
	return float64(h.Sum64()>>11) / (1 << 53)
}

// stream writes the SSE frames of a request as its steps complete.
func (s *Server) stream(w http.ResponseWriter, ctx context.Context, er *request, id string, created int64, chat bool) {
	fm := newFrameMaker(chat, id, created, s.cfg.Model)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	buf := make([]byte, 0, 1024)
	if chat {
		buf = fm.appendDelta(buf, "", "") // ATOM's initial empty chat chunk
	} else if err := rc.Flush(); err != nil { // headers go out before the first token, as uvicorn sends them
		er.aborted.Store(true)
		return
	}
	sent := 0
	for {
		if len(buf) > 0 {
			if _, err := w.Write(buf); err != nil {
				er.aborted.Store(true)
				return
			}
			if err := rc.Flush(); err != nil {
				er.aborted.Store(true)
				return
			}
			buf = buf[:0]
		}
		select {
		case <-er.notify:
		case <-ctx.Done():
			er.aborted.Store(true)
			return
		}
		n, done, failed := er.snapshot()
		for ; sent < n; sent++ {
			finish := ""
			if done && !failed && sent == n-1 {
				finish = er.finish
			}
			buf = fm.appendDelta(buf, tokenText(er.seq, sent), finish)
		}
		if !done {
			continue
		}
		if !s.mayComplete() {
			s.awaitCrash(ctx)
			return
		}
		if failed {
			buf = appendStreamError(buf, fmt.Sprintf("simulated engine failure after %d tokens (stream-error-rate)", n))
		} else {
			buf = fm.appendDelta(buf, "", "stop")
			buf = fm.appendUsage(buf, er.promptTokens, n)
		}
		buf = append(buf, doneFrame...)
		if _, err := w.Write(buf); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		s.finished(ctx)
		return
	}
}

// whole waits for the request to finish and writes ATOM's non-streaming reply.
func (s *Server) whole(w http.ResponseWriter, ctx context.Context, er *request, id string, start time.Time, chat bool) {
	var n int
	for {
		select {
		case <-er.notify:
		case <-ctx.Done():
			er.aborted.Store(true)
			return
		}
		var done bool
		if n, done, _ = er.snapshot(); done {
			break
		}
	}
	var text strings.Builder
	for i := range n {
		text.WriteString(tokenText(er.seq, i))
	}
	first, last := er.firstAt.Load(), er.lastAt.Load()
	ttft := float64(first-start.UnixNano()) / 1e9
	tpot := 0.0
	if n > 1 {
		tpot = float64(last-first) / 1e9 / float64(n-1)
	}
	latency := s.cfg.clock.Now().Sub(start).Seconds()
	round4 := func(v float64) float64 { return float64(int64(v*1e4+0.5)) / 1e4 }
	type usage struct {
		PromptTokens     int     `json:"prompt_tokens"`
		CompletionTokens int     `json:"completion_tokens"`
		TotalTokens      int     `json:"total_tokens"`
		TTFT             float64 `json:"ttft_s"`
		TPOT             float64 `json:"tpot_s"`
		Latency          float64 `json:"latency_s"`
	}
	type textChoice struct {
		Index        int    `json:"index"`
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
	}
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	type chatChoice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		FinishReason string  `json:"finish_reason"`
		Text         string  `json:"text"`
	}
	type reply struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		Model   string `json:"model"`
		Choices []any  `json:"choices"`
		Usage   usage  `json:"usage"`
	}
	// ATOM's field order: completion choices {index, text, finish_reason},
	// chat choices {index, message, finish_reason, text}.
	out := reply{ID: id, Object: "text_completion", Created: start.Unix(), Model: s.cfg.Model,
		Usage: usage{er.promptTokens, n, er.promptTokens + n, round4(ttft), round4(tpot), round4(latency)}}
	if chat {
		out.Object = "chat.completion"
		out.Choices = []any{chatChoice{0, message{"assistant", text.String()}, er.finish, text.String()}}
	} else {
		out.Choices = []any{textChoice{0, text.String(), er.finish}}
	}
	if !s.mayComplete() {
		s.awaitCrash(ctx)
		return
	}
	writeJSON(w, http.StatusOK, out)
	s.finished(ctx)
}

type connKey struct{}

// mayComplete counts a request about to send its last frame; with
// CrashAfterRequests N, only the first N may, so that exactly N complete.
func (s *Server) mayComplete() bool {
	n := s.completed.Add(1)
	return s.cfg.CrashAfterRequests == 0 || n <= int64(s.cfg.CrashAfterRequests)
}

// awaitCrash holds a reply back until the crash cuts its connection.
func (s *Server) awaitCrash(ctx context.Context) {
	select {
	case <-s.crashed:
	case <-ctx.Done():
	}
}

// finished runs after a completed request's reply was written. With
// CrashAfterRequests N, the server crashes once all N replies have left.
func (s *Server) finished(ctx context.Context) {
	if s.cfg.CrashAfterRequests == 0 {
		return
	}
	c, ok := ctx.Value(connKey{}).(net.Conn)
	s.crashMu.Lock()
	s.sent++
	if ok {
		s.pending[c] = true
	}
	fire := s.sent == s.cfg.CrashAfterRequests && len(s.pending) == 0
	s.crashMu.Unlock()
	if fire {
		s.crash()
	}
}

func (s *Server) replyLeft(c net.Conn) {
	if s.cfg.CrashAfterRequests == 0 {
		return
	}
	s.crashMu.Lock()
	fire := false
	if s.pending[c] {
		delete(s.pending, c)
		fire = s.sent == s.cfg.CrashAfterRequests && len(s.pending) == 0
	}
	s.crashMu.Unlock()
	if fire {
		s.crash()
	}
}

func (s *Server) crash() {
	s.crashOnce.Do(func() {
		fmt.Fprintf(s.cfg.Log, "serve-sim: simulated crash after %d requests (exit status %d)\n", s.cfg.CrashAfterRequests, ExitCrash)
		s.cfg.Exit(ExitCrash)
		close(s.crashed)
	})
}

// writeError writes ATOM's error shape.
func writeError(w http.ResponseWriter, code int, msg, typ string) {
	type body struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    int    `json:"code"`
	}
	writeJSON(w, code, struct {
		Error body `json:"error"`
	}{body{msg, typ, code}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":{"message":"encoding the reply failed","type":"InternalServerError","code":500}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
}
