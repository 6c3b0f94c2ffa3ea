package trim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/profile-model/profile-model/internal/jsonscan"
	"github.com/profile-model/profile-model/tracing"
)

// Options say what to keep. Exactly one of Decode, Steps and Window is set.
type Options struct {
	// Decode keeps this many consecutive decode steps from the steady
	// middle of the profile (at the most frequent decode batch size).
	Decode int
	// Steps keeps the steps From to To-1, numbered as inspect numbers them.
	Steps *StepRange
	// Window keeps what overlaps a time window on the trace's own clock.
	Window *Window
	// MaxLag is how far the GPU may run behind the CPU: GPU events that
	// late after the chosen steps are still matched to their launches.
	// 0: the length of the kept window (at least 10 ms): an engine runs
	// at most a step or so ahead of its GPU.
	MaxLag time.Duration
	// MemoryLimit bounds the bytes of events held in memory for a later
	// decision; past it they go to a temporary file in TempDir (0: 64 MB;
	// "" is the system's temporary directory).
	MemoryLimit int
	TempDir     string
}

// StepRange is a half-open range of step indexes, as a Go slice.
type StepRange struct{ From, To int }

// Window is a half-open time window in nanoseconds, as the trace writes its
// ts values (microseconds; relative to baseTimeNanoseconds when the trace
// has it).
type Window struct{ StartNS, EndNS int64 }

// Result says what was kept.
type Result struct {
	Steps      []Step // the steps kept (none for a window)
	TraceSteps []Step // every step the trace has
	StartNS    int64  // the CPU time window kept, as the trace writes time
	EndNS      int64
	EventsIn   int64
	EventsOut  int64
	KernelsOut int64 // GPU kernels, copies and memsets kept
	BytesOut   int64 // uncompressed
	// FlowsDropped counts flow events left out because the other end of
	// their arrow is not kept (or was never in the trace: ROCm graph
	// launches write flow ends only).
	FlowsDropped int64
	Warnings     []string
}

func (o *Options) check() error {
	n := 0
	if o.Decode != 0 {
		n++
		if o.Decode < 0 {
			return fmt.Errorf("the number of decode steps must be positive, got %d", o.Decode)
		}
	}
	if o.Steps != nil {
		n++
		if o.Steps.From < 0 || o.Steps.To <= o.Steps.From {
			return fmt.Errorf("steps %d:%d: a range a:b needs 0 <= a < b", o.Steps.From, o.Steps.To)
		}
	}
	if o.Window != nil {
		n++
		if o.Window.EndNS <= o.Window.StartNS {
			return fmt.Errorf("window %s:%s µs: the end must come after the start", FormatMicros(o.Window.StartNS), FormatMicros(o.Window.EndNS))
		}
	}
	if n != 1 {
		return errors.New("say what to keep: N decode steps, a range of steps, or a time window (exactly one)")
	}
	return nil
}

// Trim reads the Kineto trace r (JSON or gzip) once and writes to w a valid
// trace holding only what opts chooses: the top-level metadata
// (deviceProperties, baseTimeNanoseconds, schemaVersion, ...) and the M
// events as they are, the chosen steps' CPU events (operators, Python
// frames, annotations), their runtime launches, the GPU kernels, copies and
// annotations of those launches and any others that run inside their GPU
// span, and the flow arrows whose both ends are kept. Events are copied
// byte for byte, so times and names are exactly the source's.
func Trim(ctx context.Context, r io.Reader, w io.Writer, opts Options) (*Result, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if opts.MemoryLimit <= 0 {
		opts.MemoryLimit = 64 << 20
	}
	sp, err := newSplitter(ctx, r)
	if err != nil {
		return nil, err
	}
	defer sp.close()
	cw := &countWriter{w: w}
	t := newTrimmer(&opts, bufio.NewWriterSize(cw, 256<<10))
	defer t.close()
	if err := t.run(ctx, sp); err != nil {
		return nil, err
	}
	if err := t.out.w.Flush(); err != nil {
		return nil, fmt.Errorf("writing the trimmed trace: %w", err)
	}
	t.res.BytesOut = cw.n
	t.res.EventsIn = sp.n
	return &t.res, nil
}

// List returns the steps of the trace r, as Trim numbers them. It reads
// only as far as the end of the CPU operator section, where the step
// annotations are.
func List(ctx context.Context, r io.Reader) ([]Step, error) {
	sp, err := newSplitter(ctx, r)
	if err != nil {
		return nil, err
	}
	defer sp.close()
	var f stepFinder
	for n := 0; ; n++ {
		if n&4095 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		it, _, _, err := sp.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var te *jsonscan.TruncatedError
			if errors.As(err, &te) {
				break
			}
			return nil, err
		}
		if it == itemEventsEnd {
			break
		}
		if it != itemEvent {
			continue
		}
		if !inCPUSection(&sp.ev) {
			break
		}
		f.add(&sp.ev)
	}
	return f.steps(), nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// startKey is where a flow arrow binds: the start of an X event.
type startKey struct {
	pid, tid string
	ts       int64
}

// span is a time interval [lo, hi], empty until the first add.
type span struct {
	lo, hi int64
	set    bool
}

func (s *span) add(lo, hi int64) {
	if !s.set {
		s.lo, s.hi, s.set = lo, hi, true
		return
	}
	s.lo, s.hi = min(s.lo, lo), max(s.hi, hi)
}

// trimmer applies the keep rules to a stream of events.
//
// The rules need the chosen steps, which only the step annotations say;
// Kineto writes those in its first section (CPU operators and
// annotations), before Python frames, runtime calls and GPU work. So events
// of that first section are held until it ends, the steps are chosen, and
// from then on almost every event is decided as it streams by. The few that
// are not (GPU work of unknown launch, launches of unknown kernels, flow
// arrows, GPU annotations, all within MaxLag of the window) are held and
// decided at the end of traceEvents, when all is known.
type trimmer struct {
	opts *Options
	out  output
	res  Result

	decided bool
	finder  stepFinder
	chosen  []Step
	ws, we  int64 // CPU window
	lo, hi  int64 // the window widened by MaxLag: what may still matter
	early   *store
	bad     error // an event kept that is not valid JSON
	seen    span  // the time span of the events read before the choice
	late    int   // step annotations seen after the steps were chosen

	heldGPU, heldLaunch, heldFlow *store

	launched map[int64]bool // correlations of kept launches -> a launch of GPU work
	ran      map[int64]bool // correlations of kept GPU events
	hull     map[string]*span
	starts   map[startKey]bool // starts of kept X events
	stepExt  map[int64]bool    // External ids of kept CPU step annotations
	annExt   map[int64]bool    // External ids of kept CPU annotations
	ev       event             // scratch for held events
}

func newTrimmer(opts *Options, w *bufio.Writer) *trimmer {
	t := &trimmer{
		opts:       opts,
		out:        output{w: w},
		early:      newStore(opts.MemoryLimit, opts.TempDir),
		heldGPU:    newStore(opts.MemoryLimit/2, opts.TempDir),
		heldLaunch: newStore(opts.MemoryLimit/4, opts.TempDir),
		heldFlow:   newStore(opts.MemoryLimit/4, opts.TempDir),
		launched:   map[int64]bool{},
		ran:        map[int64]bool{},
		hull:       map[string]*span{},
		starts:     map[startKey]bool{},
		stepExt:    map[int64]bool{},
		annExt:     map[int64]bool{},
	}
	if w := opts.Window; w != nil {
		t.setWindow(w.StartNS, w.EndNS)
		t.decided = true
	}
	return t
}

func (t *trimmer) close() {
	for _, s := range []*store{t.early, t.heldGPU, t.heldLaunch, t.heldFlow} {
		s.close()
	}
}

func (t *trimmer) setWindow(ws, we int64) {
	t.ws, t.we = ws, we
	lag := t.opts.MaxLag.Nanoseconds()
	if lag <= 0 {
		lag = max(int64(10*time.Millisecond), we-ws)
	}
	t.lo, t.hi = ws-lag, we+lag
	t.res.StartNS, t.res.EndNS = ws, we
}

func (t *trimmer) run(ctx context.Context, sp *splitter) error {
	inEvents, sawEvents := false, false
	for n := 0; ; n++ {
		if n&4095 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		it, key, val, err := sp.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var te *jsonscan.TruncatedError
			if !errors.As(err, &te) || !sawEvents {
				return err
			}
			t.res.Warnings = append(t.res.Warnings, err.Error()+"; the trimmed trace has what was read before the cut")
			if inEvents {
				if err := t.endEvents(); err != nil {
					return err
				}
			}
			break
		}
		switch it {
		case itemMember:
			if off, msg := jsonscan.BadText(val); off >= 0 {
				return &jsonscan.SyntaxError{Offset: sp.offset() - int64(len(val)-off), Event: -1, Msg: fmt.Sprintf("the value of top-level key %s has %s", key, msg)}
			}
			t.out.member(key, val)
		case itemEventsStart:
			if sawEvents {
				return &jsonscan.SyntaxError{Offset: sp.offset(), Event: -1, Msg: "a second traceEvents array"}
			}
			inEvents, sawEvents = true, true
			t.out.beginEvents(key)
		case itemEvent:
			if err := t.event(&sp.ev); err != nil {
				return err
			}
		case itemEventsEnd:
			inEvents = false
			if err := t.endEvents(); err != nil {
				return err
			}
		}
		if t.bad != nil {
			return t.bad
		}
		if t.out.err != nil {
			return fmt.Errorf("writing the trimmed trace: %w", t.out.err)
		}
	}
	if !sawEvents {
		return errors.New("the JSON has no traceEvents array: it is not a Chrome/Kineto trace")
	}
	if t.bad != nil {
		return t.bad
	}
	t.out.end()
	if t.late > 0 {
		t.res.Warnings = append(t.res.Warnings, fmt.Sprintf("%d step annotations came after the CPU operator section and were not counted: step numbers may differ from inspect's", t.late))
	}
	return t.out.err
}

// event takes one event of the stream.
func (t *trimmer) event(ev *event) error {
	if !t.decided {
		if ev.hasTS && ev.ph != 'M' {
			t.seen.add(ev.ts, ev.end())
		}
		// The step annotations are all in the first section. Should none
		// be there (a trace in another order), hold on a while longer.
		held := len(t.finder.engine) + len(t.finder.profiler)
		if inCPUSection(ev) || (held == 0 && t.early.size < t.opts.MemoryLimit && t.early.f == nil) {
			t.finder.add(ev)
			return t.early.add(ev.raw)
		}
		if err := t.decide(); err != nil {
			return err
		}
	} else if t.opts.Window == nil && mayBeStep(ev) {
		if _, ok := stepOf(ev); ok {
			t.late++
		}
	}
	return t.route(ev)
}

// decide chooses the steps and replays the events held until then.
func (t *trimmer) decide() error {
	t.decided = true
	steps := t.finder.steps()
	t.res.TraceSteps = steps
	chosen, err := choose(steps, t.opts)
	if errors.Is(err, errNoSteps) && t.seen.set {
		return fmt.Errorf("%w (its first events span %s:%s µs)", err, FormatMicros(t.seen.lo), FormatMicros(t.seen.hi))
	}
	if err != nil {
		return err
	}
	t.chosen, t.res.Steps = chosen, chosen
	last := chosen[len(chosen)-1]
	we := last.EndNS
	// The CPU window runs to the next step's start: what the engine does
	// between steps (scheduling, the sampling launch) belongs to the one
	// before.
	if last.Index+1 < len(steps) {
		we = max(we, steps[last.Index+1].StartNS)
	}
	t.setWindow(chosen[0].StartNS, we)
	var ev event
	err = t.early.each(func(raw []byte) error {
		if err := reparse(raw, &ev); err != nil {
			return err
		}
		return t.route(&ev)
	})
	t.early.close() // the held events' memory is for the rest now
	return err
}

// endEvents decides the held events and closes traceEvents.
func (t *trimmer) endEvents() error {
	if !t.decided {
		if err := t.decide(); err != nil {
			return err
		}
	}
	if err := t.resolve(); err != nil {
		return err
	}
	t.out.endEvents()
	return nil
}

// reparse reads an event held in a store.
func reparse(raw []byte, ev *event) error {
	if _, ok := fastEvent(raw, ev); ok {
		return nil
	}
	if n, msg := parseEvent(raw, ev); n < 0 {
		return fmt.Errorf("re-reading a held event: %s", msg)
	}
	return nil
}

func (t *trimmer) keep(ev *event) {
	// What is copied byte for byte must be valid JSON: checked here, on
	// the few events kept, rather than on every event read.
	if off, msg := jsonscan.BadText(ev.raw); off >= 0 && t.bad == nil {
		t.bad = fmt.Errorf("an event to keep (ts %s µs, name %q) has %s at its byte %d: the trace is corrupt there; export it again", FormatMicros(ev.ts), truncateName(ev.name), msg, off)
	}
	t.out.event(ev.raw)
	t.res.EventsOut++
	if ev.ph == 'X' && ev.hasTS {
		t.starts[startKey{string(ev.pid), string(ev.tid), ev.ts}] = true
	}
}

func (t *trimmer) overlapsCPU(ev *event) bool {
	return ev.hasTS && ev.ts < t.we && ev.end() >= t.ws
}

func (t *trimmer) inRange(ev *event) bool {
	return ev.hasTS && ev.ts < t.hi && ev.end() >= t.lo
}

// route applies the keep rules once the steps are chosen.
func (t *trimmer) route(ev *event) error {
	switch classify(ev) {
	case classMeta:
		t.keep(ev)
	case classProfiler:
		// The profiler's own span covers the whole original profile.
	case classInstant:
		if ev.hasTS && ev.ts >= t.ws && ev.ts < t.we {
			t.keep(ev)
		}
	case classCPU:
		if t.opts.Window == nil && mayBeStep(ev) {
			if st, ok := stepOf(ev); ok && (st.Kind == tracing.StepProfiler) == t.finder.profilerTier() {
				// A step annotation: only the chosen steps and labels
				// nested in them, or inspect would find other steps.
				if t.isChosen(&st) {
					t.keep(ev)
					if x := ev.externalID(); x != 0 {
						t.stepExt[x], t.annExt[x] = true, true
					}
				}
				return nil
			}
		}
		if t.overlapsCPU(ev) {
			t.keep(ev)
			if string(ev.cat) == "user_annotation" {
				if x := ev.externalID(); x != 0 {
					t.annExt[x] = true
				}
			}
		}
	case classRuntime:
		return t.routeLaunch(ev)
	case classGPU:
		return t.routeGPU(ev)
	case classGPUAnn:
		if t.opts.Window != nil {
			if t.overlapsCPU(ev) {
				t.keep(ev)
			}
		} else if t.inRange(ev) {
			return t.heldGPU.add(ev.raw)
		}
	case classFlow:
		// Near the window, or the arrow of GPU work launched in it that
		// ran late (a flow id is the launch's correlation id).
		if t.inRange(ev) {
			return t.heldFlow.add(ev.raw)
		}
		if t.opts.Window == nil && ev.hasTS && ev.ts >= t.hi && len(ev.id) > 0 {
			if c, ok := jsonscan.ParseInt(ev.id); ok && t.launched[c] {
				return t.heldFlow.add(ev.raw)
			}
		}
	}
	return nil
}

// routeLaunch applies the keep rules to a runtime call: kept when made in
// the window, held when it may have launched kept GPU work.
func (t *trimmer) routeLaunch(ev *event) error {
	c := ev.correlation()
	switch {
	case ev.hasTS && ev.ts >= t.ws && ev.ts < t.we:
		t.keep(ev)
		if c != 0 {
			t.launched[c] = t.launched[c] || launchesWork(ev.name)
		}
	case c != 0 && t.ran[c] && t.opts.Window == nil:
		t.keep(ev)
	case c != 0 && t.inRange(ev):
		// Decided at the end, when every GPU event is known: a
		// window keeps the same launches whatever the event order.
		return t.heldLaunch.add(ev.raw)
	}
	return nil
}

// routeGPU applies the keep rules to GPU work: kept when its launch is
// (or, for a window, when it overlaps it), held when that is not known yet.
func (t *trimmer) routeGPU(ev *event) error {
	switch {
	case t.opts.Window != nil:
		if t.overlapsCPU(ev) {
			t.keepGPU(ev)
		}
	case ev.ts < t.lo:
		// Before the window: no chosen launch made it (its args are
		// not even read).
	case t.launched[ev.correlation()]:
		// Launched in the window, however late it ran.
		t.keepGPU(ev)
		t.hullOf(ev).add(ev.ts, ev.end())
	case t.inRange(ev):
		return t.heldGPU.add(ev.raw)
	}
	return nil
}

func (t *trimmer) keepGPU(ev *event) {
	t.keep(ev)
	t.res.KernelsOut++
	if c := ev.correlation(); c != 0 {
		t.ran[c] = true
	}
}

func (t *trimmer) hullOf(ev *event) *span {
	h := t.hull[string(ev.pid)]
	if h == nil {
		h = &span{}
		t.hull[string(ev.pid)] = h
	}
	return h
}

// isChosen says whether a step annotation is a chosen step or lies inside
// one on the same track.
func (t *trimmer) isChosen(st *Step) bool {
	for i := range t.chosen {
		c := &t.chosen[i]
		if c.track == st.track && st.StartNS >= c.StartNS && st.EndNS <= c.EndNS {
			return true
		}
	}
	return false
}

// truncateName is a name short enough for a message.
func truncateName(name []byte) string {
	if len(name) > 80 {
		return string(name[:80]) + "..."
	}
	return string(name)
}

// launchesWork tells runtime calls that put work on the GPU.
func launchesWork(name []byte) bool {
	s := string(name)
	return strings.Contains(s, "Launch") || strings.Contains(s, "Memcpy") || strings.Contains(s, "Memset")
}

// resolve decides the held events, now that every launch and every GPU
// event of the window has been seen.
func (t *trimmer) resolve() error {
	ev := &t.ev
	parse := func(raw []byte) error { return reparse(raw, ev) }
	// 1. The GPU span of the chosen steps: their GPU annotations and the
	// GPU work their launches made.
	if t.opts.Window == nil {
		if err := t.heldGPU.each(func(raw []byte) error { return t.stepHull(raw, ev) }); err != nil {
			return err
		}
	}
	// 2. GPU work: launched by a kept launch, or running inside that span.
	if err := t.heldGPU.each(func(raw []byte) error { return t.resolveGPU(raw, ev) }); err != nil {
		return err
	}
	// 3. Launches of kept GPU work.
	err := t.heldLaunch.each(func(raw []byte) error {
		if err := parse(raw); err != nil {
			return err
		}
		if c := ev.correlation(); c != 0 && t.ran[c] {
			t.keep(ev)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// 4. Flow arrows whose both ends are kept.
	if err := t.flows(parse); err != nil {
		return err
	}
	t.warnLost()
	return nil
}

// stepHull widens the GPU span of the chosen steps by a held GPU event
// (raw, parsed into ev) that belongs to them.
func (t *trimmer) stepHull(raw []byte, ev *event) error {
	if err := reparse(raw, ev); err != nil {
		return err
	}
	switch classify(ev) {
	case classGPU:
		if c := ev.correlation(); c != 0 && t.launched[c] {
			t.hullOf(ev).add(ev.ts, ev.end())
		}
	case classGPUAnn:
		if t.isStepTwin(ev) {
			t.hullOf(ev).add(ev.ts, ev.end())
		}
	}
	return nil
}

// resolveGPU keeps a held GPU event (raw, parsed into ev) launched by a
// kept launch or running inside the steps' GPU span.
func (t *trimmer) resolveGPU(raw []byte, ev *event) error {
	if err := reparse(raw, ev); err != nil {
		return err
	}
	h := t.hull[string(ev.pid)]
	inHull := h != nil && ev.ts >= h.lo && ev.ts < h.hi
	switch classify(ev) {
	case classGPU:
		if c := ev.correlation(); (c != 0 && t.launched[c]) || inHull {
			t.keepGPU(ev)
		}
	case classGPUAnn:
		if _, isStep := t.stepLabel(ev); isStep {
			if t.isStepTwin(ev) {
				t.keep(ev)
			}
		} else if x := ev.externalID(); (x != 0 && t.annExt[x]) || (h != nil && ev.ts < h.hi && ev.end() > h.lo) {
			t.keep(ev)
		}
	}
	return nil
}

// warnLost warns when GPU launches of the chosen steps have no GPU event
// in the trimmed trace. (A time window cuts GPU work launched in it that
// runs after it: no warning then.)
func (t *trimmer) warnLost() {
	lost, total := 0, 0
	for c, work := range t.launched {
		if work {
			total++
			if !t.ran[c] {
				lost++
			}
		}
	}
	if lost > 0 && t.opts.Window == nil {
		lag := time.Duration(t.hi - t.we)
		t.res.Warnings = append(t.res.Warnings, fmt.Sprintf("%d of the %d GPU launches of the chosen steps have no GPU event in the trimmed trace: the profiler dropped them, or (in a trace that writes kernels before their launches) they ran more than %v after the steps: raise --max-lag", lost, total, lag))
	}
}

// stepLabel says whether a GPU annotation is a step label of the tier the
// steps come from.
func (t *trimmer) stepLabel(ev *event) (Step, bool) {
	cp := *ev
	cp.cat = []byte("user_annotation")
	st, ok := stepOf(&cp)
	if !ok || (st.Kind == tracing.StepProfiler) != t.finder.profilerTier() {
		return Step{}, false
	}
	return st, true
}

// isStepTwin says whether a GPU annotation is the GPU side of a kept step
// annotation (same External id; by label when it has none).
func (t *trimmer) isStepTwin(ev *event) bool {
	if _, ok := t.stepLabel(ev); !ok {
		return false
	}
	if x := ev.externalID(); x != 0 {
		return t.stepExt[x]
	}
	name := nameString(ev.name)
	for _, c := range t.chosen {
		if c.Label == name {
			return true
		}
	}
	return false
}

type flowKey struct {
	cat, id string
}

// flows writes the held flow events whose arrow has a kept start and a
// kept end: an end alone draws nothing, and viewers warn about it.
func (t *trimmer) flows(parse func([]byte) error) error {
	const hasStart, hasEnd = 1, 2
	ends := map[flowKey]uint8{}
	bound := func(ev *event) bool {
		return ev.hasTS && t.starts[startKey{string(ev.pid), string(ev.tid), ev.ts}]
	}
	err := t.heldFlow.each(func(raw []byte) error {
		if err := parse(raw); err != nil {
			return err
		}
		if !bound(&t.ev) {
			return nil
		}
		k := flowKey{string(t.ev.cat), string(t.ev.id)}
		switch t.ev.ph {
		case 's':
			ends[k] |= hasStart
		case 'f':
			ends[k] |= hasEnd
		}
		return nil
	})
	if err != nil {
		return err
	}
	return t.heldFlow.each(func(raw []byte) error {
		if err := parse(raw); err != nil {
			return err
		}
		if bound(&t.ev) && ends[flowKey{string(t.ev.cat), string(t.ev.id)}] == hasStart|hasEnd {
			t.keep(&t.ev)
		} else {
			t.res.FlowsDropped++
		}
		return nil
	})
}

// output writes the trimmed trace: top-level members as read, and
// traceEvents with the kept events, byte for byte.
type output struct {
	w       *bufio.Writer
	members int
	events  int64
	err     error
}

func (o *output) write(parts ...[]byte) {
	for _, p := range parts {
		if o.err == nil {
			_, o.err = o.w.Write(p)
		}
	}
}

func (o *output) sep() {
	if o.members == 0 {
		o.write([]byte("{\n  "))
	} else {
		o.write([]byte(",\n  "))
	}
	o.members++
}

func (o *output) member(key, val []byte) {
	o.sep()
	o.write(key, []byte(": "), val)
}

func (o *output) beginEvents(key []byte) {
	o.sep()
	o.write(key, []byte(": ["))
}

func (o *output) event(raw []byte) {
	if o.events == 0 {
		o.write([]byte("\n  "), raw)
	} else {
		o.write([]byte(",\n  "), raw)
	}
	o.events++
}

func (o *output) endEvents() { o.write([]byte("\n  ]")) }

func (o *output) end() {
	if o.members == 0 {
		o.write([]byte("{"))
	}
	o.write([]byte("\n}\n"))
}

// ParseStepRange reads "a:b" (steps a to b-1, as a Go slice).
func ParseStepRange(s string) (StepRange, error) {
	const want = "want a:b with 0 <= a < b (steps a to b-1, as inspect numbers them)"
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return StepRange{}, fmt.Errorf("steps %q: %s", s, want)
	}
	var bound [2]int
	for k, text := range []string{a, b} {
		v, err := strconv.Atoi(strings.TrimSpace(text))
		if errors.Is(err, strconv.ErrRange) {
			return StepRange{}, fmt.Errorf("steps %q: %s is out of range (a trace has far fewer steps)", s, strings.TrimSpace(text))
		}
		if err != nil {
			return StepRange{}, fmt.Errorf("steps %q: %s", s, want)
		}
		bound[k] = v
	}
	if bound[0] < 0 || bound[1] <= bound[0] {
		return StepRange{}, fmt.Errorf("steps %q: %s", s, want)
	}
	return StepRange{bound[0], bound[1]}, nil
}

// ParseWindow reads "t0:t1" in microseconds as the trace writes ts
// (decimals allowed), exactly.
func ParseWindow(s string) (Window, error) {
	const want = "want t0:t1 in microseconds as the trace writes ts, with t0 < t1"
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return Window{}, fmt.Errorf("window %q: %s", s, want)
	}
	var bound [2]int64
	for k, text := range []string{a, b} {
		text = strings.TrimSpace(text)
		v, ok := jsonscan.ParseMicros([]byte(text))
		if !ok && jsonscan.ValidNumber([]byte(text)) {
			return Window{}, fmt.Errorf("window %q: %s µs is out of range (a time in nanoseconds must fit 64 bits: about 292 years)", s, text)
		}
		if !ok {
			return Window{}, fmt.Errorf("window %q: %s", s, want)
		}
		bound[k] = v
	}
	if bound[1] <= bound[0] {
		return Window{}, fmt.Errorf("window %q: %s", s, want)
	}
	return Window{bound[0], bound[1]}, nil
}

// FormatMicros prints integer nanoseconds as microseconds with three
// decimals, as Kineto writes them.
func FormatMicros(ns int64) string {
	sign := ""
	if ns < 0 {
		sign, ns = "-", -ns
	}
	return sign + strconv.FormatInt(ns/1000, 10) + "." + strconv.FormatInt(1000+ns%1000, 10)[1:]
}
