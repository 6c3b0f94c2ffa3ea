package tracing

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/inflate"
	"github.com/profile-model/profile-model/internal/jsonscan"
)

// The Scanner's input buffer: refilling it (from a reader or the
// read-ahead's chunks), finding the extent of a value across refills, and
// verifying the gzip trailer at the end.

// scanBuf is the buffer size the Scanner grows to on large input.
const scanBuf = 1 << 20

// maxValue bounds one event (or top-level value) held in memory at once:
// the largest real events (a templated kernel name, a CPU op's inputs) are
// kilobytes; a value this large is hostile or damaged input, and holding it
// costs at most about twice this.
const maxValue = 64 << 20

// fill reads more input after buf[r:w], moving the unread part to the front
// and growing the buffer when that part fills more than half of it. It
// reports whether any byte was added.
func (s *scanner) fill() bool {
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
func (s *scanner) fillChunk() bool {
	c := s.ra.Next()
	if c.Err != nil {
		s.eof = true
		if c.Err != io.EOF {
			s.rerr = c.Err
		}
	}
	if c.N == 0 {
		if c.B != nil {
			s.ra.Release(c.B)
		}
		return false
	}
	left := s.w - s.r
	old, oldChunk := s.buf, s.chunk
	if left <= jsonscan.Headroom {
		start := jsonscan.Headroom - left
		copy(c.B[start:jsonscan.Headroom], s.buf[s.r:s.w])
		s.base += int64(s.r - start)
		s.buf, s.chunk = c.B, true
		s.r, s.w = start, jsonscan.Headroom+c.N
	} else {
		// An event longer than the headroom spans the boundary: join,
		// in a buffer of its own that grows by doubling (a value over
		// many chunks is copied O(1) times per byte, not once per chunk).
		need := left + c.N
		if need > maxValue {
			s.ra.Release(c.B)
			s.fail("a single value is larger than %d MB; this is not a trace event", maxValue>>20)
			return false
		}
		var nb []byte
		if !oldChunk && len(old) >= need {
			nb = old
			copy(nb, old[s.r:s.w])
		} else {
			nb = make([]byte, min(2*need, maxValue))
			copy(nb, old[s.r:s.w])
		}
		copy(nb[left:], c.B[jsonscan.Headroom:jsonscan.Headroom+c.N])
		s.ra.Release(c.B)
		s.base += int64(s.r)
		s.buf, s.chunk = nb, false
		s.r, s.w = 0, need
	}
	if oldChunk {
		s.ra.Release(old)
	}
	return true
}

// peek skips whitespace and returns the next byte without consuming it.
func (s *scanner) peek() (byte, bool) {
	for {
		for s.r < s.w {
			if c := s.buf[s.r]; !jsonscan.IsSpace(c) {
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
func (s *scanner) extent() (int, bool) {
	var e int
	switch c := s.buf[s.r]; c {
	case '"':
		e = jsonscan.StringEnd(s.buf[:s.w], s.r)
		if e < 0 {
			e = jsonscan.Incomplete
		}
	case '{', '[':
		e = jsonscan.CompositeEnd(s.buf[:s.w], s.r)
	default:
		e = jsonscan.ScalarEnd(s.buf[:s.w], s.r)
		if e == jsonscan.Incomplete && s.eof {
			e = s.w
		}
	}
	switch {
	case e >= 0:
		return e, true
	case e == jsonscan.Invalid && jsonscan.Delim(s.buf[s.r]):
		s.fail("expected a value, found %q", s.buf[s.r])
		return 0, false
	case e == jsonscan.Invalid:
		s.fail("brackets do not match")
		return 0, false
	}
	return s.valueEnd()
}

// valueEnd reads until the buffer holds the whole value starting at
// buf[s.r] (up to maxValue), in one pass however many refills it takes,
// and returns its end index in buf.
func (s *scanner) valueEnd() (int, bool) {
	var v valueScan
	for {
		switch e := v.scan(s.buf[s.r:s.w], s.eof); {
		case e >= 0:
			return s.r + e, true
		case e == jsonscan.Invalid:
			s.fail("brackets do not match")
			return 0, false
		}
		if !s.fill() {
			s.needData()
			return 0, false
		}
	}
}

// drain reads what follows the JSON document once it has ended: only
// whitespace may, and anything else is noted (a plain file is read no
// further than that). A gzip stream is read to its end, so that gzip checks
// each member's trailer (CRC-32 and size); a bad trailer becomes a
// TrailerError, and a gzip member that begins after the document is noted.
func (s *scanner) drain() {
	end := s.Offset()
	trailing := int64(-1)
	for trailing < 0 {
		for ; s.r < s.w; s.r++ {
			if !jsonscan.IsSpace(s.buf[s.r]) {
				trailing = s.Offset()
				break
			}
		}
		if trailing >= 0 || !s.fill() {
			break
		}
	}
	var snippet string
	if trailing >= 0 {
		snippet = string(s.buf[s.r:min(s.w, s.r+24)])
	}
	if s.cnt != nil {
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
			s.err = &jsonscan.TrailerError{CompressedOffset: s.cnt.n.Load(), Err: s.rerr}
		}
	}
	if s.mem != nil {
		if at := s.mem.second.Load(); at >= end {
			s.notes.add(diag.TrailingData, "member", fmt.Sprintf("a second gzip member begins at compressed byte %d, after the JSON document ended (uncompressed byte %d): it was ignored; the file is probably two files joined (cat a.gz b.gz): keep one trace per file", s.mem.secondC.Load(), end))
			return
		}
	}
	if trailing >= 0 {
		s.notes.add(diag.TrailingData, "trailing", fmt.Sprintf("byte %d: data follows the JSON document (%q...): it was ignored; the file may be damaged, or two traces joined", trailing, snippet))
	}
}

// needData reports input that ended where more was needed: a read error,
// or truncation.
func (s *scanner) needData() {
	if s.err != nil {
		return
	}
	if errors.Is(s.rerr, inflate.ErrChecksum) {
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

// dropBuffers lets go of the input buffers once scanning is over (its
// results stay readable).
func (s *scanner) dropBuffers() {
	s.buf, s.r, s.w = nil, 0, 0
	s.chunk = false
	s.ra = nil
	s.scratch = nil
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

// gzipMembers notes where a second gzip member begins, so that one
// starting after the JSON document is not read silently. The inflating
// goroutine writes it; the scanner reads it.
type gzipMembers struct {
	second  atomic.Int64 // uncompressed offset of the second member, -1 when none
	secondC atomic.Int64 // its compressed offset
}

// openInput detects gzip by its magic bytes and returns the uncompressed
// stream; for gzip, also the compressed byte count and the member reader.
func openInput(r io.Reader) (io.Reader, *countingReader, *gzipMembers, error) {
	cnt := &countingReader{r: r}
	br := bufio.NewReaderSize(cnt, 64<<10)
	magic, _ := br.Peek(2)
	if len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
		return br, nil, nil, nil
	}
	zr, err := inflate.NewReader(br)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading gzip header: %w (the file is truncated, or gzip-like but not gzip)", err)
	}
	m := &gzipMembers{}
	m.second.Store(-1)
	zr.SecondMember = func(out, in int64) {
		m.secondC.Store(in)
		m.second.Store(out)
	}
	return zr, cnt, m, nil
}
