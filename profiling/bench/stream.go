package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// streamTransport speaks the HTTP/1.1 of a streaming completion itself:
// the request written whole, the response read in the caller's goroutine,
// kept-alive connections reused. net/http's transport holds two goroutines
// (with their stacks), two buffers and a dozen objects per connection: at a
// thousand streams, most of the client's memory. It serves plain http://
// without a proxy, what engines listen on; anything else goes through
// net/http.
type streamTransport struct {
	base    string // the base URL it serves
	prefix  string // the base URL's path, before each endpoint
	addr    string // host:port to dial
	host    string // the Host header
	dialer  net.Dialer
	mu      sync.Mutex
	idle    []*streamConn
	maxIdle int
}

// streamConn is one connection and the buffer it is read through.
// While a response head is read, onRead is told of every read that brings
// bytes: a server sending its head a byte at a time is slow, not stalled.
type streamConn struct {
	nc     net.Conn
	br     *bufio.Reader
	onRead func()
}

func (c *streamConn) Read(p []byte) (int, error) {
	n, err := c.nc.Read(p)
	if n > 0 && c.onRead != nil {
		c.onRead()
	}
	return n, err
}

// newStreamTransport returns a transport for base, nil when base needs
// net/http (https, a URL it cannot take, or a proxy: proxy is the
// transport's proxy function).
func newStreamTransport(base string, maxIdle int, proxy func(*http.Request) (*url.URL, error)) *streamTransport {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil
	}
	if proxy != nil {
		if p, err := proxy(&http.Request{URL: u}); err != nil || p != nil {
			return nil
		}
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return &streamTransport{
		base:    base,
		prefix:  strings.TrimRight(u.EscapedPath(), "/"),
		addr:    addr,
		host:    u.Host,
		dialer:  net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		maxIdle: maxIdle,
	}
}

func (t *streamTransport) conn(ctx context.Context) (c *streamConn, reused bool, err error) {
	t.mu.Lock()
	if n := len(t.idle); n > 0 {
		c = t.idle[n-1]
		t.idle[n-1] = nil
		t.idle = t.idle[:n-1]
		t.mu.Unlock()
		return c, true, nil
	}
	t.mu.Unlock()
	nc, err := t.dialer.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return nil, false, err
	}
	c = &streamConn{nc: nc}
	c.br = bufio.NewReaderSize(c, streamBuf)
	return c, false, nil
}

func (t *streamTransport) put(c *streamConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.idle) >= t.maxIdle {
		c.nc.Close()
		return
	}
	t.idle = append(t.idle, c)
}

// post sends body to path and reads the response's status and headers;
// the body is read from the returned reader, which must be closed. A
// connection kept alive that the server had closed meanwhile (the write
// failed, or it ended before any byte of a response) is replaced by the
// next one, as net/http does, and the request sent again: it never
// reached the server, which closes idle connections after a few seconds
// (ATOM's after 5 s), so this is not a failure; resent counts them. After a
// server restart every idle connection is such a one, and a fresh dial
// ends the search. On a fresh connection, or once a response began, the
// request did reach the server and an error is a failure.
func (t *streamTransport) post(ctx context.Context, path string, body []byte, onRead func()) (status int, resp *streamBody, resent int, err error) {
	for ; ; resent++ {
		c, reused, err := t.conn(ctx)
		if err != nil {
			return 0, nil, resent, err
		}
		// A cancelled or expired ctx ends any read or write at once.
		stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Unix(1, 0)) })
		c.onRead = onRead
		status, r, started, err := t.exchange(c, path, body)
		c.onRead = nil
		if err == nil {
			r.t, r.c, r.stop = t, c, stop
			return status, r, resent, nil
		}
		stop()
		c.nc.Close()
		if reused && !started && ctx.Err() == nil {
			continue // the server had closed the idle connection
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return 0, nil, resent, err
	}
}

// exchange writes the request and reads the response head. started says
// whether any byte of a response came.
func (t *streamTransport) exchange(c *streamConn, path string, body []byte) (status int, r *streamBody, started bool, err error) {
	head := make([]byte, 0, 256)
	head = append(head, "POST "...)
	head = append(head, t.prefix...)
	head = append(head, path...)
	head = append(head, " HTTP/1.1\r\nHost: "...)
	head = append(head, t.host...)
	head = append(head, "\r\nUser-Agent: profile-model\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: "...)
	head = strconv.AppendInt(head, int64(len(body)), 10)
	head = append(head, "\r\n\r\n"...)
	bufs := net.Buffers{head, body}
	if _, err := bufs.WriteTo(c.nc); err != nil {
		return 0, nil, false, err
	}
	for {
		line, err := readLine(c.br)
		if err != nil {
			return 0, nil, c.br.Buffered() > 0 || len(line) > 0, err
		}
		status, close, err := parseStatus(line)
		if err != nil {
			return 0, nil, true, err
		}
		r := &streamBody{length: -1, close: close}
		for {
			line, err := readLine(c.br)
			if err != nil {
				return 0, nil, true, err
			}
			if len(line) == 0 {
				break
			}
			name, value, ok := bytes.Cut(line, []byte{':'})
			if !ok {
				return 0, nil, true, fmt.Errorf("malformed response header line %.80q", line)
			}
			value = bytes.TrimSpace(value)
			switch strings.ToLower(string(bytes.TrimSpace(name))) {
			case "transfer-encoding":
				r.chunked = hasToken(value, "chunked")
			case "content-length":
				n, err := strconv.ParseInt(string(value), 10, 64)
				if err != nil || n < 0 {
					return 0, nil, true, fmt.Errorf("bad Content-Length %.40q", value)
				}
				r.length = n
			case "connection":
				if hasToken(value, "close") {
					r.close = true
				}
			case "content-type", "location": // for the errors of a wrong answer
				r.header = append(r.header, strings.ToLower(string(bytes.TrimSpace(name))), string(value))
			}
		}
		if status >= 100 && status < 200 {
			continue // informational: the response follows
		}
		if r.chunked {
			r.length = -1
		} else if r.length < 0 {
			r.close = true // the body ends with the connection
		}
		r.br = c.br
		return status, r, true, nil
	}
}

// readLine reads a line of the response head without its CRLF (or LF);
// one longer than the buffer is gathered, up to 1 MB (net/http's bound on
// a response head).
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		long := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull && len(long) < 1<<20 {
			line, err = br.ReadSlice('\n')
			long = append(long, line...)
		}
		if err == bufio.ErrBufferFull {
			return nil, errors.New("response header line longer than 1 MB")
		}
		line = long
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return line, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// parseStatus reads "HTTP/1.1 200 OK"; close is true for HTTP/1.0 (no
// keep-alive unless asked, which this client does not).
func parseStatus(line []byte) (status int, close bool, err error) {
	proto, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok || !bytes.HasPrefix(proto, []byte("HTTP/1.")) || len(rest) < 3 {
		return 0, false, fmt.Errorf("malformed HTTP status line %.80q", line)
	}
	code, err := strconv.Atoi(string(rest[:3]))
	if err != nil || code < 100 || len(rest) > 3 && rest[3] != ' ' {
		return 0, false, fmt.Errorf("malformed HTTP status line %.80q", line)
	}
	return code, string(proto) == "HTTP/1.0", nil
}

// hasToken reports whether the comma-separated header value v holds tok.
func hasToken(v []byte, tok string) bool {
	for part := range bytes.SplitSeq(v, []byte{','}) {
		if strings.EqualFold(string(bytes.TrimSpace(part)), tok) {
			return true
		}
	}
	return false
}

// streamBody reads a response body (chunked, of a length, or to the end
// of the connection). At its clean end the connection goes back to the
// transport; closed before, or on an error, the connection is closed.
type streamBody struct {
	t       *streamTransport
	c       *streamConn
	br      *bufio.Reader
	stop    func() bool
	chunked bool
	length  int64 // bytes left (chunked: in the current chunk), -1 unknown
	crlf    bool  // the CRLF ending a chunk's data is still to read
	close   bool  // the connection is not kept alive
	done    bool  // the body was read to its end, or closed
	err     error
	header  []string // Content-Type and Location, as name, value pairs
}

func (r *streamBody) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.done {
		return 0, io.EOF
	}
	if r.chunked {
		for r.length <= 0 {
			if err := r.nextChunk(); err != nil {
				return 0, r.fail(err)
			}
			if r.done {
				return 0, io.EOF
			}
		}
	} else if r.length == 0 {
		r.finish()
		return 0, io.EOF
	}
	if r.length > 0 && int64(len(p)) > r.length {
		p = p[:r.length]
	}
	n, err := r.br.Read(p)
	if r.length > 0 {
		r.length -= int64(n)
		if r.chunked && r.length == 0 {
			r.crlf = true
		}
	}
	switch {
	case err == io.EOF && !r.chunked && r.length < 0:
		r.finish() // the body ends with the connection
		return n, io.EOF
	case err == io.EOF:
		return n, r.fail(io.ErrUnexpectedEOF)
	case err != nil:
		return n, r.fail(err)
	}
	return n, nil
}

// nextChunk reads up to the next chunk's data: the CRLF ending the last
// one, then a size line; size 0 reads the trailer and ends the body. The
// grammar is net/http's (FuzzStreamBody).
func (r *streamBody) nextChunk() error {
	if r.crlf {
		var crlf [2]byte
		if _, err := io.ReadFull(r.br, crlf[:]); err != nil {
			return unexpected(err)
		}
		if crlf != [2]byte{'\r', '\n'} {
			return errors.New("malformed chunked body: no CRLF after a chunk")
		}
		r.crlf = false
	}
	line, err := readChunkLine(r.br)
	if err != nil {
		return unexpected(err)
	}
	n, ok := chunkSize(line)
	if !ok {
		return fmt.Errorf("malformed chunk size line %.40q", line)
	}
	if n > 0 {
		r.length = n
		return nil
	}
	for { // the trailer, to its empty line
		line, err := readLine(r.br)
		if err != nil {
			return unexpected(err)
		}
		if len(line) == 0 {
			r.finish()
			return nil
		}
	}
}

// readChunkLine reads a line of the chunked framing: it ends in CRLF (a
// bare LF is not allowed there), has no other CR, and is under 4 KB.
func readChunkLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, errors.New("chunked line too long")
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if i := bytes.IndexByte(line, '\r'); len(line) < 2 || i != len(line)-2 {
		return nil, errors.New("malformed chunked line: no CRLF at its end, or a CR before")
	}
	line = line[:len(line)-2]
	if len(line) >= 4096 {
		return nil, errors.New("chunked line too long")
	}
	return line, nil
}

// chunkSize reads a chunk size line: hex digits, then maybe extensions
// after a ';', then maybe spaces.
func chunkSize(line []byte) (int64, bool) {
	line = bytes.TrimRight(line, " \t")
	line, _, _ = bytes.Cut(line, []byte{';'})
	if len(line) == 0 || len(line) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range line {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | int64(c)
	}
	return n, true
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// finish ends a body read to its end: its connection is reused unless it
// is not kept alive or ctx fired (its deadline is then set).
func (r *streamBody) finish() {
	r.done = true
	if r.c == nil {
		return
	}
	if r.stop() && !r.close {
		r.t.put(r.c)
	} else {
		r.c.nc.Close()
	}
	r.c = nil
}

func (r *streamBody) fail(err error) error {
	r.err = err
	if r.c != nil {
		r.stop()
		r.c.nc.Close()
		r.c = nil
	}
	return err
}

// Close lets go of the body: a body not read to its end closes its
// connection.
func (r *streamBody) Close() error {
	if r.c != nil {
		r.stop()
		r.c.nc.Close()
		r.c = nil
	}
	r.done = true
	return nil
}
