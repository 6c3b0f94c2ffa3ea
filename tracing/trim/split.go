package trim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
)

// splitter cuts a Chrome-JSON trace into its top-level members and the
// entries of traceEvents, handing out the raw bytes of each with the fields
// that decide whether it is kept. It holds one read-ahead chunk and the
// event being read, never the document.
type splitter struct {
	ra    *readAhead
	cur   []byte // the chunk buffer b lies in (given back when done)
	b     []byte // buffered input; b[r:] is unread
	r     int
	base  int64 // stream offset of b[0]
	eof   bool
	err   error // read error that ended the input (not io.EOF)
	state splitState
	n     int64 // traceEvents entries read
	ev    event
}

type splitState uint8

const (
	stStart splitState = iota
	stFirstKey
	stNextKey
	stFirstEvent
	stNextEvent
	stDone
)

// item is what the splitter hands out next.
type item uint8

const (
	itemMember      item = iota // a top-level member other than traceEvents
	itemEventsStart             // "traceEvents": [
	itemEvent                   // one traceEvents entry
	itemEventsEnd               // the ] that closes traceEvents
	itemEnd                     // the document's closing brace
)

// maxItem bounds one event or top-level value held in memory.
const maxItem = 256 << 20

// SyntaxError is input that is not a Chrome-JSON trace, with where.
type SyntaxError struct {
	Offset int64 // uncompressed byte offset
	Event  int64 // index in traceEvents, -1 outside it
	Msg    string
}

func (e *SyntaxError) Error() string {
	if e.Event >= 0 {
		return fmt.Sprintf("uncompressed byte %d (traceEvents[%d]): %s", e.Offset, e.Event, e.Msg)
	}
	return fmt.Sprintf("uncompressed byte %d: %s", e.Offset, e.Msg)
}

// TruncatedError is input that ends before the JSON does.
type TruncatedError struct {
	Offset int64 // uncompressed bytes read
	Events int64 // traceEvents entries read whole
	Err    error // the read error, nil at a clean end of file
}

func (e *TruncatedError) Error() string {
	msg := fmt.Sprintf("the trace ends at uncompressed byte %d, inside the JSON, after %d complete events", e.Offset, e.Events)
	if e.Err != nil {
		msg += " (" + e.Err.Error() + ")"
	}
	return msg + ": its export was killed or the copy is incomplete"
}

func (e *TruncatedError) Unwrap() error { return e.Err }

// newSplitter reads r, gzip or not (told by its magic bytes), inflating on
// a read-ahead goroutine. close must be called.
func newSplitter(ctx context.Context, r io.Reader) (*splitter, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("reading the gzip header: %w (the file is truncated, or not gzip)", err)
		}
		src = zr
	}
	return &splitter{ra: newReadAhead(ctx, src)}, nil
}

func (s *splitter) close() { s.ra.close() }

// offset is the stream offset of the next unread byte.
func (s *splitter) offset() int64 { return s.base + int64(s.r) }

// fill appends the next chunk to the unread bytes; false at the end of the
// input.
func (s *splitter) fill() bool {
	if s.eof {
		return false
	}
	c := s.ra.next()
	if c.err != nil {
		s.eof = true
		if !errors.Is(c.err, io.EOF) {
			s.err = c.err
		}
	}
	if c.n == 0 {
		if c.b != nil {
			s.ra.release(c.b)
		}
		return false
	}
	tail := s.b[s.r:]
	if len(tail)+c.n > maxItem {
		s.eof, s.err = true, fmt.Errorf("an event or value longer than %d MB at uncompressed byte %d: not a trace this tool reads", maxItem>>20, s.offset())
		return false
	}
	var nb []byte
	if len(tail) <= readAheadHeadroom {
		// The few bytes of an event cut by the chunk boundary go in front
		// of the new chunk: no copy of the chunk itself.
		start := readAheadHeadroom - len(tail)
		copy(c.b[start:], tail)
		nb = c.b[start : readAheadHeadroom+c.n]
		if s.cur != nil {
			s.ra.release(s.cur)
		}
		s.cur = c.b
	} else {
		// A long value: grow one buffer of our own, doubling.
		data := c.b[readAheadHeadroom : readAheadHeadroom+c.n]
		if s.cur == nil && s.r == 0 && cap(s.b)-len(s.b) >= c.n {
			nb = append(s.b, data...)
		} else {
			nb = make([]byte, len(tail)+c.n, 2*(len(tail)+c.n))
			copy(nb, tail)
			copy(nb[len(tail):], data)
		}
		s.ra.release(c.b)
		if s.cur != nil {
			s.ra.release(s.cur)
			s.cur = nil
		}
	}
	s.base += int64(s.r)
	s.b, s.r = nb, 0
	return true
}

func (s *splitter) syntax(msg string) error {
	ev := int64(-1)
	if s.state == stFirstEvent || s.state == stNextEvent {
		ev = s.n
	}
	return &SyntaxError{Offset: s.offset(), Event: ev, Msg: msg}
}

func (s *splitter) truncated() error {
	if s.err != nil && !errors.Is(s.err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("reading the trace at uncompressed byte %d: %w", s.offset(), s.err)
	}
	return &TruncatedError{Offset: s.base + int64(len(s.b)), Events: s.n, Err: s.err}
}

// next returns the next item: for itemMember the key (with its quotes) and
// the raw value, for itemEvent the event. The bytes are valid until the next
// call. At the end of the document it returns itemEnd, then io.EOF.
func (s *splitter) next() (it item, key, val []byte, err error) {
	for {
		it, key, val, done, err := s.step()
		if err != nil || done {
			return it, key, val, err
		}
		if !s.fill() {
			if s.state == stDone {
				return 0, nil, nil, io.EOF
			}
			return 0, nil, nil, s.truncated()
		}
	}
}

// step reads one item from the buffered bytes; done is false when they end
// before the item does (nothing is consumed then).
func (s *splitter) step() (it item, key, val []byte, done bool, err error) {
	b := s.b
	i := skipSpace(b, s.r)
	if i >= len(b) {
		s.r = i
		return 0, nil, nil, false, nil
	}
	switch s.state {
	case stStart:
		if b[i] != '{' {
			return 0, nil, nil, true, s.syntax("a trace is a JSON object, but this does not start with '{'")
		}
		s.r, s.state = i+1, stFirstKey
		return s.step()
	case stFirstKey, stNextKey:
		if b[i] == '}' {
			s.r, s.state = i+1, stDone
			return itemEnd, nil, nil, true, nil
		}
		if s.state == stNextKey {
			if b[i] != ',' {
				return 0, nil, nil, true, s.syntax("expected ',' or '}' between top-level members")
			}
			if i = skipSpace(b, i+1); i >= len(b) {
				return 0, nil, nil, false, nil
			}
		}
		if b[i] != '"' {
			return 0, nil, nil, true, s.syntax("expected a top-level key")
		}
		ke := stringEnd(b, i)
		if ke < 0 {
			return 0, nil, nil, false, nil
		}
		j := skipSpace(b, ke)
		if j >= len(b) {
			return 0, nil, nil, false, nil
		}
		if b[j] != ':' {
			return 0, nil, nil, true, s.syntax("expected ':' after a top-level key")
		}
		j = skipSpace(b, j+1)
		if j >= len(b) {
			return 0, nil, nil, false, nil
		}
		key = b[i:ke]
		if string(key) == `"traceEvents"` {
			if b[j] != '[' {
				return 0, nil, nil, true, s.syntax("traceEvents is not an array")
			}
			s.r, s.state = j+1, stFirstEvent
			return itemEventsStart, key, nil, true, nil
		}
		e := valueEnd(b, j)
		if e == incomplete {
			return 0, nil, nil, false, nil
		}
		if e < 0 {
			return 0, nil, nil, true, s.syntax(fmt.Sprintf("the value of top-level key %s is not JSON", key))
		}
		s.r, s.state = e, stNextKey
		return itemMember, key, b[j:e], true, nil
	case stFirstEvent, stNextEvent:
		if b[i] == ']' {
			s.r, s.state = i+1, stNextKey
			return itemEventsEnd, nil, nil, true, nil
		}
		if s.state == stNextEvent {
			if b[i] != ',' {
				return 0, nil, nil, true, s.syntax("expected ',' or ']' after an event")
			}
			if i = skipSpace(b, i+1); i >= len(b) {
				return 0, nil, nil, false, nil
			}
		}
		if b[i] != '{' {
			s.r = i
			return 0, nil, nil, true, s.syntax("an event is not a JSON object")
		}
		n, ok := fastEvent(b[i:], &s.ev)
		var msg string
		if !ok {
			n, msg = parseEvent(b[i:], &s.ev)
		}
		if n == incomplete {
			return 0, nil, nil, false, nil
		}
		if n < 0 {
			s.r = i
			return 0, nil, nil, true, s.syntax(msg)
		}
		s.r, s.state = i+n, stNextEvent
		s.n++
		return itemEvent, nil, nil, true, nil
	}
	// stDone: only whitespace may follow.
	s.r = i
	return 0, nil, nil, true, s.syntax("bytes after the end of the JSON object")
}

// readAhead inflates (reads its source) on its own goroutine, a few chunks
// ahead, so that decompression overlaps the splitting. Each chunk has a
// headroom in front for the bytes of an event cut by the chunk boundary.
type readAhead struct {
	full   chan chunk
	free   chan []byte
	done   chan struct{}
	exited chan struct{}
	err    error
}

// chunk holds data at b[readAheadHeadroom : readAheadHeadroom+n].
type chunk struct {
	b   []byte
	n   int
	err error
}

const (
	readAheadChunk    = 1 << 20
	readAheadDepth    = 4
	readAheadHeadroom = 64 << 10
)

func newReadAhead(ctx context.Context, r io.Reader) *readAhead {
	ra := &readAhead{
		full:   make(chan chunk, readAheadDepth),
		free:   make(chan []byte, readAheadDepth+2),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	go ra.run(ctx, r)
	return ra
}

func (ra *readAhead) run(ctx context.Context, r io.Reader) {
	defer close(ra.exited)
	made, size := 0, 64<<10 // small first, so that a small trace costs little
	for {
		var buf []byte
		if made < readAheadDepth+2 && len(ra.free) == 0 {
			buf = make([]byte, readAheadHeadroom+size)
			made++
			size = min(2*size, readAheadChunk)
		} else {
			select {
			case buf = <-ra.free:
			case <-ra.done:
				return
			}
		}
		data := buf[readAheadHeadroom:]
		n := 0
		var err error
		for n < len(data) && err == nil {
			var k int
			k, err = r.Read(data[n:])
			n += k
			if err == nil && ctx.Err() != nil {
				err = ctx.Err()
			}
		}
		select {
		case ra.full <- chunk{buf, n, err}:
		case <-ra.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// next returns the next chunk; after the last, an empty one with the error
// that ended the input (io.EOF at a clean end).
func (ra *readAhead) next() chunk {
	if ra.err != nil {
		return chunk{err: ra.err}
	}
	c := <-ra.full
	ra.err = c.err
	return c
}

func (ra *readAhead) release(b []byte) {
	select {
	case ra.free <- b:
	default:
	}
}

func (ra *readAhead) close() {
	close(ra.done)
	<-ra.exited
}
