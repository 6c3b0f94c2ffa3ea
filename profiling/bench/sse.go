package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// sseReader reads Server-Sent Events from a stream. Events are separated by
// blank lines; "data:" lines are joined with "\n"; lines starting with ":"
// are comments; other fields (event, id, retry) are ignored. Lines end in
// LF, CRLF or CR. An event that is not terminated by a blank line when the
// stream ends is incomplete and reported through Err as ErrCutMidEvent.
type sseReader struct {
	r       *bufio.Reader
	data    []byte
	hasData bool
	pending [][]byte // lines left over from a slice split at lone CRs
	long    []byte   // a line longer than the bufio buffer
	partial bool     // lines of an undispatched event were read
	tailCut bool     // the stream ended in an unterminated line after a CR
	events  int
	err     error
}

// errCutMidEvent reports a stream that ended inside an event.
var errCutMidEvent = errors.New("stream ended in the middle of an event")

// maxEventBytes bounds one event so a broken server cannot exhaust memory.
const maxEventBytes = 16 << 20

// newSSEReader returns a reader of the events in r.
func newSSEReader(r io.Reader) *sseReader {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 16<<10)
	}
	return &sseReader{r: br}
}

// Next returns the data of the next event. The slice is valid until the next
// call. It returns io.EOF at a clean end of stream, and another error when
// reading failed or the stream was cut inside an event.
func (s *sseReader) Next() ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	s.data = s.data[:0]
	s.hasData = false
	for {
		line, err := s.line()
		if err != nil {
			if err == io.EOF && (s.hasData || s.partial) {
				err = fmt.Errorf("event %d: %w", s.events, errCutMidEvent)
			}
			s.err = err
			return nil, err
		}
		if len(line) == 0 {
			s.partial = false
			if !s.hasData {
				continue // an event without data is not dispatched
			}
			s.events++
			return s.data, nil
		}
		s.partial = true
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(field) != "data" {
			continue
		}
		if s.hasData {
			s.data = append(s.data, '\n')
		}
		if len(s.data)+len(value) > maxEventBytes {
			s.err = fmt.Errorf("event %d: larger than %d bytes", s.events, maxEventBytes)
			return nil, s.err
		}
		s.data = append(s.data, value...)
		s.hasData = true
	}
}

// Events is how many events Next has returned.
func (s *sseReader) Events() int { return s.events }

// line returns the next line without its terminator.
func (s *sseReader) line() ([]byte, error) {
	if len(s.pending) > 0 {
		l := s.pending[0]
		s.pending = s.pending[1:]
		return l, nil
	}
	b, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.long = append(s.long[:0], b...)
		for err == bufio.ErrBufferFull {
			if len(s.long) > maxEventBytes {
				return nil, fmt.Errorf("event %d: line longer than %d bytes", s.events, maxEventBytes)
			}
			b, err = s.r.ReadSlice('\n')
			s.long = append(s.long, b...)
		}
		b = s.long
	}
	switch {
	case err == io.EOF && bytes.IndexByte(b, '\r') >= 0:
		// Lone CRs end lines: what precedes the last one is complete.
		i := bytes.LastIndexByte(b, '\r')
		s.tailCut = i < len(b)-1
		b = b[:i]
	case err == io.EOF && len(b) > 0:
		s.partial = true // an unterminated last line
		return nil, io.EOF
	case err == io.EOF && s.tailCut:
		s.partial = true
		return nil, io.EOF
	case err != nil:
		return nil, err
	default:
		b = b[:len(b)-1]
		if len(b) > 0 && b[len(b)-1] == '\r' {
			b = b[:len(b)-1]
		}
	}
	if bytes.IndexByte(b, '\r') < 0 {
		return b, nil
	}
	// Lone CRs end lines too.
	parts := bytes.Split(b, []byte{'\r'})
	s.pending = append(s.pending[:0], parts[1:]...)
	return parts[0], nil
}
