package trim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/profile-model/profile-model/internal/inflate"

	"github.com/profile-model/profile-model/internal/jsonscan"
)

// splitter cuts a Chrome-JSON trace into its top-level members and the
// entries of traceEvents, handing out the raw bytes of each with the fields
// that decide whether it is kept. It holds one read-ahead chunk and the
// event being read, never the document.
type splitter struct {
	ra    *jsonscan.ReadAhead
	cnt   *countReader
	gzip  bool
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

// newSplitter reads r, gzip or not (told by its magic bytes), inflating on
// a read-ahead goroutine. close must be called. The first bytes are read on
// a goroutine too: a pipe that sends nothing must not hold Ctrl-C up.
func newSplitter(ctx context.Context, r io.Reader) (*splitter, error) {
	cnt := &countReader{r: r}
	src, err := jsonscan.Await(ctx, func() (io.Reader, error) {
		br := bufio.NewReaderSize(cnt, 64<<10)
		if magic, _ := br.Peek(2); len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
			return br, nil
		}
		zr, err := inflate.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("reading the gzip header: %w (the file is truncated, or not gzip)", err)
		}
		return zr, nil
	})
	if err != nil {
		return nil, err
	}
	sp := &splitter{ra: jsonscan.NewReadAhead(ctx, src), cnt: cnt}
	_, sp.gzip = src.(*inflate.Reader)
	return sp, nil
}

// countReader counts the bytes read from the input (compressed, for gzip).
// It is read once the read-ahead has handed over its last chunk.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (s *splitter) close() { s.ra.Close() }

// offset is the stream offset of the next unread byte.
func (s *splitter) offset() int64 { return s.base + int64(s.r) }

// fill appends the next chunk to the unread bytes; false at the end of the
// input.
func (s *splitter) fill() bool {
	if s.eof {
		return false
	}
	c := s.ra.Next()
	if c.Err != nil {
		s.eof = true
		if !errors.Is(c.Err, io.EOF) {
			s.err = c.Err
		}
	}
	if c.N == 0 {
		if c.B != nil {
			s.ra.Release(c.B)
		}
		return false
	}
	tail := s.b[s.r:]
	if len(tail)+c.N > maxItem {
		s.eof, s.err = true, fmt.Errorf("an event or value longer than %d MB at uncompressed byte %d: not a trace this tool reads", maxItem>>20, s.offset())
		return false
	}
	var nb []byte
	if len(tail) <= jsonscan.Headroom {
		// The few bytes of an event cut by the chunk boundary go in front
		// of the new chunk: no copy of the chunk itself.
		start := jsonscan.Headroom - len(tail)
		copy(c.B[start:], tail)
		nb = c.B[start : jsonscan.Headroom+c.N]
		if s.cur != nil {
			s.ra.Release(s.cur)
		}
		s.cur = c.B
	} else {
		// A long value: grow one buffer of our own, doubling.
		data := c.B[jsonscan.Headroom : jsonscan.Headroom+c.N]
		if s.cur == nil && s.r == 0 && cap(s.b)-len(s.b) >= c.N {
			nb = append(s.b, data...)
		} else {
			nb = make([]byte, len(tail)+c.N, 2*(len(tail)+c.N))
			copy(nb, tail)
			copy(nb[len(tail):], data)
		}
		s.ra.Release(c.B)
		if s.cur != nil {
			s.ra.Release(s.cur)
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
	return &jsonscan.SyntaxError{Offset: s.offset(), Event: ev, Msg: msg}
}

func (s *splitter) truncated() error {
	if s.err != nil && !errors.Is(s.err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("reading the trace at uncompressed byte %d: %w", s.offset(), s.err)
	}
	co := int64(-1)
	if s.gzip {
		co = s.cnt.n
	}
	return &jsonscan.TruncatedError{Offset: s.base + int64(len(s.b)), CompressedOffset: co, Events: s.n, Err: s.err}
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
			if s.state == stDone && s.err != nil && !errors.Is(s.err, context.Canceled) {
				// The JSON ended, but the gzip stream is bad after it: a
				// checksum that fails says the events may be wrong.
				return 0, nil, nil, &jsonscan.TrailerError{CompressedOffset: s.cnt.n, Err: s.err}
			}
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
	i := jsonscan.SkipSpace(b, s.r)
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
		return s.stepMember(b, i)
	case stFirstEvent, stNextEvent:
		return s.stepEvent(b, i)
	}
	// stDone: only whitespace may follow.
	s.r = i
	return 0, nil, nil, true, s.syntax("bytes after the end of the JSON object")
}

// stepMember reads a top-level member (or the document's end) from b[i].
func (s *splitter) stepMember(b []byte, i int) (it item, key, val []byte, done bool, err error) {
	if b[i] == '}' {
		s.r, s.state = i+1, stDone
		return itemEnd, nil, nil, true, nil
	}
	if s.state == stNextKey {
		if b[i] != ',' {
			return 0, nil, nil, true, s.syntax("expected ',' or '}' between top-level members")
		}
		if i = jsonscan.SkipSpace(b, i+1); i >= len(b) {
			return 0, nil, nil, false, nil
		}
	}
	if b[i] != '"' {
		return 0, nil, nil, true, s.syntax("expected a top-level key")
	}
	ke := jsonscan.StringEnd(b, i)
	if ke < 0 {
		return 0, nil, nil, false, nil
	}
	j := jsonscan.SkipSpace(b, ke)
	if j >= len(b) {
		return 0, nil, nil, false, nil
	}
	if b[j] != ':' {
		return 0, nil, nil, true, s.syntax("expected ':' after a top-level key")
	}
	j = jsonscan.SkipSpace(b, j+1)
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
	e := jsonscan.ValueEnd(b, j)
	if e == jsonscan.Incomplete {
		return 0, nil, nil, false, nil
	}
	if e < 0 {
		return 0, nil, nil, true, s.syntax(fmt.Sprintf("the value of top-level key %s is not JSON", key))
	}
	s.r, s.state = e, stNextKey
	return itemMember, key, b[j:e], true, nil
}

// stepEvent reads a traceEvents entry (or the array's end) from b[i].
func (s *splitter) stepEvent(b []byte, i int) (it item, key, val []byte, done bool, err error) {
	if b[i] == ']' {
		s.r, s.state = i+1, stNextKey
		return itemEventsEnd, nil, nil, true, nil
	}
	if s.state == stNextEvent {
		if b[i] != ',' {
			return 0, nil, nil, true, s.syntax("expected ',' or ']' after an event")
		}
		if i = jsonscan.SkipSpace(b, i+1); i >= len(b) {
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
	if n == jsonscan.Incomplete {
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
