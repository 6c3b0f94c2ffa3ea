package tracing

import (
	"fmt"
	"io"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/jsonscan"
	"github.com/profile-model/profile-model/internal/units"
)

// EventType classifies the events the Scanner keeps.
type eventType uint8

const (
	eventKernel        eventType = iota // GPU kernel (cat kernel / Kernel)
	eventMemcpy                         // gpu_memcpy / Memcpy
	eventMemset                         // gpu_memset / Memset
	eventLaunch                         // runtime or driver call that launches GPU work
	eventAnnotation                     // CPU user_annotation, or a ProfilerStep#N op
	eventGPUAnnotation                  // gpu_user_annotation
	eventOp                             // CPU op (cpu_op) other than ProfilerStep#N: what launched GPU work
)

func (t eventType) String() string {
	return [...]string{"kernel", "memcpy", "memset", "launch", "annotation", "gpu_annotation", "op"}[t]
}

// Event is one kept trace event. Times are integer nanoseconds as written
// (baseTimeNanoseconds is not added: it may come after traceEvents).
type traceEvent struct {
	Type        eventType
	Cat         string // category as written
	Name        string // interned: equal names share memory
	TS, Dur     int64  // ns
	PID, TID    int64  // a string id ("stream 7") gives its trailing number
	Device      int32  // args.device, -1 when absent
	Stream      int32  // args.stream, -1 when absent
	Correlation int64  // args.correlation, 0 when absent
	External    int64  // args["External id"], 0 when absent
	Grid, Block [3]int32
	Replay      bool  // ROCm "kind": "Dispatch Task": replayed from a graph
	Graph       bool  // a graph launch (cudaGraphLaunch, hipGraphLaunch)
	Index       int64 // position in traceEvents
	Offset      int64 // byte offset of the event in the uncompressed JSON
}

// Header holds the top-level keys besides traceEvents. Kineto writes some of
// them after traceEvents, so it is complete only once Scan returned false.
type traceHeader struct {
	Devices        []string          // deviceProperties[i].name
	BaseNS         int64             // baseTimeNanoseconds
	HasBase        bool              // baseTimeNanoseconds was given
	Meta           map[string]string // scalar top-level keys, as text
	HasTraceEvents bool
}

type scanState uint8

const (
	stStart scanState = iota
	stFirstKey
	stNextKey
	stFirstEvent
	stNextEvent
	stDone
)

type catCount struct {
	cat string
	n   int64
}

// Scanner reads a Kineto trace as a stream, modelled on bufio.Scanner: Scan
// advances to the next kept event, Event returns it, Err reports why
// scanning stopped. Gzip input is detected by its magic bytes. Skipped
// events are counted (Events, Categories) but never decoded.
type scanner struct {
	// KeepOps keeps every CPU op (EventOp), not only ProfilerStep#N: what
	// launched each kernel, for categories. Set it before the first Scan.
	KeepOps bool

	rd    io.Reader
	ra    *jsonscan.ReadAhead // when set, chunks come from it (rd is unused)
	chunk bool                // buf is a read-ahead chunk, to give back
	cnt   *countingReader     // compressed input, nil when not gzip
	mem   *gzipMembers        // gzip members, nil when not gzip
	buf   []byte
	r, w  int   // unread data is buf[r:w]
	base  int64 // stream offset of buf[0]
	eof   bool
	rerr  error

	state   scanState
	ev      traceEvent
	err     error
	entries int64
	cats    []catCount
	catHint [16]uint8 // cat hash -> index+1 into cats, 0 when none
	names   map[string]string
	recent  [256]string
	hdr     traceHeader
	scratch []byte
	noFast  bool // tests: no fast path (kernels read, flows skipped)
	notes   notes
}

// NewScanner returns a Scanner reading r, plain JSON or gzip.
func newScanner(r io.Reader) *scanner {
	s := &scanner{names: make(map[string]string), hdr: traceHeader{Meta: map[string]string{}}}
	src, cnt, mem, err := openInput(r)
	if err != nil {
		s.err = err
		s.state = stDone
		return s
	}
	s.rd, s.cnt, s.mem = src, cnt, mem
	s.buf = make([]byte, 64<<10)
	return s
}

// newScannerFrom scans the chunks of a read-ahead.
func newScannerFrom(ra *jsonscan.ReadAhead, cnt *countingReader, mem *gzipMembers) *scanner {
	return &scanner{ra: ra, cnt: cnt, mem: mem, names: make(map[string]string), hdr: traceHeader{Meta: map[string]string{}}}
}

// Event returns the event found by the last successful Scan. It is
// overwritten by the next Scan.
func (s *scanner) Event() *traceEvent { return &s.ev }

// Err returns the error that stopped scanning, nil at a clean end.
func (s *scanner) Err() error { return s.err }

// Offset is the uncompressed byte offset reached.
func (s *scanner) Offset() int64 { return s.base + int64(s.r) }

// Events counts every entry of traceEvents read so far, kept or not.
func (s *scanner) Events() int64 { return s.entries }

// Categories counts traceEvents entries by cat ("" when an event has none).
func (s *scanner) Categories() map[string]int64 {
	m := make(map[string]int64, len(s.cats))
	for _, c := range s.cats {
		m[c.cat] += c.n
	}
	return m
}

// Header returns the top-level keys read so far.
func (s *scanner) Header() *traceHeader { return &s.hdr }

// Scan advances to the next kept event.
func (s *scanner) Scan() bool {
	for s.err == nil && s.state != stDone {
		var kept bool
		switch s.state {
		case stStart:
			s.start()
		case stFirstKey, stNextKey:
			s.topKey()
		case stFirstEvent, stNextEvent:
			kept = s.event()
		}
		if kept {
			return true
		}
	}
	return false
}

func (s *scanner) fail(msg string, args ...any) {
	if s.err == nil {
		s.err = &jsonscan.SyntaxError{Offset: s.Offset(), Event: s.eventIndex(), Msg: fmt.Sprintf(msg, args...)}
	}
	s.state = stDone
}

func (s *scanner) eventIndex() int64 {
	if s.state == stFirstEvent || s.state == stNextEvent {
		return s.entries
	}
	return -1
}

func (s *scanner) truncated() {
	if s.err == nil {
		co := int64(-1)
		if s.cnt != nil {
			co = s.cnt.n.Load()
		}
		s.err = &jsonscan.TruncatedError{Offset: s.base + int64(s.w), CompressedOffset: co, Events: s.entries, Err: s.rerr}
	}
	s.state = stDone
}

func (s *scanner) start() {
	for s.w-s.r < 4 && s.fill() {
	}
	if enc, fix := encodingOf(s.buf[s.r:s.w]); enc != "" {
		s.fail("the input is %s, not plain UTF-8 JSON as the PyTorch profiler writes it: %s", enc, fix)
		return
	}
	c, ok := s.peek()
	switch {
	case !ok:
		if s.err == nil && s.rerr != nil {
			s.needData()
		} else if s.err == nil {
			if s.Offset() == 0 {
				s.fail("empty input: not a trace")
			} else {
				s.fail("only whitespace: not a trace")
			}
		}
	case c == '{':
		s.r++
		s.state = stFirstKey
	case c == '[':
		s.fail("the top level is a JSON array (the old Chrome trace format); profile-model reads PyTorch profiler (Kineto) traces, a JSON object with traceEvents — export with torch.profiler's export_chrome_trace")
	default:
		s.fail("not JSON (starts with %q): expected a PyTorch profiler trace (.json or .json.gz)", c)
	}
}

func (s *scanner) topKey() {
	c, ok := s.peek()
	if !ok {
		s.needData()
		return
	}
	if c == '}' {
		s.r++
		if !s.hdr.HasTraceEvents {
			s.fail("no traceEvents key: this JSON object is not a PyTorch profiler (Kineto) trace")
			return
		}
		s.state = stDone
		s.drain()
		return
	}
	if s.state == stNextKey {
		if c != ',' {
			s.fail("expected ',' or '}' after a top-level value, found %q", c)
			return
		}
		s.r++
		if c, ok = s.peek(); !ok {
			s.needData()
			return
		}
	}
	if c != '"' {
		s.fail("expected a key string, found %q", c)
		return
	}
	e, ok := s.extent()
	if !ok {
		return
	}
	key := string(s.buf[s.r+1 : e-1])
	s.r = e
	if c, ok = s.peek(); !ok {
		s.needData()
		return
	}
	if c != ':' {
		s.fail("expected ':' after key %q", key)
		return
	}
	s.r++
	if c, ok = s.peek(); !ok {
		s.needData()
		return
	}
	s.state = stNextKey
	if key == "traceEvents" {
		if s.hdr.HasTraceEvents {
			s.fail("a second traceEvents key: a trace has one array of events (two traces joined into one file?)")
			return
		}
		if c != '[' {
			s.fail("traceEvents is not an array")
			return
		}
		s.r++
		s.hdr.HasTraceEvents = true
		s.state = stFirstEvent
		return
	}
	e, ok = s.extent()
	if !ok {
		return
	}
	s.header(key, s.buf[s.r:e])
	s.r = e
}

// header keeps what Load needs of a top-level value.
func (s *scanner) header(key string, v []byte) {
	l := lexer{b: v}
	switch key {
	case "deviceProperties":
		if !l.expect('[') {
			return
		}
		for l.peek() == '{' {
			name := ""
			l.i++
			for l.peek() == '"' {
				k, _ := l.str()
				if !l.expect(':') {
					return
				}
				if string(k) == "name" && l.peek() == '"' {
					raw, _ := l.str()
					if u, ok := unquote(raw, s.scratch); ok {
						name = string(u)
					}
				} else if !l.skip() {
					return
				}
				if !l.expect(',') {
					break
				}
			}
			if !l.expect('}') {
				return
			}
			s.hdr.Devices = append(s.hdr.Devices, name)
			if !l.expect(',') {
				break
			}
		}
	case "baseTimeNanoseconds":
		if t, ok := l.scalar(); ok {
			if v, ok := jsonscan.ParseInt(t); ok {
				s.hdr.BaseNS, s.hdr.HasBase = v, true
			}
		}
	default:
		switch l.peek() {
		case '"':
			raw, _ := l.str()
			if u, ok := unquote(raw, s.scratch); ok && len(u) <= 1024 {
				s.hdr.Meta[key] = string(u)
			}
		case '{', '[':
		default:
			if t, ok := l.scalar(); ok {
				s.hdr.Meta[key] = string(t)
			}
		}
	}
}

// event reads one traceEvents entry and reports whether it is kept.
func (s *scanner) event() bool {
	c, ok := s.peek()
	if !ok {
		s.needData()
		return false
	}
	if c == ']' {
		s.r++
		s.state = stNextKey
		return false
	}
	if s.state == stNextEvent {
		if c != ',' {
			s.fail("expected ',' or ']' between events, found %q", c)
			return false
		}
		s.r++
		if c, ok = s.peek(); !ok {
			s.needData()
			return false
		}
	}
	s.state = stNextEvent
	if c != '{' {
		if c == ']' || c == '}' || c == ':' || c == ',' {
			s.fail("unexpected %q in traceEvents", c)
			return false
		}
		e, ok := s.extent()
		if !ok {
			return false
		}
		s.countCat(nil, false)
		s.entries++
		s.r = e
		return false
	}
	// One pass: parse the event in the buffered data; when the data ends
	// first, read more and parse it again (events are small, refills rare).
	whole := false // the buffer holds the whole event
	for {
		e, kept, msg := s.parseEvent(s.buf[s.r:s.w])
		switch {
		case msg != "":
			s.fail("%s", msg)
			return false
		case e == jsonscan.Incomplete && !whole:
			// Read to the event's end in one pass, then parse it once:
			// parsing again after every refill would cost the square
			// of a huge event's size.
			if _, ok := s.valueEnd(); !ok {
				return false
			}
			whole = true
			continue
		case e == jsonscan.Incomplete:
			if !s.fill() {
				s.needData()
				return false
			}
			continue
		}
		if kept {
			s.ev.Index = s.entries
			s.ev.Offset = s.Offset()
			if s.ev.Dur < 0 {
				s.eventNote(diag.ImpossibleValue, "negative dur", "%s %q has a negative duration (%s µs): counted as 0", s.ev.Type, truncate(s.ev.Name, 80), units.Duration(s.ev.Dur))
				s.ev.Dur = 0
			}
		}
		s.entries++
		s.r += e
		return kept
	}
}

// countCat counts an event of cat (of no cat when has is false) and
// returns the cat's index in s.cats.
func (s *scanner) countCat(cat []byte, has bool) int {
	if !has {
		cat = nil
	}
	k := s.findCat(cat)
	if k < 0 {
		k = len(s.cats)
		s.cats = append(s.cats, catCount{cat: string(cat)})
		if k < 255 {
			s.catHint[catHash(cat)] = uint8(k + 1)
		}
	}
	s.cats[k].n++
	return k
}

// findCat returns the index of cat in s.cats, -1 when it is not there. A
// trace has a handful of cats: a hint by a cheap hash finds most at once.
func (s *scanner) findCat(cat []byte) int {
	h := catHash(cat)
	if k := int(s.catHint[h]) - 1; k >= 0 && s.cats[k].cat == string(cat) {
		return k
	}
	for k := range s.cats {
		if s.cats[k].cat == string(cat) {
			if k < 255 {
				s.catHint[h] = uint8(k + 1)
			}
			return k
		}
	}
	return -1
}

func catHash(cat []byte) int {
	if len(cat) == 0 {
		return 0
	}
	return (len(cat) + int(cat[0]) + int(cat[len(cat)-1])) & 15
}

func (s *scanner) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	// A small direct-mapped cache in front of the map: kernel names repeat
	// in short cycles (one layer), and comparing is cheaper than hashing.
	h := (len(b)*31 + int(b[len(b)-1])*7 + int(b[len(b)/2])) & (len(s.recent) - 1)
	if v := s.recent[h]; v == string(b) {
		return v
	}
	v, ok := s.names[string(b)]
	if !ok {
		v = string(b)
		s.names[v] = v
	}
	s.recent[h] = v
	return v
}

// encodingOf names the text encoding that the first bytes of the input
// show when it is not plain UTF-8 (a byte-order mark, or the zero bytes
// that UTF-16 and UTF-32 put around ASCII), with what to do; "" for UTF-8.
func encodingOf(b []byte) (name, fix string) {
	const convert = "convert it to UTF-8 (iconv -f %s -t UTF-8) or export the trace again"
	bom := func(p ...byte) bool { return len(b) >= len(p) && string(b[:len(p)]) == string(p) }
	switch {
	case bom(0xEF, 0xBB, 0xBF):
		return "UTF-8 with a byte-order mark (EF BB BF, added by an editor)", "remove the mark (sed -i '1s/^\\xEF\\xBB\\xBF//' FILE) or export the trace again"
	case bom(0, 0, 0xFE, 0xFF):
		return "UTF-32 big-endian (byte-order mark 00 00 FE FF)", fmt.Sprintf(convert, "UTF-32")
	case bom(0xFF, 0xFE, 0, 0):
		return "UTF-32 little-endian (byte-order mark FF FE 00 00)", fmt.Sprintf(convert, "UTF-32")
	case bom(0xFE, 0xFF):
		return "UTF-16 big-endian (byte-order mark FE FF)", fmt.Sprintf(convert, "UTF-16")
	case bom(0xFF, 0xFE):
		return "UTF-16 little-endian (byte-order mark FF FE)", fmt.Sprintf(convert, "UTF-16")
	case len(b) >= 4 && b[0] == 0 && b[1] == 0 && b[2] == 0 && jsonStart(b[3]):
		return "UTF-32 big-endian (zero bytes around the text)", fmt.Sprintf(convert, "UTF-32BE")
	case len(b) >= 4 && jsonStart(b[0]) && b[1] == 0 && b[2] == 0 && b[3] == 0:
		return "UTF-32 little-endian (zero bytes around the text)", fmt.Sprintf(convert, "UTF-32LE")
	case len(b) >= 2 && b[0] == 0 && jsonStart(b[1]):
		return "UTF-16 big-endian (zero bytes around the text)", fmt.Sprintf(convert, "UTF-16BE")
	case len(b) >= 2 && jsonStart(b[0]) && b[1] == 0:
		return "UTF-16 little-endian (zero bytes around the text)", fmt.Sprintf(convert, "UTF-16LE")
	}
	return "", ""
}

// jsonStart tells the bytes a JSON document can start with.
func jsonStart(c byte) bool { return c == '{' || c == '[' || jsonscan.IsSpace(c) }
