package telemetry

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/profile-model/profile-model/internal/results"
)

// The tools, in the order Find looks for them.
const (
	AMDSMI    = "amd-smi"
	ROCmSMI   = "rocm-smi"
	NvidiaSMI = "nvidia-smi"
	// Sim is the simulated engine's /debug/telemetry (amd-smi's format).
	Sim = "sim"
)

// DefaultPeriod is the sampling period: power moves with the load within a
// second, and a level lasts tens of seconds.
const DefaultPeriod = 200 * time.Millisecond

// Source is where a level's readings come from: a tool on this machine, or
// the simulated engine.
type Source struct {
	Tool string
	Path string // the tool's executable
	URL  string // Sim: the engine's /debug/telemetry
	// Reasons is nvidia-smi's throttle-reason field (NvidiaEventReasons
	// or, before driver R535, NvidiaThrottleReasons).
	Reasons string
	// NoThrottle leaves amd-smi's --throttle out: releases before ROCm 6.3
	// do not know it (the limits then come from power.throttle_status).
	NoThrottle bool
	Devices    []int         // the GPUs the engine uses, by index; nil: all
	Period     time.Duration // 0: DefaultPeriod
	// Run runs a tool once and returns its stdout; nil: exec with a limit.
	// Tests replace it.
	Run func(ctx context.Context, path string, args ...string) ([]byte, error)
	// Stream starts a tool that streams (nvidia-smi -lms) and returns its
	// stdout, ended by cancelling ctx; nil: exec. Tests replace it.
	Stream func(ctx context.Context, path string, args ...string) (io.ReadCloser, func() error, error)
}

// Find looks for a tool on PATH (look: exec.LookPath when nil): amd-smi,
// then rocm-smi, then nvidia-smi, whose throttle-reason field is probed
// with run (nil: exec). Without one it returns a warning saying so, and no
// error: a run without telemetry is still a run.
func Find(ctx context.Context, look func(string) (string, error), run func(context.Context, string, ...string) ([]byte, error)) (Source, string) {
	if look == nil {
		look = exec.LookPath
	}
	if run == nil {
		run = runOnce
	}
	for _, t := range []string{AMDSMI, ROCmSMI, NvidiaSMI} {
		path, err := look(t)
		if err != nil {
			continue
		}
		src := Source{Tool: t, Path: path, Run: run}
		if t == AMDSMI {
			help, err := run(ctx, path, "metric", "--help")
			src.NoThrottle = err != nil || !strings.Contains(string(help), "--throttle")
		}
		if t == NvidiaSMI {
			// Drivers before R535 know only the older spelling.
			src.Reasons = NvidiaEventReasons
			if _, err := run(ctx, path, "--query-gpu="+NvidiaEventReasons, "--format=csv,noheader"); err != nil {
				src.Reasons = NvidiaThrottleReasons
			}
		}
		return src, ""
	}
	return Source{}, "GPU power, clocks and memory not sampled: none of amd-smi, rocm-smi or nvidia-smi is on PATH"
}

func (s Source) period() time.Duration {
	if s.Period > 0 {
		return s.Period
	}
	return DefaultPeriod
}

// Describe says what the source runs, for run.json and the log.
func (s Source) Describe() string {
	switch s.Tool {
	case "":
		return ""
	case Sim:
		return fmt.Sprintf("the simulated engine's %s every %v", s.URL, s.period())
	case NvidiaSMI:
		return "nvidia-smi " + strings.Join(NvidiaArgs(s.Reasons, s.period(), s.Devices), " ")
	case AMDSMI:
		return fmt.Sprintf("amd-smi %s every %v", strings.Join(s.amdArgs(), " "), s.period())
	}
	return fmt.Sprintf("rocm-smi %s every %v", strings.Join(ROCmSMIArgs, " "), s.period())
}

func (s Source) amdArgs() []string {
	args := AMDSMIArgs(s.Devices)
	if s.NoThrottle {
		args = slices.DeleteFunc(args, func(a string) bool { return a == "--throttle" })
	}
	return args
}

// Recording is one phase being sampled.
type Recording struct {
	src    Source
	start  time.Time
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	rounds []Round
	bad    int
	first  string // the first failure
}

// Start samples until Stop: a child process for the phase (nvidia-smi's
// stream), or one reading per period (amd-smi, rocm-smi, the simulated
// engine).
func (s Source) Start(ctx context.Context) *Recording {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &Recording{src: s, start: time.Now(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		if s.Tool == NvidiaSMI {
			r.stream(ctx)
		} else {
			r.poll(ctx)
		}
	}()
	return r
}

func (r *Recording) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bad++
	if r.first == "" {
		r.first = msg
	}
}

func (r *Recording) add(rd Round) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rounds = append(r.rounds, rd)
}

// poll reads once per period until ctx ends, the first reading at once.
func (r *Recording) poll(ctx context.Context) {
	tick := time.NewTicker(r.src.period())
	defer tick.Stop()
	if r.src.Tool == Sim {
		// Its last reading closes the phase's window: the time since the
		// previous one is in no other.
		defer func() {
			at := time.Now()
			if ss, err := r.src.read(context.Background()); err == nil {
				r.add(Round{At: at, Samples: ss})
			}
		}()
		// The simulated engine averages since its last reading: the first
		// covers the time before the phase and only starts its window.
		_, _ = r.src.read(ctx)
		r.mu.Lock()
		r.start = time.Now()
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	for {
		at := time.Now()
		ss, err := r.src.read(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			r.fail(err.Error())
		} else {
			r.add(Round{At: at, Samples: ss})
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// read takes one reading of a polled source.
func (s Source) read(ctx context.Context) ([]Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, max(5*s.period(), 5*time.Second))
	defer cancel()
	at := time.Now()
	if s.Tool == Sim {
		b, err := httpGet(ctx, s.URL)
		if err != nil {
			return nil, err
		}
		return ParseAMDSMI(b, at)
	}
	run := s.Run
	if run == nil {
		run = runOnce
	}
	args := ROCmSMIArgs
	if s.Tool == AMDSMI {
		args = s.amdArgs()
	}
	b, err := run(ctx, s.Path, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Tool, err)
	}
	if s.Tool == AMDSMI {
		return ParseAMDSMI(b, at)
	}
	return ParseROCmSMI(b, at)
}

// stream reads nvidia-smi's lines as they come; a round ends when a GPU
// it already holds reports again.
func (r *Recording) stream(ctx context.Context) {
	start := r.src.Stream
	if start == nil {
		start = streamExec
	}
	out, wait, err := start(ctx, r.src.Path, NvidiaArgs(r.src.Reasons, r.src.period(), r.src.Devices)...)
	if err != nil {
		r.fail(fmt.Sprintf("nvidia-smi: %v", err))
		return
	}
	var cur Round
	flush := func() {
		if len(cur.Samples) > 0 {
			r.add(cur)
		}
		cur = Round{}
	}
	_ = ReadNvidia(out, time.Now, func(s Sample) {
		if slices.ContainsFunc(cur.Samples, func(x Sample) bool { return x.GPU == s.GPU }) {
			flush()
		}
		if len(cur.Samples) == 0 {
			cur.At = time.Now()
		}
		cur.Samples = append(cur.Samples, s)
	}, func(line int, err error) { r.fail(fmt.Sprintf("nvidia-smi line %d: %v", line, err)) })
	flush()
	out.Close()
	if err := wait(); err != nil && ctx.Err() == nil {
		r.fail(fmt.Sprintf("nvidia-smi ended: %v", err))
	}
}

// Stop ends the phase and returns what it measured and the warnings of
// the sampling (readings that failed, GPUs the tool never reported).
func (r *Recording) Stop() (*results.Telemetry, []string) {
	end := time.Now()
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	t := Summarize(r.src.Tool, r.src.period(), r.start, end, r.src.Devices, r.rounds)
	if len(r.rounds) == 0 && r.bad == 0 && r.src.Tool == Sim {
		return nil, nil // a phase shorter than one period: nothing to say
	}
	var warns []string
	if r.bad > 0 {
		warns = append(warns, fmt.Sprintf("%d GPU readings of %s failed or did not read (first: %s)", r.bad, r.src.Tool, r.first))
	}
	if m := t.Missing(); len(m) > 0 && len(r.rounds) > 0 {
		warns = append(warns, fmt.Sprintf("%s never reported GPU %s of the engine's GPUs: its figures leave it out", r.src.Tool, joinInts(m)))
	}
	if len(r.rounds) == 0 {
		warns = append(warns, fmt.Sprintf("%s gave no reading over %.1f s: the level has no GPU telemetry", r.src.Tool, end.Sub(r.start).Seconds()))
		return nil, warns
	}
	return t, warns
}

// runOnce runs a tool with a limit of its own: a wedged driver makes these
// tools hang.
func runOnce(ctx context.Context, path string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			err = fmt.Errorf("%w: %s", err, snippet([]byte(msg)))
		}
		return nil, err
	}
	return out, nil
}

// streamExec starts a streaming tool as a child process, killed when ctx
// ends.
func streamExec(ctx context.Context, path string, args ...string) (io.ReadCloser, func() error, error) {
	cmd := exec.CommandContext(ctx, path, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	return out, cmd.Wait, nil
}

// Serves reports whether url answers with GPU readings in amd-smi's shape,
// as the simulated engine's /debug/telemetry does.
func Serves(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	b, err := httpGet(ctx, url)
	if err != nil {
		return false
	}
	_, err = ParseAMDSMI(b, time.Now())
	return err == nil
}

func httpGet(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d: %s", url, resp.StatusCode, snippet(b))
	}
	return b, nil
}
