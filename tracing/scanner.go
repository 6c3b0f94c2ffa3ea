package tracing

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"
)

// EventType classifies the events the Scanner keeps (SPEC §3.2).
type EventType uint8

const (
	EventKernel        EventType = iota // GPU kernel (cat kernel / Kernel)
	EventMemcpy                         // gpu_memcpy / Memcpy
	EventMemset                         // gpu_memset / Memset
	EventLaunch                         // runtime or driver call that launches GPU work
	EventAnnotation                     // CPU user_annotation, or a ProfilerStep#N op
	EventGPUAnnotation                  // gpu_user_annotation
	EventOp                             // CPU op (cpu_op) other than ProfilerStep#N: what launched GPU work
)

func (t EventType) String() string {
	return [...]string{"kernel", "memcpy", "memset", "launch", "annotation", "gpu_annotation", "op"}[t]
}

// Event is one kept trace event. Times are integer nanoseconds as written
// (baseTimeNanoseconds is not added: it may come after traceEvents).
type Event struct {
	Type        EventType
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
type Header struct {
	Devices        []string          // deviceProperties[i].name
	BaseNS         int64             // baseTimeNanoseconds
	HasBase        bool              // baseTimeNanoseconds was given
	Meta           map[string]string // scalar top-level keys, as text
	HasTraceEvents bool
}

// SyntaxError reports input that is not a Kineto trace, with where.
type SyntaxError struct {
	Offset int64 // byte offset in the uncompressed JSON
	Event  int64 // index in traceEvents, -1 outside it
	Msg    string
}

func (e *SyntaxError) Error() string {
	if e.Event >= 0 {
		return fmt.Sprintf("byte %d (traceEvents[%d]): %s", e.Offset, e.Event, e.Msg)
	}
	return fmt.Sprintf("byte %d: %s", e.Offset, e.Msg)
}

// TruncatedError reports input that ends before the JSON does: a trace
// whose export was killed, or a partly copied file.
type TruncatedError struct {
	Offset           int64 // uncompressed bytes read
	CompressedOffset int64 // compressed bytes read, -1 when not gzip
	Events           int64 // traceEvents entries read completely
	Err              error // the read error (io.ErrUnexpectedEOF, ...), nil for a clean EOF
}

func (e *TruncatedError) Error() string {
	where := fmt.Sprintf("at byte %d", e.Offset)
	if e.CompressedOffset >= 0 {
		where = fmt.Sprintf("at uncompressed byte %d (compressed byte %d)", e.Offset, e.CompressedOffset)
	}
	msg := fmt.Sprintf("trace is truncated: input ends %s after %d complete events", where, e.Events)
	if e.Err != nil {
		msg += " (" + e.Err.Error() + ")"
	}
	return msg + "; the export was probably killed or the copy is incomplete"
}

func (e *TruncatedError) Unwrap() error { return e.Err }

// TrailerError reports a gzip stream that is bad after the JSON ended
// cleanly: a checksum (CRC-32 or size) mismatch, a missing trailer, or
// bytes after the last member that are not gzip. The events read are
// complete, but with a checksum mismatch some of them may be wrong.
type TrailerError struct {
	CompressedOffset int64 // compressed bytes read
	Err              error
}

func (e *TrailerError) Error() string {
	switch {
	case errors.Is(e.Err, gzip.ErrChecksum):
		return "gzip checksum mismatch: the file is corrupt; copy or export it again"
	case errors.Is(e.Err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("the gzip stream ends unexpectedly at compressed byte %d, after the JSON: its checksum is missing (the file was cut short) or stray bytes follow it, so it could not be verified; copy or export it again", e.CompressedOffset)
	case errors.Is(e.Err, gzip.ErrHeader):
		return fmt.Sprintf("bytes that are not gzip follow the gzip stream (before compressed byte %d); they were ignored", e.CompressedOffset)
	}
	return fmt.Sprintf("reading the gzip stream after the JSON (compressed byte %d): %v", e.CompressedOffset, e.Err)
}

func (e *TrailerError) Unwrap() error { return e.Err }

// scanBuf is the buffer size the Scanner grows to on large input.
const scanBuf = 1 << 20

// maxValue bounds one event (or top-level value) held in memory at once.
const maxValue = 256 << 20

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
type Scanner struct {
	// KeepOps keeps every CPU op (EventOp), not only ProfilerStep#N: what
	// launched each kernel, for categories. Set it before the first Scan.
	KeepOps bool

	rd    io.Reader
	ra    *readAhead      // when set, chunks come from it (rd is unused)
	chunk bool            // buf is a read-ahead chunk, to give back
	cnt   *countingReader // compressed input, nil when not gzip
	buf   []byte
	r, w  int   // unread data is buf[r:w]
	base  int64 // stream offset of buf[0]
	eof   bool
	rerr  error

	state   scanState
	ev      Event
	err     error
	entries int64
	cats    []catCount
	names   map[string]string
	recent  [256]string
	hdr     Header
	scratch []byte
	noFast  bool // tests: no fast path (kernels read, flows skipped)
}

// NewScanner returns a Scanner reading r, plain JSON or gzip.
func NewScanner(r io.Reader) *Scanner {
	s := &Scanner{names: make(map[string]string), hdr: Header{Meta: map[string]string{}}}
	s.cnt = &countingReader{r: r}
	br := bufio.NewReaderSize(s.cnt, 64<<10)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			s.err = fmt.Errorf("reading gzip header: %w (the file is truncated, or gzip-like but not gzip)", err)
			s.state = stDone
			return s
		}
		s.rd = zr
	} else {
		s.rd = br
		s.cnt = nil
	}
	s.buf = make([]byte, 64<<10)
	return s
}

// newScannerFrom scans the chunks of a read-ahead.
func newScannerFrom(ra *readAhead, cnt *countingReader) *Scanner {
	return &Scanner{ra: ra, cnt: cnt, names: make(map[string]string), hdr: Header{Meta: map[string]string{}}}
}

// Event returns the event found by the last successful Scan. It is
// overwritten by the next Scan.
func (s *Scanner) Event() *Event { return &s.ev }

// Err returns the error that stopped scanning, nil at a clean end.
func (s *Scanner) Err() error { return s.err }

// Offset is the uncompressed byte offset reached.
func (s *Scanner) Offset() int64 { return s.base + int64(s.r) }

// Events counts every entry of traceEvents read so far, kept or not.
func (s *Scanner) Events() int64 { return s.entries }

// Categories counts traceEvents entries by cat ("" when an event has none).
func (s *Scanner) Categories() map[string]int64 {
	m := make(map[string]int64, len(s.cats))
	for _, c := range s.cats {
		m[c.cat] += c.n
	}
	return m
}

// Header returns the top-level keys read so far.
func (s *Scanner) Header() *Header { return &s.hdr }

// Scan advances to the next kept event.
func (s *Scanner) Scan() bool {
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

func (s *Scanner) fail(msg string, args ...any) {
	if s.err == nil {
		s.err = &SyntaxError{Offset: s.Offset(), Event: s.eventIndex(), Msg: fmt.Sprintf(msg, args...)}
	}
	s.state = stDone
}

func (s *Scanner) eventIndex() int64 {
	if s.state == stFirstEvent || s.state == stNextEvent {
		return s.entries
	}
	return -1
}

func (s *Scanner) truncated() {
	if s.err == nil {
		co := int64(-1)
		if s.cnt != nil {
			co = s.cnt.n.Load()
		}
		s.err = &TruncatedError{Offset: s.base + int64(s.w), CompressedOffset: co, Events: s.entries, Err: s.rerr}
	}
	s.state = stDone
}

// fill reads more input after buf[r:w], moving the unread part to the front
// and growing the buffer when that part fills more than half of it. It
// reports whether any byte was added.
func (s *Scanner) fill() bool {
	if s.eof {
		return false
	}
	if s.ra != nil {
		return s.fillChunk()
	}
	if s.r > 0 {
		n := copy(s.buf, s.buf[s.r:s.w])
		s.base += int64(s.r)
		s.w, s.r = n, 0
	}
	// Grow when the unread part fills half the buffer, and while the
	// buffer is smaller than its working size (small traces stay small).
	if s.w > len(s.buf)/2 || (len(s.buf) < scanBuf && s.base > 0) {
		if len(s.buf) >= maxValue {
			s.fail("a single value is larger than %d MB; this is not a trace event", maxValue>>20)
			return false
		}
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.w])
		s.buf = nb
	}
	added := false
	for s.w < len(s.buf) {
		n, err := s.rd.Read(s.buf[s.w:])
		s.w += n
		added = added || n > 0
		if err != nil {
			s.eof = true
			if err != io.EOF {
				s.rerr = err
			}
			break
		}
		if n == 0 {
			break
		}
	}
	return added
}

// fillChunk is fill with read-ahead: the next chunk's buffer becomes the
// scanner's, the unread bytes moved into its headroom.
func (s *Scanner) fillChunk() bool {
	c := s.ra.next()
	if c.err != nil {
		s.eof = true
		if c.err != io.EOF {
			s.rerr = c.err
		}
	}
	if c.n == 0 {
		if c.b != nil {
			s.ra.release(c.b)
		}
		return false
	}
	left := s.w - s.r
	old, oldChunk := s.buf, s.chunk
	if left <= readAheadHeadroom {
		start := readAheadHeadroom - left
		copy(c.b[start:readAheadHeadroom], s.buf[s.r:s.w])
		s.base += int64(s.r - start)
		s.buf, s.chunk = c.b, true
		s.r, s.w = start, readAheadHeadroom+c.n
	} else {
		// An event longer than the headroom spans the boundary: join.
		if left+c.n > maxValue {
			s.fail("a single value is larger than %d MB; this is not a trace event", maxValue>>20)
			return false
		}
		nb := make([]byte, left+c.n)
		copy(nb, s.buf[s.r:s.w])
		copy(nb[left:], c.b[readAheadHeadroom:readAheadHeadroom+c.n])
		s.ra.release(c.b)
		s.base += int64(s.r)
		s.buf, s.chunk = nb, false
		s.r, s.w = 0, left+c.n
	}
	if oldChunk {
		s.ra.release(old)
	}
	return true
}

// peek skips whitespace and returns the next byte without consuming it.
func (s *Scanner) peek() (byte, bool) {
	for {
		for s.r < s.w {
			if c := s.buf[s.r]; !isSpace(c) {
				return c, true
			}
			s.r++
		}
		if !s.fill() {
			return 0, false
		}
	}
}

// extent returns the end index in buf of the value starting at buf[s.r].
func (s *Scanner) extent() (int, bool) {
	for {
		var e int
		switch c := s.buf[s.r]; c {
		case '"':
			e = stringEnd(s.buf[:s.w], s.r)
			if e < 0 {
				e = incomplete
			}
		case '{', '[':
			e = compositeEnd(s.buf[:s.w], s.r)
		default:
			e = scalarEnd(s.buf[:s.w], s.r)
			if e == incomplete && s.eof {
				e = s.w
			}
		}
		switch {
		case e >= 0:
			return e, true
		case e == invalid:
			s.fail("brackets do not match")
			return 0, false
		}
		if !s.fill() {
			s.needData()
			return 0, false
		}
	}
}

func (s *Scanner) start() {
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

// drain reads a gzip stream to its end once the JSON has ended, so that
// gzip checks each member's trailer (CRC-32 and size); what is left is
// only the trailer, perhaps with trailing whitespace. A bad trailer
// becomes a TrailerError.
func (s *Scanner) drain() {
	if s.cnt == nil {
		return // plain JSON: nothing to verify
	}
	for !s.eof {
		s.r = s.w // the rest is not read
		var added bool
		if s.ra != nil {
			added = s.fillChunk()
		} else {
			added = s.fill()
		}
		if !added && !s.eof {
			s.eof, s.rerr = true, io.ErrNoProgress
		}
	}
	s.r = s.w
	if s.rerr != nil && s.err == nil {
		s.err = &TrailerError{CompressedOffset: s.cnt.n.Load(), Err: s.rerr}
	}
}

// needData reports input that ended where more was needed: a read error,
// or truncation.
func (s *Scanner) needData() {
	if s.err != nil {
		return
	}
	if errors.Is(s.rerr, gzip.ErrChecksum) {
		s.err = fmt.Errorf("byte %d: gzip checksum mismatch: the file is corrupt; copy or export it again: %w", s.Offset(), s.rerr)
		s.state = stDone
		return
	}
	if s.rerr != nil && !errors.Is(s.rerr, io.ErrUnexpectedEOF) {
		s.err = fmt.Errorf("byte %d: reading: %w", s.Offset(), s.rerr)
		s.state = stDone
		return
	}
	s.truncated()
}

func (s *Scanner) topKey() {
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
func (s *Scanner) header(key string, v []byte) {
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
			if v, ok := parseInt(t); ok {
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
func (s *Scanner) event() bool {
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
	for {
		e, kept, msg := s.parseEvent(s.buf[s.r:s.w])
		switch {
		case msg != "":
			s.fail("%s", msg)
			return false
		case e == incomplete:
			if !s.fill() {
				s.needData()
				return false
			}
			continue
		}
		if kept {
			s.ev.Index = s.entries
			s.ev.Offset = s.Offset()
		}
		s.entries++
		s.r += e
		return kept
	}
}

func (s *Scanner) countCat(cat []byte, has bool) {
	if !has {
		cat = nil
	}
	for i := range s.cats {
		if s.cats[i].cat == string(cat) {
			s.cats[i].n++
			return
		}
	}
	s.cats = append(s.cats, catCount{cat: string(cat), n: 1})
}

// class is what the Scanner does with an event of a category.
type class uint8

const (
	clSkip class = iota
	clKernel
	clMemcpy
	clMemset
	clRuntime
	clAnnotation
	clGPUAnnotation
	clOp // cpu_op / Operator: ProfilerStep#N, and the ops that launch (ops.go)
)

func classify(cat []byte) class {
	switch string(cat) {
	case "kernel", "Kernel":
		return clKernel
	case "gpu_memcpy", "Memcpy":
		return clMemcpy
	case "gpu_memset", "Memset":
		return clMemset
	case "cuda_runtime", "cuda_driver", "Runtime", "hip_runtime", "hip_api":
		return clRuntime
	case "user_annotation":
		return clAnnotation
	case "gpu_user_annotation":
		return clGPUAnnotation
	case "cpu_op", "Operator":
		return clOp
	}
	return clSkip
}

var (
	profilerStep = []byte("ProfilerStep#")
	phKey        = []byte(`"ph": "`)
	catKey       = []byte(`"cat": "`)
)

// kinetoPhase matches {"ph": " at the start of an event and returns the
// index of the phase letter (followed by its closing quote), or 0.
func kinetoPhase(b []byte) int {
	j := skipSpace(b, 1)
	if !bytes.HasPrefix(b[j:], phKey) {
		return 0
	}
	j += len(phKey)
	if j+1 >= len(b) || b[j+1] != '"' {
		return 0
	}
	return j
}

// kinetoCat matches the start Kineto writes, compact or indented:
// {"ph": "X", "cat": " and returns the index of the category's first byte,
// or 0.
func kinetoCat(b []byte) int {
	j := skipSpace(b, 1)
	if !bytes.HasPrefix(b[j:], phKey) {
		return 0
	}
	j += len(phKey) + 1
	if j+2 > len(b) || b[j] != '"' || b[j+1] != ',' {
		return 0
	}
	j = skipSpace(b, j+2)
	if !bytes.HasPrefix(b[j:], catKey) {
		return 0
	}
	return j + len(catKey)
}

// isLaunch tells runtime calls that put work on the GPU.
func isLaunch(name []byte) (launch, graph bool) {
	if bytes.Contains(name, []byte("GraphLaunch")) {
		return true, true
	}
	return bytes.Contains(name, []byte("Launch")) || bytes.Contains(name, []byte("Memcpy")) || bytes.Contains(name, []byte("Memset")), false
}

// keep decides from cat, ph and name; decided is false while a needed field
// is still unknown.
func keep(cl class, ph, name []byte, havePh, haveName, ops bool) (kept, decided bool) {
	switch cl {
	case clSkip:
		return false, true
	case clKernel, clMemcpy, clMemset:
		if !havePh {
			return false, false
		}
		return string(ph) == "X", true
	case clRuntime:
		if !haveName {
			return false, false
		}
		l, _ := isLaunch(name)
		return l, true
	case clOp:
		if ops {
			return true, true
		}
		if !haveName {
			return false, false
		}
		return bytes.HasPrefix(name, profilerStep), true
	}
	return true, true
}

// parseEvent reads one complete event object. It returns a message when the
// event is malformed.
//
// b holds the event from its '{' to the end of the buffered data. It returns
// the index past the event's '}', or incomplete when b ends first; msg
// explains a malformed event.
func (s *Scanner) parseEvent(b []byte) (end int, kept bool, msg string) {
	l := lexer{b: b, i: 1}
	var ph, cat, name, pid, tid, ts, dur, args []byte
	var havePh, haveCat, haveName, pidQ, tidQ, argsDone bool
	cl := clSkip
	if l.peek() == '}' {
		s.countCat(nil, false)
		return l.i + 1, false, ""
	}
	// Fast path for the layout Kineto writes (ph, then cat): most events
	// are skipped on their category alone.
	if j := kinetoCat(b); j > 0 {
		if e := bytes.IndexByte(b[j:min(len(b), j+64)], '"'); e > 0 {
			cat := b[j : j+e]
			cl := classify(cat)
			if cl == clKernel && !s.noFast && b[skipSpace(b, 1)+len(phKey)] == 'X' {
				if end, ok := s.kernelFast(b, j+e+1); ok {
					s.ev.Cat = s.intern(cat)
					s.countCat(cat, true)
					return end, true, ""
				}
			}
			if cl == clSkip {
				end := objectRest(b, j+e+1)
				if end < 0 {
					return s.bad(b, "")
				}
				s.countCat(cat, true)
				return end, false, ""
			}
		}
	} else if j := kinetoPhase(b); j > 0 && b[j] != 'X' {
		if !s.noFast {
			if end, cat, ok := flatEvent(b, j+2, j+512); ok {
				s.countCat(cat, true)
				return end, false, ""
			}
		}
		// Only complete ("X") events are kept: flows, instants and
		// metadata are counted by their cat, found by text when no
		// bracket comes before it (else the general path reads it), and
		// skipped from there.
		// (The search starts past the phase's closing quote: that quote
		// can begin a cat key in malformed input.)
		if c := bytes.Index(b[j+2:min(len(b), j+512)], catKey); c >= 0 {
			c += j + 2
			pre := b[j+2 : c]
			if bytes.IndexByte(pre, '{') < 0 && bytes.IndexByte(pre, '}') < 0 &&
				bytes.IndexByte(pre, '[') < 0 && bytes.IndexByte(pre, ']') < 0 {
				v := c + len(catKey)
				if e := stringEnd(b, v-1); e > 0 {
					end := objectRest(b, e)
					if end < 0 {
						return s.bad(b, "")
					}
					s.countCat(b[v:e-1], true)
					return end, false, ""
				}
			}
		}
	}
	for {
		key, ok := l.str()
		if !ok {
			return s.bad(b, "expected a key string in an event")
		}
		if !l.expect(':') {
			return s.bad(b, fmt.Sprintf("expected ':' after event key %q", key))
		}
		switch string(key) {
		case "ph":
			ph, havePh = l.str()
			if !havePh {
				return s.bad(b, "ph is not a string")
			}
		case "cat":
			cat, haveCat = l.str()
			if !haveCat {
				return s.bad(b, "cat is not a string")
			}
			cl = classify(cat)
		case "name":
			name, haveName = l.longStr()
			if !haveName {
				return s.bad(b, "name is not a string")
			}
		case "pid", "tid":
			var v []byte
			q := l.peek() == '"'
			if q {
				v, ok = l.str()
			} else {
				v, ok = l.scalar()
			}
			if !ok {
				return s.bad(b, fmt.Sprintf("bad %s", key))
			}
			if key[0] == 'p' {
				pid, pidQ = v, q
			} else {
				tid, tidQ = v, q
			}
		case "ts", "dur":
			var v []byte
			if l.peek() == '"' {
				v, ok = l.str()
			} else {
				v, ok = l.scalar()
			}
			if !ok {
				return s.bad(b, fmt.Sprintf("bad %s", key))
			}
			if key[0] == 't' {
				ts = v
			} else {
				dur = v
			}
		case "args":
			if haveCat {
				// Kept (cat came first, as Kineto writes it): read args in place.
				if kept, decided := keep(cl, ph, name, havePh, haveName, s.KeepOps); decided && kept {
					s.ev = Event{Device: -1, Stream: -1}
					if msg := parseArgs(&s.ev, &l); msg != "" {
						return s.bad(b, msg)
					}
					argsDone = true
					break
				}
			}
			a := l.i
			if !l.skip() {
				return s.bad(b, "bad args")
			}
			args = b[a:l.i]
		default:
			if !l.skip() {
				return s.bad(b, fmt.Sprintf("bad value of event key %q", key))
			}
		}
		if haveCat {
			if kept, decided := keep(cl, ph, name, havePh, haveName, s.KeepOps); decided && !kept {
				// Skipped: find the end without reading the rest.
				e := objectRest(b, l.i)
				if e < 0 {
					return s.bad(b, "")
				}
				s.countCat(cat, true)
				return e, false, ""
			}
		}
		switch l.peek() {
		case ',':
			l.i++
			continue
		case '}':
		default:
			return s.bad(b, "expected ',' or '}' in an event")
		}
		break
	}
	end = l.i + 1
	s.countCat(cat, haveCat)
	if !haveCat {
		return end, false, ""
	}
	if kept, _ := keep(cl, ph, name, havePh, haveName, s.KeepOps); !kept {
		return end, false, ""
	}
	return end, true, s.build(cl, cat, name, pid, tid, ts, dur, args, pidQ, tidQ, argsDone)
}

// bad tells a malformed event from one that the buffered data cuts short.
func (s *Scanner) bad(b []byte, msg string) (int, bool, string) {
	switch compositeEnd(b, 0) {
	case incomplete:
		return incomplete, false, ""
	case invalid:
		return 0, false, "brackets do not match"
	}
	if msg == "" {
		msg = "malformed event"
	}
	return 0, false, msg
}

// build builds s.ev from the raw fields of a kept event.
func (s *Scanner) build(cl class, cat, name, pid, tid, ts, dur, args []byte, pidQ, tidQ, argsDone bool) string {
	ev := &s.ev
	if !argsDone {
		*ev = Event{Device: -1, Stream: -1}
		if args != nil {
			if msg := parseArgs(ev, &lexer{b: args}); msg != "" {
				return msg
			}
		}
	}
	switch cl {
	case clKernel:
		ev.Type = EventKernel
	case clMemcpy:
		ev.Type = EventMemcpy
	case clMemset:
		ev.Type = EventMemset
	case clRuntime:
		ev.Type = EventLaunch
		_, ev.Graph = isLaunch(name)
	case clAnnotation:
		ev.Type = EventAnnotation
	case clOp:
		ev.Type = opEvent(name)
	case clGPUAnnotation:
		ev.Type = EventGPUAnnotation
	}
	ev.Cat = s.intern(cat)
	u, ok := unquote(name, s.scratch)
	if !ok {
		return "bad escape in name"
	}
	ev.Name = s.intern(u)
	if ts == nil {
		return fmt.Sprintf("%s event %q has no ts", cat, truncate(ev.Name, 80))
	}
	if ev.TS, ok = parseMicros(ts); !ok {
		return fmt.Sprintf("bad ts %q", truncate(string(ts), 40))
	}
	if dur != nil {
		if ev.Dur, ok = parseMicros(dur); !ok {
			return fmt.Sprintf("bad dur %q", truncate(string(dur), 40))
		}
	}
	ev.PID = idText(pid, pidQ)
	ev.TID = idText(tid, tidQ)
	return ""
}

func (s *Scanner) intern(b []byte) string {
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

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// parseArgs reads the args fields Load needs from the object at l.
func parseArgs(ev *Event, l *lexer) string {
	if !l.expect('{') {
		return "args is not an object"
	}
	if l.peek() == '}' {
		l.i++
		return ""
	}
	return argMembers(ev, l)
}

// argMembers reads args from a member's key on to the closing '}'.
func argMembers(ev *Event, l *lexer) string {
	for {
		key, ok := l.str()
		if !ok || !l.expect(':') {
			return "bad key in args"
		}
		switch string(key) {
		case "device", "stream", "correlation", "External id", "external id":
			t, ok := l.scalar()
			if !ok {
				if !l.skip() {
					return fmt.Sprintf("bad args.%s", key)
				}
				break
			}
			v, _ := parseInt(t)
			switch string(key) {
			case "device":
				ev.Device = int32(v)
			case "stream":
				ev.Stream = int32(v)
			case "correlation":
				ev.Correlation = v
			default:
				ev.External = v
			}
		case "kind":
			if l.peek() == '"' {
				v, _ := l.str()
				ev.Replay = string(v) == "Dispatch Task"
			} else if !l.skip() {
				return "bad args.kind"
			}
		case "grid", "block":
			dst := &ev.Grid
			if key[0] == 'b' {
				dst = &ev.Block
			}
			if l.peek() != '[' {
				if !l.skip() {
					return fmt.Sprintf("bad args.%s", key)
				}
				break
			}
			l.i++
			for k := 0; l.peek() != ']'; k++ {
				t, ok := l.scalar()
				if !ok {
					return fmt.Sprintf("bad args.%s", key)
				}
				if k < 3 {
					v, _ := parseInt(t)
					dst[k] = int32(v)
				}
				if !l.expect(',') {
					break
				}
			}
			if !l.expect(']') {
				return fmt.Sprintf("bad args.%s", key)
			}
		default:
			if !l.skip() {
				return fmt.Sprintf("bad value of args key %q", key)
			}
		}
		switch l.peek() {
		case ',':
			l.i++
			continue
		case '}':
			l.i++
			return ""
		}
		return "expected ',' or '}' in args"
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64 // read by the scanner while a read-ahead goroutine reads
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// kernelFast reads a kernel event in the layout Kineto writes: after ph
// and cat come name, pid, tid, ts, dur and args, each once and in that
// order, with numbers unquoted and ": " after each key. i is just past the
// cat string. It fills s.ev as the general path would (but Cat, Index and
// Offset) and returns the index past the event's '}'. Anything else, and
// input that ends first, gives ok false: the general path reads the event
// again from its start, and owns every error message.
func (s *Scanner) kernelFast(b []byte, i int) (end int, ok bool) {
	i, ok = member(b, i, `"name": "`)
	if !ok {
		return 0, false
	}
	e := stringEnd(b, i-1)
	if e < 0 {
		return 0, false
	}
	rawName := b[i : e-1]
	var pid, tid, ts, dur []byte
	if i, pid = numMember(b, e, `"pid": `); pid == nil {
		return 0, false
	}
	if i, tid = numMember(b, i, `"tid": `); tid == nil {
		return 0, false
	}
	if i, ts = numMember(b, i, `"ts": `); ts == nil {
		return 0, false
	}
	if i, dur = numMember(b, i, `"dur": `); dur == nil {
		return 0, false
	}
	if i, ok = member(b, i, `"args": {`); !ok {
		return 0, false
	}
	ev := &s.ev
	*ev = Event{Type: EventKernel, Device: -1, Stream: -1}
	if ev.TS, ok = parseMicros(ts); !ok {
		return 0, false
	}
	if ev.Dur, ok = parseMicros(dur); !ok {
		return 0, false
	}
	ev.PID, _ = parseInt(pid)
	ev.TID, _ = parseInt(tid)
	if i, ok = kernelArgs(ev, b, i); !ok {
		return 0, false
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '}' {
		return 0, false
	}
	u, ok := unquote(rawName, s.scratch)
	if !ok {
		return 0, false
	}
	ev.Name = s.intern(u)
	return i + 1, true
}

// member matches ',', spaces and key (with what follows it) at b[i] and
// returns the index past key.
func member(b []byte, i int, key string) (int, bool) {
	if i >= len(b) || b[i] != ',' {
		return 0, false
	}
	i = skipSpace(b, i+1)
	if len(b)-i < len(key) || string(b[i:i+len(key)]) != key {
		return 0, false
	}
	return i + len(key), true
}

// number returns the end of the unquoted number at b[i], or -1 when it is
// empty or not followed by a delimiter (an exponent, a quote, the end of
// the data).
func number(b []byte, i int) int {
	j := i
	for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == '-') {
		j++
	}
	if j == i || j >= len(b) {
		return -1
	}
	if c := b[j]; c != ',' && c != '}' && c != ']' && !isSpace(c) {
		return -1
	}
	return j
}

// numMember is member followed by a number; nil when either does not match.
func numMember(b []byte, i int, key string) (int, []byte) {
	i, ok := member(b, i, key)
	if !ok {
		return 0, nil
	}
	e := number(b, i)
	if e < 0 {
		return 0, nil
	}
	return e, b[i:e]
}

// kernelArgs reads a kernel's args from just past their '{' to past their
// '}'. Keys it knows, written as Kineto writes them, are read here; from
// the first other key on, argMembers reads the rest.
func kernelArgs(ev *Event, b []byte, i int) (int, bool) {
	i = skipSpace(b, i)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for i < len(b) && b[i] == '"' {
		// Keys are compared with constants (compiled to a few loads).
		var n int64
		var ok bool
		switch {
		case hasKey(b, i, `"device": `):
			if i, n, ok = intAt(b, i+len(`"device": `)); !ok {
				return 0, false
			}
			ev.Device = int32(n)
		case hasKey(b, i, `"stream": `):
			if i, n, ok = intAt(b, i+len(`"stream": `)); !ok {
				return 0, false
			}
			ev.Stream = int32(n)
		case hasKey(b, i, `"correlation": `):
			if i, ev.Correlation, ok = intAt(b, i+len(`"correlation": `)); !ok {
				return 0, false
			}
		case hasKey(b, i, `"External id": `):
			if i, ev.External, ok = intAt(b, i+len(`"External id": `)); !ok {
				return 0, false
			}
		case hasKey(b, i, `"kind": "`):
			i += len(`"kind": "`)
			e := stringEnd(b, i-1)
			if e < 0 {
				return 0, false
			}
			ev.Replay = string(b[i:e-1]) == "Dispatch Task"
			i = e
		case hasKey(b, i, `"grid": [`):
			if i, ok = dims3(&ev.Grid, b, i+len(`"grid": [`)); !ok {
				return 0, false
			}
		case hasKey(b, i, `"block": [`):
			if i, ok = dims3(&ev.Block, b, i+len(`"block": [`)); !ok {
				return 0, false
			}
		default:
			// An unusual key: the general reader goes on from it.
			l := lexer{b: b, i: i}
			if argMembers(ev, &l) != "" {
				return 0, false
			}
			return l.i, true
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case '}':
			return i + 1, true
		case ',':
			i = skipSpace(b, i+1)
			continue
		}
		return 0, false
	}
	return 0, false
}

// hasKey reports whether b[i:] starts with key (a constant, inlined).
func hasKey(b []byte, i int, key string) bool {
	return len(b)-i >= len(key) && string(b[i:i+len(key)]) == key
}

// intAt reads the unquoted number at b[i] as parseInt does (a plain
// integer in one pass, anything else by parseInt) and returns its end.
func intAt(b []byte, i int) (end int, v int64, ok bool) {
	j := i
	for j < len(b) && j-i < 18 && b[j] >= '0' && b[j] <= '9' {
		v = v*10 + int64(b[j]-'0')
		j++
	}
	if j > i && j < len(b) && (b[j] == ',' || b[j] == '}' || b[j] == ']' || isSpace(b[j])) {
		return j, v, true
	}
	e := number(b, i)
	if e < 0 {
		return 0, 0, false
	}
	v, _ = parseInt(b[i:e])
	return e, v, true
}

// dims3 reads "a, b, c]" (exactly three numbers) into dst.
func dims3(dst *[3]int32, b []byte, i int) (int, bool) {
	for k := range 3 {
		i = skipSpace(b, i)
		e, v, ok := intAt(b, i)
		if !ok {
			return 0, false
		}
		dst[k] = int32(v)
		i = skipSpace(b, e)
		if i >= len(b) {
			return 0, false
		}
		want := byte(',')
		if k == 2 {
			want = ']'
		}
		if b[i] != want {
			return 0, false
		}
		i++
	}
	return i, true
}

// flatEvent reads the members of a skipped event in the layout Kineto
// writes for flows and instants (`, "key": value` with short, unescaped
// strings and scalars, no nested value, one cat) from b[i] to its '}', and
// returns the index past it and the cat, whose key must end before
// catLimit. Anything else gives ok false. What it takes, the text search
// below would take too, with the same cat.
func flatEvent(b []byte, i, catLimit int) (end int, cat []byte, ok bool) {
	for i < len(b) {
		switch b[i] {
		case '}':
			return i + 1, cat, cat != nil
		case ',':
		default:
			return 0, nil, false
		}
		i = skipSpace(b, i+1)
		k := shortString(b, i)
		if k < 0 || k+2 > len(b) || b[k] != ':' || b[k+1] != ' ' {
			return 0, nil, false
		}
		key := b[i+1 : k-1]
		i = k + 2
		if i >= len(b) {
			return 0, nil, false
		}
		if b[i] == '"' {
			e := shortString(b, i)
			if e < 0 {
				return 0, nil, false
			}
			if string(key) == "cat" {
				if cat != nil || k+3 > catLimit {
					return 0, nil, false
				}
				cat = b[i+1 : e-1]
			}
			i = e
		} else {
			j := i
			for j < len(b) && !delim[b[j]] && b[j] != '\\' {
				j++
			}
			if j == i {
				return 0, nil, false
			}
			i = j
		}
		i = skipSpace(b, i)
	}
	return 0, nil, false
}

// shortString returns the index past the string at b[i] when it is short
// (under 64 bytes) and has no escape, else -1.
func shortString(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	for j := i + 1; j < len(b) && j < i+64; j++ {
		switch b[j] {
		case '"':
			return j + 1
		case '\\':
			return -1
		}
	}
	return -1
}
