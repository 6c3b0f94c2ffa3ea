package tracing

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/profile-model/profile-model/internal/inflate"

	"github.com/profile-model/profile-model/internal/jsonscan"
)

// A capture trace is recorded while the engine captures its CUDA/HIP
// graphs: the launches are recorded into graphs, not run, so the GPU side
// is (almost) empty, but every launch still hangs under the CPU op that
// issued it and under the module scopes around that op. It is the one
// place that says which module, and which tensor shapes, each kernel a
// graph replays belongs to. LoadCapture reads one; the execution trace's
// replayed kernels are matched to it by their order.

// CapturedKernel is one kernel launch recorded during a capture.
type CapturedKernel struct {
	Name   string // kernel name from the launch's args ("" when the trace does not say, as CUDA runtime events do not)
	Launch string // the runtime call (hipLaunchKernel, cudaLaunchKernel, ...)
	TS     int64  // ns, the launch's start on the trace clock
	// Module is the module path of the scopes around the launch, outermost
	// first: dotted module names as ATOM's marked traces write them
	// (model.layers.3.mlp.experts), or PyTorch's "nn.Module: Class_N"
	// scopes joined with dots. "" when no module scope holds the launch.
	Module string
	// Op is the innermost CPU op around the launch (aten::mm, a custom op),
	// InputDims and InputTypes its recorded input shapes and dtypes as
	// compact JSON ([[32,3072],[8192,3072]]), "" when shapes were not
	// recorded. When the innermost op has none, they come from the nearest
	// op around it that has them.
	Op         string
	InputDims  string
	InputTypes string
	Ran        bool // a GPU kernel with the launch's correlation is in the trace: it ran eagerly (warm-up), it was not captured
}

// Capture is what LoadCapture reads from a capture trace.
type Capture struct {
	Path   string
	Events int64 // entries of traceEvents
	// Kernels are the kernel launches that never ran (captured into
	// graphs), in launch order.
	Kernels []CapturedKernel
	// Eager are the launches that ran (warm-up passes before a capture).
	Eager int
	// Labels are the annotations that name captures (capture_graph_bs_32,
	// capture_32_DECODE, capture_8192_PIECEWISE), in order.
	Labels []string
	// Modules counts the module scopes read; 0 means the trace was
	// recorded without module scopes (with_modules off, no marks).
	Modules int
}

// IsCapture says whether the trace is a capture trace, and why: most
// kernel launches never ran, or a capture annotation says so.
func (c *Capture) IsCapture() (bool, string) {
	n := len(c.Kernels) + c.Eager
	switch {
	case n == 0:
		return false, "no kernel launches"
	case len(c.Kernels)*4 >= n*3:
		why := fmt.Sprintf("%d of %d kernel launches never ran", len(c.Kernels), n)
		if len(c.Labels) > 0 {
			why += fmt.Sprintf(", annotated %q", c.Labels[0])
		}
		return true, why
	case len(c.Labels) > 0 && len(c.Kernels) > 0:
		return true, fmt.Sprintf("annotated %q, %d of %d kernel launches never ran", c.Labels[0], len(c.Kernels), n)
	}
	return false, fmt.Sprintf("%d of %d kernel launches ran: an execution trace", c.Eager, n)
}

// capEvent is the part of a trace event the capture reader needs.
type capEvent struct {
	Ph   string         `json:"ph"`
	Cat  string         `json:"cat"`
	Name string         `json:"name"`
	PID  jsontext.Value `json:"pid"`
	TID  jsontext.Value `json:"tid"`
	TS   jsontext.Value `json:"ts"`
	Dur  jsontext.Value `json:"dur"`
	Args struct {
		Kernel      string         `json:"kernel"`
		Correlation jsontext.Value `json:"correlation"`
		InputDims   jsontext.Value `json:"Input Dims"`
		InputTypes  jsontext.Value `json:"Input type"`
	} `json:"args"`
}

var (
	pyFunction   = []byte(`"python_function"`)
	modulePrefix = []byte(`"nn.Module: `)
)

// scope is a CPU interval a launch can hang under.
type scope struct {
	kind       uint8 // scopeModule or scopeOp
	name       string
	start, end int64
	dims, typ  string
	order      int
}

const (
	scopeModule uint8 = iota
	scopeOp
)

type capLaunch struct {
	k     CapturedKernel
	corr  int64
	order int
}

// moduleName is the module a scope names, "" when it is not a module
// scope: "nn.Module: X" (PyTorch's with_modules) or, for annotations, a
// dotted module path (model.layers.3.mlp).
var dottedModule = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)+$`)

func moduleName(cat, name string) string {
	if m, ok := strings.CutPrefix(name, "nn.Module: "); ok {
		return m
	}
	if cat == "user_annotation" && dottedModule.MatchString(name) {
		return name
	}
	return ""
}

// isCaptureLabel tells an annotation that names a graph capture.
func isCaptureLabel(name string) bool {
	n := strings.ToLower(name)
	return strings.HasPrefix(n, "capture") || strings.Contains(n, "graph_capture") || strings.Contains(n, "cudagraph_capture")
}

// LoadCapture reads a capture trace (JSON or gzip).
func LoadCapture(ctx context.Context, path string) (*Capture, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening capture trace: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, fmt.Errorf("capture trace %s is a directory: pass one of its files (%s/bs_<bs>_q_<q>_rank<r>.json.gz)", path, CaptureDir)
	}
	return readCapture(ctx, f, path)
}

// ReadCapture reads a capture trace from r; name is used in messages.
// Module scopes, CPU ops and launches are matched by nesting on each CPU
// thread: a launch belongs to every scope whose span holds its start.
func readCapture(ctx context.Context, r io.Reader, name string) (*Capture, error) {
	in, closeIn, err := captureInput(r, name)
	if err != nil {
		return nil, err
	}
	defer closeIn()
	dec := jsontext.NewDecoder(in)
	cr := captureReader{c: &Capture{Path: name}, threads: map[[2]string][]scope{}, ran: map[int64]bool{}}
	fail := func(err error) (*Capture, error) {
		return nil, fmt.Errorf("%s: at byte %d of the JSON: %w (the capture trace is damaged: export it again)", name, dec.InputOffset(), err)
	}
	if tok, err := dec.ReadToken(); err != nil {
		return fail(err)
	} else if tok.Kind() != '{' {
		return fail(fmt.Errorf("the document is not a JSON object"))
	}
	found := false
	for dec.PeekKind() != '}' {
		key, err := dec.ReadToken()
		if err != nil {
			return fail(err)
		}
		if key.String() != "traceEvents" {
			if err := dec.SkipValue(); err != nil {
				return fail(err)
			}
			continue
		}
		found = true
		if err := cr.events(ctx, dec, name); err != nil {
			if done, ok := err.(*finalError); ok {
				return nil, done.err
			}
			return fail(err)
		}
	}
	if !found {
		return nil, fmt.Errorf("%s: no traceEvents array: not a Kineto trace", name)
	}
	// Read the stream to its end, so that gzip checks each trailer: a
	// checksum that fails means an event may be wrong.
	if _, err := io.Copy(io.Discard, in); errors.Is(err, inflate.ErrChecksum) {
		return nil, fmt.Errorf("%s: gzip checksum mismatch: the file is corrupt; copy or export it again: %w", name, err)
	}
	return cr.finish(), nil
}

// captureInput is r, decompressed when it is gzip, and what closes it.
func captureInput(r io.Reader, name string) (io.Reader, func(), error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := inflate.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: reading gzip header: %w (the file is truncated, or gzip-like but not gzip)", name, err)
		}
		return zr, func() {}, nil
	}
	return br, func() {}, nil
}

// captureReader collects what a capture trace's events say: the scopes
// and launches of each CPU thread, and the correlations that ran.
type captureReader struct {
	c        *Capture
	threads  map[[2]string][]scope
	launches []capLaunch
	ran      map[int64]bool
}

// finalError carries an error whose message is complete (a damaged
// event, a cancel): readCapture returns it as it is, where it adds the
// byte offset to a decoder's error.
type finalError struct{ err error }

func (e *finalError) Error() string { return e.err.Error() }

// events reads the traceEvents array, from its '['.
func (cr *captureReader) events(ctx context.Context, dec *jsontext.Decoder, name string) error {
	if tok, err := dec.ReadToken(); err != nil {
		return err
	} else if tok.Kind() != '[' {
		return fmt.Errorf("traceEvents is not an array")
	}
	c := cr.c
	var ev capEvent
	for dec.PeekKind() != ']' {
		if c.Events&4095 == 0 && ctx.Err() != nil {
			return &finalError{fmt.Errorf("%s: %w", name, ctx.Err())}
		}
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		c.Events++
		// Python frames are most of a trace recorded with stacks;
		// only module scopes among them matter: skip the rest unparsed.
		if bytes.Contains(v, pyFunction) && !bytes.Contains(v, modulePrefix) {
			continue
		}
		ev = capEvent{}
		if err := json.Unmarshal(v, &ev); err != nil {
			return &finalError{fmt.Errorf("%s: event %d: %w (the capture trace is damaged: export it again)", name, c.Events-1, err)}
		}
		if ev.Ph == "X" {
			cr.event(&ev, int(c.Events))
		}
	}
	_, err := dec.ReadToken()
	return err
}

// event takes one complete event, the order-th of the trace.
func (cr *captureReader) event(ev *capEvent, order int) {
	switch cl := classify([]byte(ev.Cat)); {
	case cl == clKernel:
		if corr, ok := jsonscan.ParseInt(ev.Args.Correlation); ok {
			cr.ran[corr] = true
		}
	case cl == clRuntime:
		l, graph := isLaunch([]byte(ev.Name))
		if !l || graph || strings.Contains(ev.Name, "Memcpy") || strings.Contains(ev.Name, "Memset") {
			return
		}
		ts, _ := jsonscan.ParseMicros(ev.TS)
		corr, _ := jsonscan.ParseInt(ev.Args.Correlation)
		cr.launches = append(cr.launches, capLaunch{
			k:    CapturedKernel{Name: ev.Args.Kernel, Launch: ev.Name, TS: ts},
			corr: corr, order: order,
		})
		cr.threads[thread(ev)] = append(cr.threads[thread(ev)], scope{kind: 255, start: ts, order: len(cr.launches) - 1})
	case ev.Cat == "python_function" || ev.Cat == "user_annotation" || cl == clOp:
		cr.scope(ev, cl, order)
	}
}

// scope takes a CPU op, a module's Python frame or a capture label.
func (cr *captureReader) scope(ev *capEvent, cl class, order int) {
	if ev.Cat == "user_annotation" && isCaptureLabel(ev.Name) {
		cr.c.Labels = append(cr.c.Labels, ev.Name)
		return
	}
	s := scope{kind: scopeOp, name: ev.Name, order: order}
	if m := moduleName(ev.Cat, ev.Name); m != "" {
		s.kind, s.name = scopeModule, m
		cr.c.Modules++
	} else if cl != clOp {
		return
	} else {
		s.dims, s.typ = compactJSON(ev.Args.InputDims), compactJSON(ev.Args.InputTypes)
	}
	ts, ok := jsonscan.ParseMicros(ev.TS)
	dur, ok2 := jsonscan.ParseMicros(ev.Dur)
	if !ok || !ok2 {
		return
	}
	s.start, s.end = ts, ts+dur
	cr.threads[thread(ev)] = append(cr.threads[thread(ev)], s)
}

// finish nests each thread's launches in their scopes and keeps the
// launches that were captured (not run eagerly), in time order.
func (cr *captureReader) finish() *Capture {
	c, launches := cr.c, cr.launches
	for _, items := range cr.threads {
		nest(items, launches)
	}
	slices.SortStableFunc(launches, func(a, b capLaunch) int { return cmp.Compare(a.k.TS, b.k.TS) })
	for i := range launches {
		l := &launches[i]
		if l.corr != 0 && cr.ran[l.corr] {
			c.Eager++
			continue
		}
		c.Kernels = append(c.Kernels, l.k)
	}
	return c
}

// thread keys a CPU thread by its pid and tid as written.
func thread(ev *capEvent) [2]string { return [2]string{string(ev.PID), string(ev.TID)} }

// nest walks one thread's scopes and launches in time order (a scope
// before what starts with it, longer scopes first) and gives each launch
// the module path and op of the scopes open at its start.
func nest(items []scope, launches []capLaunch) {
	slices.SortStableFunc(items, func(a, b scope) int {
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		// Scopes open before the launches that start with them; the longer
		// scope is the outer one.
		if (a.kind == 255) != (b.kind == 255) {
			if a.kind == 255 {
				return 1
			}
			return -1
		}
		return cmp.Compare(b.end, a.end)
	})
	var stack []scope
	for _, it := range items {
		for len(stack) > 0 && stack[len(stack)-1].end <= it.start {
			stack = stack[:len(stack)-1]
		}
		if it.kind != 255 {
			stack = append(stack, it)
			continue
		}
		k := &launches[it.order].k
		path := ""
		for _, s := range stack {
			if s.kind == scopeModule {
				path = joinModule(path, s.name)
			}
		}
		k.Module = path
		for j := len(stack) - 1; j >= 0; j-- {
			s := &stack[j]
			if s.kind != scopeOp {
				continue
			}
			if k.Op == "" {
				k.Op = s.name
			}
			if s.dims != "" && s.dims != "[]" {
				k.InputDims, k.InputTypes = s.dims, s.typ
				break
			}
		}
	}
}

// joinModule appends an inner module scope to a path: a dotted name that
// extends the path replaces it (ATOM's marks name the whole path), any
// other name is appended.
func joinModule(path, name string) string {
	if path == "" || strings.HasPrefix(name, path+".") {
		return name
	}
	return path + "." + name
}

// compactJSON is v without insignificant space, "" when absent or null.
func compactJSON(v jsontext.Value) string {
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	c := v.Clone()
	if err := c.Compact(); err != nil {
		return ""
	}
	return string(c)
}

// GraphBS is the graph batch size a trace's decode steps replayed: the
// most common padded batch (decode[bs=R/G]) or, without padding, batch
// size among the decode steps of the trace's decode batch size; 0 when no
// decode step replayed a graph.
func (t *Trace) GraphBS() int {
	hist := map[int]int{}
	for i := range t.Steps {
		s := &t.Steps[i]
		if s.Kind != StepDecode || s.Eager || (t.DecodeBS != 0 && s.BS != t.DecodeBS) {
			continue
		}
		replayed := false
		for _, k := range s.Kernels {
			if t.Kernels[k].Graph >= 0 {
				replayed = true
				break
			}
		}
		if !replayed {
			continue
		}
		hist[cmp.Or(s.PaddedBS, s.BS)]++
	}
	best, n := 0, 0
	for bs, c := range hist {
		if c > n || (c == n && bs < best) {
			best, n = bs, c
		}
	}
	return best
}

// CaptureDir is the directory beside a rank's execution traces where ATOM
// (--mark-trace) writes its capture traces.
const CaptureDir = "capture_traces"

// CaptureFileName is the name ATOM gives the capture trace of the graph
// of batch size bs and at most maxQ query tokens per sequence on rank:
// bs_<bs>_q_<maxq>_rank<r>.json.gz.
func CaptureFileName(bs, maxQ, rank int) string {
	return fmt.Sprintf("bs_%d_q_%d_rank%d.json.gz", bs, maxQ, rank)
}

var captureName = regexp.MustCompile(`^bs_(\d+)(?:_q_(\d+))?_rank(\d+)\.json(?:\.gz)?$`)

// ParseCaptureFileName reads the batch size, query length (0 when the
// older bs_<bs>_rank<r> form leaves it out) and rank of a capture trace's
// file name (base name or path).
func ParseCaptureFileName(path string) (bs, maxQ, rank int, ok bool) {
	m := captureName.FindStringSubmatch(path[strings.LastIndexAny(path, `/\`)+1:])
	if m == nil {
		return 0, 0, 0, false
	}
	var v [3]int
	for i, s := range m[1:] {
		for _, c := range s {
			v[i] = v[i]*10 + int(c-'0')
			if v[i] > 1<<24 {
				return 0, 0, 0, false
			}
		}
	}
	return v[0], v[1], v[2], true
}
