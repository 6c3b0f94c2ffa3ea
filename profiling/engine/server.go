package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// LogFile is the name of the engine's log in the run directory.
const LogFile = "server.log"

// tailLines is how many of the log's last lines an Error carries.
const tailLines = 40

// Defaults of Options.
const (
	// defaultReadyTimeout leaves room for what a large model does before
	// it serves: loading weights, torch.compile, capturing CUDA graphs.
	defaultReadyTimeout  = 30 * time.Minute
	defaultAttachTimeout = time.Minute // engine none: the server should be up already
	defaultPollInterval  = 500 * time.Millisecond
	defaultStopGrace     = 30 * time.Second
)

// killWait bounds the wait for a process group to vanish after SIGKILL.
const killWait = 10 * time.Second

// ErrStopped is the cause of a Watch context whose engine was stopped on
// request.
var ErrStopped = errors.New("engine stopped")

// Options say how Start runs and watches an engine.
type Options struct {
	// RunDir receives LogFile (created if missing; a log already there is
	// never overwritten). Required for every engine but none.
	RunDir string
	// ReadyTimeout bounds the wait for readiness; 0: defaultReadyTimeout
	// (defaultAttachTimeout for engine none).
	ReadyTimeout time.Duration
	PollInterval time.Duration // between readiness probes; 0: DefaultPollInterval
	StopGrace    time.Duration // from SIGTERM to SIGKILL; 0: DefaultStopGrace
	// HTTPClient sends the readiness probes; nil: a client without proxy
	// or keep-alive (each probe has its own short deadline).
	HTTPClient *http.Client
	// Started, when set, is told the engine's process group as soon as
	// its process runs, before it is ready: the caller records it, so that
	// a later run can find an engine this process left behind.
	Started func(pgid int)
}

func (o Options) withDefaults(k Kind) Options {
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = defaultReadyTimeout
		if k == None {
			o.ReadyTimeout = defaultAttachTimeout
		}
	}
	if o.PollInterval <= 0 {
		o.PollInterval = defaultPollInterval
	}
	if o.StopGrace <= 0 {
		o.StopGrace = defaultStopGrace
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	}
	return o
}

// Error is a failure of an engine with what its log said last.
type Error struct {
	Kind    Kind
	Msg     string   // what happened
	Err     error    // the cause, if any
	LogPath string   // the engine's log; "" for engine none
	Tail    []string // the log's last lines (at most TailLines)
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s engine: %s", e.Kind, e.Msg)
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	switch {
	case e.LogPath == "":
	case len(e.Tail) == 0:
		fmt.Fprintf(&b, "\n(the log %s is empty)", e.LogPath)
	default:
		fmt.Fprintf(&b, "\nlast %d lines of %s:", len(e.Tail), e.LogPath)
		for _, l := range e.Tail {
			b.WriteString("\n  | " + l)
		}
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Server is a started (or attached) engine.
type Server struct {
	spec    Spec
	opts    Options
	url     string
	cmd     Command
	notes   []string
	logPath string

	proc *exec.Cmd // nil for engine none
	pgid int
	log  *os.File

	exited  chan struct{} // closed once the engine's main process is reaped
	exitErr error         // its Wait result, set before exited is closed

	mu       sync.Mutex
	exitSeen bool  // the main process was reaped
	stopping bool  // a stop was asked for while it still ran
	crash    error // its exit when nobody asked for one

	stopOnce sync.Once
	stopDone chan struct{} // closed when the whole group is gone (or given up on)
	stopErr  error
	killOnce sync.Once
	killNow  chan struct{} // closed to skip the rest of the grace period
}

// Start starts the engine spec describes (or, for engine none, attaches to
// the server at spec.URL) and returns once it serves spec.Model.
//
// Before anything starts it runs Spec.Check and refuses a port that another
// process holds. The engine's stdout and stderr go to LogFile in
// opts.RunDir, after a first line holding the command. Readiness is
// GET /health answering 200, then GET /v1/models listing spec.Model exactly
// (ATOM answers 400 to requests naming any other model, so another name is
// an error at once). On a timeout or an exit before readiness, Start stops
// the engine and fails with an *Error carrying the log's last lines.
//
// The engine runs in its own process group and ctx governs its whole life:
// when ctx ends (Ctrl-C), the group is stopped as Stop does. Callers stop
// it with Stop when done; Exited, Err and Watch tell them when it died on
// its own. Only a SIGKILL of this process escapes all of this: the engine
// then outlives it, and `kill -- -PID` (PID()) ends its group.
func Start(ctx context.Context, spec Spec, opts Options) (*Server, error) {
	notes, err := spec.Check()
	if err != nil {
		return nil, fmt.Errorf("%s engine: %w", spec.Kind, err)
	}
	opts = opts.withDefaults(spec.Kind)
	s := &Server{spec: spec.withDefaults(), opts: opts, notes: notes,
		exited: make(chan struct{}), stopDone: make(chan struct{}), killNow: make(chan struct{})}
	if spec.Kind == None {
		s.url = strings.TrimRight(spec.URL, "/")
		if err := s.waitReady(ctx); err != nil {
			return nil, err
		}
		return s, nil
	}
	if err := checkGroups(); err != nil {
		return nil, fmt.Errorf("%s engine: %w", spec.Kind, err)
	}
	if _, err = spec.Command(); err != nil {
		return nil, fmt.Errorf("%s engine: %w", spec.Kind, err)
	}
	var held *heldPort // the simulated engine's socket, bound here
	if spec.Kind == Sim {
		// A port found free and let go may be taken by any process before
		// the engine binds it; a socket bound here and inherited is the
		// engine's from the start. Port 0: any free port.
		if held, err = holdPort(s.spec.Port); err != nil {
			return nil, fmt.Errorf("%s engine: %w", spec.Kind, err)
		}
		defer held.Close()
		s.spec.Port = held.port
	} else if err := portFree(s.spec.Port); err != nil {
		return nil, fmt.Errorf("%s engine: %w", spec.Kind, err)
	}
	// Which engine is installed, and whether it knows every flag, is
	// known before it starts (Command checks the flags against it).
	if s.spec.Installed == nil {
		if s.spec.Installed, err = Identify(ctx, s.spec); err != nil {
			return nil, fmt.Errorf("%s engine: %w", spec.Kind, err)
		}
	}
	if s.cmd, err = s.spec.Command(); err != nil { // with the port bound
		return nil, fmt.Errorf("%s engine: %w", spec.Kind, err)
	}
	s.url = "http://127.0.0.1:" + strconv.Itoa(s.spec.Port)
	if opts.RunDir == "" {
		return nil, fmt.Errorf("%s engine: no run directory for %s", spec.Kind, LogFile)
	}
	if err := os.MkdirAll(opts.RunDir, 0o755); err != nil {
		return nil, fmt.Errorf("%s engine: creating the run directory: %w", spec.Kind, err)
	}
	if err := s.cmd.writeKinetoConfig(); err != nil {
		return nil, fmt.Errorf("%s engine: %w", spec.Kind, err)
	}
	s.logPath = filepath.Join(opts.RunDir, LogFile)
	s.log, err = os.OpenFile(s.logPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%s engine: %s exists already: give each run its own directory", spec.Kind, s.logPath)
		}
		return nil, fmt.Errorf("%s engine: creating the server log: %w", spec.Kind, err)
	}
	fmt.Fprintf(s.log, "# profile-model %s: starting the %s engine: %s\n", time.Now().UTC().Format(time.RFC3339), spec.Kind, s.cmd)

	s.proc = exec.Command(s.cmd.Path, s.cmd.Args...)
	s.proc.Dir = s.cmd.Dir
	s.proc.Env = s.cmd.environ
	if held != nil {
		s.proc.ExtraFiles = []*os.File{held.File}
		s.proc.Env = append(slices.Clip(s.proc.Env), ListenFDEnv+"=3")
	}
	// A file, not a pipe: processes the engine spawns may keep it open after
	// the engine exits, which must not keep anything here waiting.
	s.proc.Stdout, s.proc.Stderr = s.log, s.log
	s.proc.SysProcAttr = groupAttr()
	err = s.startProc()
	if held != nil {
		held.Close() // the engine has its own copy: the port goes with it
	}
	if err != nil {
		fmt.Fprintf(s.log, "# profile-model: the %s engine could not start: %v\n", spec.Kind, err)
		s.log.Close()
		return nil, &Error{Kind: spec.Kind, Msg: "could not start " + shellQuote(s.cmd.Path) + " (set the engine's executable, or PATH)",
			Err: err, LogPath: s.logPath, Tail: readTail(s.logPath, tailLines)}
	}
	if opts.Started != nil {
		opts.Started(s.pgid)
	}
	go func() {
		select {
		case <-ctx.Done():
			s.Stop(context.Background())
		case <-s.stopDone:
		}
	}()
	if err := s.waitReady(ctx); err != nil {
		s.Stop(context.Background())
		return nil, err
	}
	return s, nil
}

// portFree fails when something listens on port, on loopback or any
// address: the engine would fail to bind, or the probes would reach the
// other server.
func portFree(port int) error {
	for _, addr := range []string{"127.0.0.1:" + strconv.Itoa(port), ":" + strconv.Itoa(port)} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				return portTaken(port)
			}
			return fmt.Errorf("cannot listen on port %d to check that it is free: %w", port, err)
		}
		ln.Close()
	}
	return nil
}

// ListenFDEnv names the environment variable that tells the simulated
// engine which inherited file descriptor is its listening socket.
const ListenFDEnv = "PROFILE_MODEL_LISTEN_FD"

// heldPort is a loopback socket listening on port, as a file to hand on.
type heldPort struct {
	*os.File
	port int
}

// holdPort binds 127.0.0.1:port (0: any free port) for an engine to
// inherit; a port another process listens on is refused as portFree does.
func holdPort(port int) (*heldPort, error) {
	if port != 0 {
		if err := portFree(port); err != nil { // on any address, too
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, portTaken(port)
		}
		return nil, fmt.Errorf("cannot listen on port %d: %w", port, err)
	}
	defer ln.Close() // the file is a copy
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return nil, fmt.Errorf("handing on the socket of port %d: %w", port, err)
	}
	return &heldPort{File: f, port: ln.Addr().(*net.TCPAddr).Port}, nil
}

// InheritedListener is the listening socket a simulated engine was started
// with (ListenFDEnv names its descriptor), or nil when it was started
// without one. The variable is cleared so that nothing the engine starts
// takes it for its own.
func InheritedListener() (net.Listener, error) {
	v, ok := os.LookupEnv(ListenFDEnv)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(ListenFDEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q: want the number of an inherited descriptor (3 or more)", ListenFDEnv, v)
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close() // the listener holds a copy
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("%s=%d: not a listening socket: %w", ListenFDEnv, fd, err)
	}
	return ln, nil
}

func portTaken(port int) error {
	return fmt.Errorf("port %d is taken: another process listens on it; find it with `ss -ltnp 'sport = :%d'` (or `lsof -iTCP:%d -sTCP:LISTEN`), then stop it or choose another port", port, port, port)
}

// URL is the engine's base URL, e.g. http://127.0.0.1:8000.
func (s *Server) URL() string { return s.url }

// Spec is what the engine was started with, defaults filled in.
func (s *Server) Spec() Spec { return s.spec }

// Command is the process as started; zero for engine none.
func (s *Server) Command() Command { return s.cmd }

// Installed is the engine Identify found before the start; nil for the
// simulated engine and engine none.
func (s *Server) Installed() *Installed { return s.spec.Installed }

// Notes are Spec.Check's notes on settings that do less than one may think.
func (s *Server) Notes() []string { return s.notes }

// LogPath is the engine's log; "" for engine none.
func (s *Server) LogPath() string { return s.logPath }

// PID is the engine's main process, also its process group; 0 for none.
func (s *Server) PID() int { return s.pgid }

// Exited is closed once the engine's main process has exited, on request or
// not; it never closes for engine none.
func (s *Server) Exited() <-chan struct{} {
	if s.proc == nil {
		return nil
	}
	return s.exited
}

// Err is the engine's exit when nobody asked for one (a crash: an *Error
// with the log's last lines); nil while it runs and after Stop.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.crash
}

// Watch returns a context that ends when parent does or when the engine
// exits, with context.Cause the crash (Err) or ErrStopped. A sweep run under
// it stops as soon as the engine dies.
func (s *Server) Watch(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	if s.proc != nil {
		go func() {
			select {
			case <-s.exited:
				if err := s.Err(); err != nil {
					cancel(err)
				} else {
					cancel(ErrStopped)
				}
			case <-ctx.Done():
			}
		}()
	}
	return ctx, func() { cancel(context.Canceled) }
}

// Stop ends the engine's whole process group: SIGTERM, then SIGKILL to
// whatever is left after the grace period (at once when ctx ends first),
// and returns once no process of the group runs. It fails only when
// processes survive SIGKILL, naming them. Processes that leave the group
// on purpose (a new session, as a Ray cluster's daemons do) are beyond its
// reach. Stop may be called many times and concurrently; engine none has
// nothing to stop.
func (s *Server) Stop(ctx context.Context) error {
	if s.proc == nil {
		return nil
	}
	s.mu.Lock()
	if !s.exitSeen {
		s.stopping = true
	}
	s.mu.Unlock()
	s.beginStop()
	select {
	case <-s.stopDone:
	case <-ctx.Done():
		s.killOnce.Do(func() { close(s.killNow) })
		<-s.stopDone
	}
	return s.stopErr
}

func (s *Server) beginStop() { s.stopOnce.Do(func() { go s.shutdown() }) }

// reap waits for the main process; an exit nobody asked for is a crash,
// and whatever it left in its group is stopped.
// startProc starts the engine's process and reaps it when it exits. Where
// the engine dies with this process (Linux's parent-death signal), the
// signal follows the thread that started it, not the process: the start
// and the wait share one goroutine locked to its thread until the engine
// has exited.
func (s *Server) startProc() error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine, after the engine
		err := s.proc.Start()
		if err == nil {
			s.pgid = s.proc.Process.Pid // before reap can read it
		}
		started <- err
		if err == nil {
			s.reap()
		}
	}()
	return <-started
}

func (s *Server) reap() {
	err := s.proc.Wait()
	s.mu.Lock()
	s.exitErr = err
	s.exitSeen = true
	crashed := !s.stopping
	if crashed {
		s.crash = &Error{Kind: s.spec.Kind, Msg: fmt.Sprintf("exited unexpectedly (pid %d, %s)", s.pgid, exitDesc(err)),
			LogPath: s.logPath, Tail: readTail(s.logPath, tailLines)}
	}
	s.mu.Unlock()
	close(s.exited)
	if crashed {
		s.beginStop()
	}
}

// shutdown stops the process group and records how in the log.
func (s *Server) shutdown() {
	defer close(s.stopDone)
	t0 := time.Now()
	var how string
	switch {
	case len(groupMembers(s.pgid)) == 0:
		how = "no process of its group was left"
	default:
		if err := signalGroup(s.pgid, syscall.SIGTERM); err != nil {
			s.stopErr = fmt.Errorf("%s engine: sending SIGTERM to process group %d: %w", s.spec.Kind, s.pgid, err)
		}
		if s.waitGone(s.opts.StopGrace, s.killNow) {
			how = fmt.Sprintf("its process group stopped on SIGTERM in %.1f s", time.Since(t0).Seconds())
			break
		}
		if err := signalGroup(s.pgid, syscall.SIGKILL); err != nil {
			s.stopErr = fmt.Errorf("%s engine: sending SIGKILL to process group %d: %w", s.spec.Kind, s.pgid, err)
		}
		if s.waitGone(killWait, nil) {
			how = fmt.Sprintf("its process group was killed with SIGKILL after %.1f s (grace period %s)", time.Since(t0).Seconds(), s.opts.StopGrace)
			break
		}
		left := groupMembers(s.pgid)
		s.stopErr = fmt.Errorf("%s engine: processes %v of group %d survived SIGKILL (stuck in the GPU driver?): check them with `ps -o pid,stat,cmd -g %d` before the next run", s.spec.Kind, left, s.pgid, s.pgid)
		how = fmt.Sprintf("processes %v survived SIGKILL", left)
	}
	if s.stopErr == nil {
		<-s.exited // the group is gone, so the main process is too
	}
	s.mu.Lock()
	ended := "was stopped"
	if s.crash != nil {
		ended = "exited on its own"
	}
	if s.exitSeen {
		ended += " (" + exitDesc(s.exitErr) + ")"
	}
	s.mu.Unlock()
	fmt.Fprintf(s.log, "# profile-model %s: the %s engine %s; %s\n", time.Now().UTC().Format(time.RFC3339), s.spec.Kind, ended, how)
	s.log.Close()
}

// waitGone reports whether the process group vanished within limit (false
// as soon as early closes).
func (s *Server) waitGone(limit time.Duration, early <-chan struct{}) bool {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	exited := s.exited
	for {
		if len(groupMembers(s.pgid)) == 0 {
			return true
		}
		select {
		case <-deadline.C:
			return false
		case <-early:
			return false
		case <-exited:
			exited = nil
		case <-tick.C:
		}
	}
}

// exitDesc describes a Wait result: "exit status 3", "signal: killed".
func exitDesc(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.String()
	}
	return err.Error()
}

// waitReady polls /health, then /v1/models, until the engine serves the
// model, it exits, the deadline passes or ctx ends.
func (s *Server) waitReady(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, s.opts.ReadyTimeout)
	defer cancel()
	tick := time.NewTicker(s.opts.PollInterval)
	defer tick.Stop()
	last := "no answer yet"
	for {
		ready, reason, err := s.probe(rctx)
		if err != nil {
			return s.startErr(err.Error(), nil)
		}
		if ready {
			return nil
		}
		if reason != "" && rctx.Err() == nil { // not a probe cut short by the deadline itself
			last = reason
		}
		select {
		case <-s.Exited():
			return s.startErr(fmt.Sprintf("exited before it was ready (%s)", exitDesc(s.exitErr)), nil)
		case <-rctx.Done():
			if ctx.Err() != nil {
				return s.startErr("start interrupted before the engine was ready", context.Cause(ctx))
			}
			return s.startErr(fmt.Sprintf("not ready after %s at %s (last: %s); raise the readiness deadline if loading the model takes longer", s.opts.ReadyTimeout, s.url, last), nil)
		case <-tick.C:
		}
	}
}

func (s *Server) startErr(msg string, cause error) error {
	return &Error{Kind: s.spec.Kind, Msg: msg, Err: cause, LogPath: s.logPath, Tail: readTail(s.logPath, tailLines)}
}

// probe asks once whether the engine serves the model. A server that
// answers with another model or with something that is no model list is
// an error: waiting longer changes nothing.
func (s *Server) probe(ctx context.Context) (ready bool, reason string, err error) {
	code, body, err := s.get(ctx, "/health")
	if err != nil {
		return false, "GET /health: " + err.Error(), nil
	}
	if code != http.StatusOK {
		return false, fmt.Sprintf("GET /health: HTTP %d %s", code, snippet(body)), nil
	}
	code, body, err = s.get(ctx, "/v1/models")
	if err != nil {
		return false, "GET /v1/models: " + err.Error(), nil
	}
	if code != http.StatusOK {
		return false, fmt.Sprintf("GET /v1/models: HTTP %d %s", code, snippet(body)), nil
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return false, "", fmt.Errorf("GET %s/v1/models answered something that is not an OpenAI model list (%s): is another kind of server on this port?", s.url, snippet(body))
	}
	var ids []string
	for _, d := range list.Data {
		ids = append(ids, d.ID)
	}
	if !slices.Contains(ids, s.spec.Model) {
		return false, "", fmt.Errorf("the server at %s serves %q, not %q: every request must carry the served model name exactly (ATOM answers 400 to any other); use the served name as the model", s.url, ids, s.spec.Model)
	}
	return true, "", nil
}

// get fetches one URL path with a short deadline of its own.
func (s *Server) get(ctx context.Context, path string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := s.opts.HTTPClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body, err
}

// snippet is the start of a reply body, for messages.
func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strconv.Quote(s)
}

// readTail returns the last n lines of the file at path; a line that a
// progress bar rewrote with carriage returns keeps its last state.
func readTail(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	const window = 256 << 10
	off := max(0, st.Size()-window)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil
	}
	text := string(buf)
	if off > 0 {
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			text = text[i+1:]
		}
	}
	text = strings.TrimRight(text, "\r\n")
	if text == "" {
		return nil
	}
	lines := strings.Split(text, "\n")
	lines = lines[max(0, len(lines)-n):]
	for i, l := range lines {
		l = strings.TrimRight(l, "\r")
		if j := strings.LastIndexByte(l, '\r'); j >= 0 {
			l = l[j+1:]
		}
		lines[i] = l
	}
	return lines
}
