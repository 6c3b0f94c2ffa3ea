package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
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
// /stop_profile, GET /metrics (Prometheus text, ATOM's metric names) and
// GET /server_info. Errors are 400 {"error":{"message","type","code"}} for
// a request naming another model, a non-string prompt or bad fields.
//
// A streamed completion sends one data: frame per engine step that produced
// a token (Config.MergeFrames: per K tokens), the last one carrying the
// finish reason, then ATOM's extra frame with empty text and finish_reason
// "stop", then a usage frame, then data: [DONE]; Config.Release picks the
// release whose exact bytes these are (see Release). Output tokens are
// short words from a fixed vocabulary, each with a leading space, so each
// token re-counts as one token. Without ignore_eos a request ends at a
// simulated end-of-sequence after L tokens, L = 16 + FNV-1a(prompt) mod 241;
// with it, after exactly max_tokens (default 256, like ATOM).
//
// /stop_profile waits for the export (at most Config.ProfilerTimeout, then
// 500) and lists the traces in "traces" (Config.AsyncStop: it answers at
// once, as older releases do). The profiler runs on the engine goroutine,
// as ATOM's utility commands do: while a trace is exported no step runs.
// Connections idle for Config.KeepAlive are closed.
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

	// An ATOM stand-in's /metrics snapshot, refreshed every MetricsRefresh.
	metricsMu    sync.Mutex
	metricsSnap  metricsSnapshot
	metricsStamp time.Time // the snapshot's refresh; zero: none yet
	metricsStart time.Time
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
	srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: s.cfg.timeouts.header, ReadTimeout: s.cfg.timeouts.read,
		IdleTimeout: s.cfg.KeepAlive, MaxHeaderBytes: 64 << 10,
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
	if s.cfg.MarkTrace && s.cfg.EnforceEager {
		fmt.Fprintln(s.cfg.Log, "serve-sim: --mark-trace with --enforce-eager: no graphs are captured, so no capture traces are written")
	}

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
	mux.HandleFunc("POST /v1/completions", s.post(s.ready(s.completions)))
	mux.HandleFunc("POST /v1/chat/completions", s.post(s.ready(s.chatCompletions)))
	paths := []string{"/health", "/v1/models", "/v1/completions", "/v1/chat/completions", "/server_info"}
	// vLLM registers its profiling routes only when a profiler is
	// configured; the vLLM and SGLang stand-ins serve no /metrics.
	if s.cfg.Personality != PersonalityVLLM || s.cfg.ProfilerDir != "" {
		mux.HandleFunc("POST /start_profile", s.post(jsonOrEmpty(s.ready(s.startProfile))))
		mux.HandleFunc("POST /stop_profile", s.post(jsonOrEmpty(s.ready(s.stopProfile))))
		paths = append(paths, "/start_profile", "/stop_profile")
	}
	if p := s.cfg.Personality; p != PersonalityVLLM && p != PersonalitySGLang {
		mux.HandleFunc("GET /metrics", s.ready(s.metrics))
		paths = append(paths, "/metrics")
	}
	mux.HandleFunc("GET /server_info", s.ready(s.serverInfo))
	mux.HandleFunc("GET /debug/telemetry", s.ready(s.telemetry))
	// FastAPI's replies to a wrong method and to an unknown path.
	for _, p := range paths {
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

// post guards the POST endpoints against web pages: a request that names
// the server by a foreign host name (DNS rebinding) or comes from a foreign
// Origin is refused (403), and a body must be application/json (415), which
// a browser cannot send cross-origin without asking first. The body is
// read whole, within the connection's read deadline, and checked to be
// JSON before h acts: a /start_profile whose chunked body never ends
// starts nothing.
func (s *Server) post(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if msg := foreign(r); msg != "" {
			writeError(w, http.StatusForbidden, msg, "ForbiddenError")
			return
		}
		if ct := r.Header.Get("Content-Type"); ct != "" || r.ContentLength != 0 {
			if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
				writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q: POST bodies must be application/json (curl: -H 'Content-Type: application/json')", ct), "UnsupportedMediaTypeError")
				return
			}
		}
		body, ok := s.readBody(w, r)
		if !ok {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h(w, r)
	}
}

// jsonOrEmpty guards the endpoints that take no body: one that is sent
// must be JSON (the completions parse theirs).
func jsonOrEmpty(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body) // read whole by post
		if len(bytes.TrimSpace(body)) > 0 && !json.Valid(body) {
			writeError(w, http.StatusBadRequest, "the request body is not valid JSON", "BadRequestError")
			return
		}
		h(w, r)
	}
}

// readBody reads r's body, at most bodyLimit bytes, within the
// connection's read deadline (Config's read timeout, from the request's
// start); it answers the error itself.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	limit := s.bodyLimit()
	tooLarge := func() {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is larger than %d bytes, more than a prompt of max_model_len %d tokens needs", limit, s.cfg.MaxModelLen), "BadRequestError")
	}
	if r.ContentLength > limit {
		tooLarge()
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		tooLarge()
		return nil, false
	}
	if err != nil {
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			err = fmt.Errorf("it did not end within %s of the request's start", s.cfg.timeouts.read)
		}
		writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error(), "BadRequestError")
		return nil, false
	}
	return body, true
}

// foreign says why r comes from somewhere other than this machine's
// clients, or "" when it does not.
func foreign(r *http.Request) string {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host != "" && !localName(host) {
		return fmt.Sprintf("Host %q is not a name of this server: use its IP address, localhost or the machine's host name (a web page must not reach the engine through a DNS name of its own)", r.Host)
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return fmt.Sprintf("Origin %q is not this server (%s): POST endpoints do not answer web pages of other sites", o, r.Host)
		}
	}
	return ""
}

// localName: host is an IP address, localhost or this machine's name.
func localName(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if net.ParseIP(host) != nil || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	name, err := os.Hostname()
	if err != nil {
		return false
	}
	name = strings.ToLower(name)
	short, _, _ := strings.Cut(name, ".")
	return host == name || host == short
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
	started := s.cfg.clock.Now()
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.ProfilerTimeout)
	defer cancel()
	dirs, err := s.eng.profile(ctx, false, write)
	if errors.Is(err, context.DeadlineExceeded) {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("Failed to stop profiling: the trace export did not finish within %s (ATOM_PROFILER_TIMEOUT)", s.cfg.ProfilerTimeout), "InternalServerError")
		return
	}
	if errors.Is(err, errNotProfiling) {
		writeError(w, http.StatusBadRequest, "Failed to stop profiling: the profiler is not running: POST /start_profile first", "BadRequestError")
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "Failed to stop profiling: "+err.Error(), "InternalServerError")
		return
	}
	fmt.Fprintf(s.cfg.Log, "serve-sim: profiling stopped, traces in %v\n", dirs)
	if p := s.cfg.Personality; p == PersonalityVLLM || p == PersonalitySGLang {
		w.WriteHeader(http.StatusOK) // their replies list no traces
		return
	}
	const msg = "Profiling stopped. Trace files generated."
	if s.cfg.Release == ReleaseLegacy {
		if dirs == nil {
			dirs = []string{}
		}
		writeJSON(w, http.StatusOK, struct {
			Status  string   `json:"status"`
			Message string   `json:"message"`
			Traces  []string `json:"traces"`
		}{"success", msg, dirs})
		return
	}
	type trace struct {
		TraceDir string  `json:"trace_dir"`
		Elapsed  float64 `json:"elapsed"`
	}
	elapsed := s.cfg.clock.Now().Sub(started).Seconds()
	traces := make([]trace, len(dirs))
	for i, d := range dirs {
		traces[i] = trace{d, float64(int64(elapsed*1e3+0.5)) / 1e3}
	}
	writeJSON(w, http.StatusOK, struct {
		Status  string  `json:"status"`
		Message string  `json:"message"`
		Traces  []trace `json:"traces"`
	}{"success", msg, traces})
}

// metrics answers GET /metrics in Prometheus text format with the names
// ATOM's exporter uses (counters carry the _total suffix the Prometheus
// client library adds).
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	m, stamp := s.metricsNow()
	var b []byte
	put := func(name, typ, help string, v float64) {
		b = fmt.Appendf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		if typ == "counter" {
			name += "_total"
		}
		b = fmt.Appendf(b, "%s %s\n", name, strconv.FormatFloat(v, 'g', -1, 64))
	}
	total := float64(s.cfg.KVBlocks)
	put("atom:requests_running", "gauge", "Number of requests currently running across data-parallel ranks.", float64(m.running))
	put("atom:requests_waiting", "gauge", "Number of requests waiting across data-parallel ranks.", float64(m.waiting))
	put("atom:kv_cache_blocks_used", "gauge", "Number of allocated KV-cache blocks.", float64(m.kvBlocks))
	put("atom:kv_cache_blocks_free", "gauge", "Number of free KV-cache blocks.", max(total-float64(m.kvBlocks), 0))
	put("atom:kv_cache_blocks_total", "gauge", "Total number of KV-cache blocks.", total)
	put("atom:kv_cache_usage_ratio", "gauge", "Fraction of KV-cache blocks currently allocated.", min(float64(m.kvBlocks)/total, 1))
	put("atom:requests_finished", "counter", "Number of requests completed by the scheduler.", float64(m.finished))
	put("atom:prompt_tokens", "counter", "Number of prompt tokens in completed requests.", float64(m.promptTokens))
	put("atom:generation_tokens", "counter", "Number of generated tokens in completed requests.", float64(m.generationTokens))
	put("atom:preemptions", "counter", "Number of scheduler preemptions.", 0)
	put("atom:prefix_cache_requests", "counter", "Number of prefill requests observed by prefix-cache accounting.", float64(m.prefills))
	put("atom:prefix_cache_cached_tokens", "counter", "Number of prompt tokens served from the admitted prefix cache.", 0)
	put("atom:prefix_cache_hit_ratio", "gauge", "Admitted prefix-cache token hit ratio.", 0)
	if !stamp.IsZero() {
		put("atom:metrics_last_refresh_timestamp_seconds", "gauge", "Unix timestamp of the last successful runtime metrics refresh.", float64(stamp.UnixNano())/1e9)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write(b)
}

// metricsNow is what /metrics reports: the engine's figures now, or for
// an ATOM stand-in the snapshot of the last refresh (ATOM's API server
// refreshes it every 5 s, on the interval from its start) and its time.
func (s *Server) metricsNow() (metricsSnapshot, time.Time) {
	if s.cfg.Personality != PersonalityATOM {
		return s.eng.metrics(), time.Time{}
	}
	s.metricsMu.Lock()
	defer s.metricsMu.Unlock()
	now := time.Now()
	if s.metricsStart.IsZero() {
		s.metricsStart = now
	}
	due := s.metricsStart.Add(now.Sub(s.metricsStart).Truncate(s.cfg.MetricsRefresh))
	if s.metricsStamp.IsZero() || due.After(s.metricsStamp) {
		s.metricsSnap, s.metricsStamp = s.eng.metrics(), due
	}
	return s.metricsSnap, s.metricsStamp
}

// serverInfo answers GET /server_info: the engine's configuration.
func (s *Server) serverInfo(w http.ResponseWriter, r *http.Request) {
	sizes := s.cfg.CudagraphCaptureSizes
	if sizes == nil {
		sizes = []int{}
	}
	writeJSON(w, http.StatusOK, struct {
		Model                 string `json:"model"`
		Engine                string `json:"engine"`
		Release               string `json:"atom_release"`
		MaxNumSeqs            int    `json:"max_num_seqs"`
		MaxNumBatchedTokens   int    `json:"max_num_batched_tokens"`
		CudagraphCaptureSizes []int  `json:"cudagraph_capture_sizes"`
		EnforceEager          bool   `json:"enforce_eager"`
		KVCacheBlocks         int    `json:"kv_cache_blocks"`
		BlockSize             int    `json:"block_size"`
		ReasoningTokens       int    `json:"reasoning_tokens"`
		MergeFrames           int    `json:"merge_frames"`
	}{s.cfg.Model, "serve-sim", string(s.cfg.Release), s.cfg.MaxNumSeqs, s.cfg.MaxNumBatchedTokens, sizes,
		s.cfg.EnforceEager, s.cfg.KVBlocks, kvBlockSize, s.cfg.ReasoningTokens, s.cfg.MergeFrames})
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
	if len(req.Prompt) == 0 || string(req.Prompt) == "null" || json.Unmarshal(req.Prompt, &prompt) != nil {
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

// bodyLimit is the largest request body: what a prompt of MaxModelLen
// tokens needs, at up to 24 bytes a token (a token of several UTF-8
// characters written as \u escapes), plus room for the other fields.
func (s *Server) bodyLimit() int64 { return 64<<10 + 24*int64(s.cfg.MaxModelLen) }

// parse reads the body and checks the fields both endpoints share.
func (s *Server) parse(w http.ResponseWriter, r *http.Request) (genRequest, bool) {
	var req genRequest
	body, ok := s.readBody(w, r)
	if !ok {
		return req, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "the request body is not valid JSON for this endpoint: "+err.Error(), "BadRequestError")
		return req, false
	}
	if rest := bytes.TrimLeft(body[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("the request body has data after its JSON object, at byte %d: send one JSON object", len(body)-len(rest)), "BadRequestError")
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
	if promptTokens >= s.cfg.MaxModelLen {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("This model's maximum context length is %d tokens. However, your prompt has %d tokens. Please reduce the length of the prompt.", s.cfg.MaxModelLen, promptTokens), "BadRequestError")
		return
	}
	maxTokens = min(maxTokens, s.cfg.MaxModelLen-promptTokens)
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

// stream writes the SSE frames of a request as its steps complete, in the
// configured release's format.
func (s *Server) stream(w http.ResponseWriter, ctx context.Context, er *request, id string, created int64, chat bool) {
	fm := newFrameMaker(s.cfg.Release, chat, id, created, s.cfg.Model)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	buf := make([]byte, 0, 1024)
	opened := !chat
	if chat && fm.opensEarly() {
		buf = fm.appendOpen(buf)
		opened = true
	} else if err := rc.Flush(); err != nil { // headers go out before the first token, as uvicorn sends them
		er.aborted.Store(true)
		return
	}
	g := frameGroup{fm: fm, per: max(s.cfg.MergeFrames, 1)}
	sent := 0
	for {
		if len(buf) > 0 {
			rc.SetWriteDeadline(time.Now().Add(s.cfg.timeouts.write))
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
			if !opened {
				buf = fm.appendOpen(buf)
				opened = true
			}
			text := tokenText(er.seq, sent)
			if e := s.cfg.EmptyTokenEvery; e > 0 && (sent+1)%e == 0 && sent+1 < er.target {
				g.carry, text = text, "" // the detokenizer holds a split character back
			} else {
				text, g.carry = g.carry+text, ""
			}
			last := done && !failed && sent == n-1 // stays pending for the finish reason
			buf = g.add(buf, text, chat && sent < s.cfg.ReasoningTokens, last)
		}
		if !done {
			continue
		}
		if !s.mayComplete() {
			s.awaitCrash(ctx)
			return
		}
		if failed {
			buf = g.flush(buf, "")
			buf = fm.appendStreamError(buf, fmt.Sprintf("simulated engine failure after %d tokens (stream-error-rate)", n))
		} else {
			buf = g.flush(buf, fm.lastContentFinish(er.finish == "length"))
			buf = fm.appendChoice(buf, "", false, "stop")
			buf = fm.appendUsage(buf, er.promptTokens, n, 0)
		}
		buf = append(buf, doneFrame...)
		rc.SetWriteDeadline(time.Now().Add(s.cfg.timeouts.write))
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

// frameGroup gathers the tokens of one frame: up to per tokens of one
// channel (reasoning or content).
type frameGroup struct {
	fm        *frameMaker
	per       int
	n         int
	text      []byte
	reasoning bool
	carry     string // text of a token sent as "" (split character)
}

// add appends a token, writing the frame when it is full (unless the token
// is the stream's last) or when the channel changes.
func (g *frameGroup) add(b []byte, text string, reasoning, last bool) []byte {
	if g.n > 0 && g.reasoning != reasoning {
		b = g.flush(b, "")
	}
	g.reasoning = reasoning
	g.text = append(g.text, text...)
	g.n++
	if g.n >= g.per && !last {
		b = g.flush(b, "")
	}
	return b
}

// flush writes the pending frame, if any, with a finish reason ("" null).
func (g *frameGroup) flush(b []byte, finish string) []byte {
	if g.n == 0 {
		return b
	}
	b = g.fm.appendChoice(b, string(g.text), g.reasoning, finish)
	g.n, g.text = 0, g.text[:0]
	return b
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
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.timeouts.write))
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
