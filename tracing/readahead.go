package tracing

import (
	"context"
	"io"
)

// readAhead decompresses (reads its source) on its own goroutine, a few
// chunks ahead, so that gzip decompression overlaps JSON scanning (the pgzip
// idea, without parallel inflation: one trace is one deflate stream). The
// Scanner takes each chunk's buffer as its own instead of copying it: a
// headroom before the data receives the few bytes of an event cut by the
// chunk boundary.
type readAhead struct {
	ctx    context.Context
	full   chan chunk
	free   chan []byte
	done   chan struct{}
	exited chan struct{}
	err    error // the error that ended the stream, once seen
}

// chunk is a buffer whose data is b[readAheadHeadroom : readAheadHeadroom+n].
type chunk struct {
	b   []byte
	n   int
	err error
}

// Sizes: scanning and decompression go at uneven speeds from chunk to
// chunk (and the scheduler interrupts either), and four chunks queued
// absorb that: one queued chunk made the 1 GB trace's inspect 0.3 s
// slower. Each hand-over may park and wake a goroutine, so
// chunks are not small: 512 KB, about 3.4 MB of buffers in all (1 MB
// chunks were no faster).
const (
	readAheadChunk    = 512 << 10
	readAheadDepth    = 4
	readAheadHeadroom = 64 << 10
)

func newReadAhead(ctx context.Context, r io.Reader) *readAhead {
	ra := &readAhead{
		ctx:    ctx,
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
	// Buffers are made on demand, small first, so that a small trace costs
	// little; they grow to readAheadChunk.
	made, size := 0, 64<<10
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
			if ctx.Err() != nil && err == nil {
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

// next returns the next chunk; after the last one, an empty chunk with the
// error that ended the stream (io.EOF at a clean end).
func (ra *readAhead) next() chunk {
	if ra.err != nil {
		return chunk{err: ra.err}
	}
	// A read that cannot be interrupted (a slow device) still lets the
	// scan end when ctx is cancelled.
	var c chunk
	select {
	case c = <-ra.full:
	case <-ra.ctx.Done():
		c = chunk{err: ra.ctx.Err()}
	}
	ra.err = c.err
	return c
}

// release gives a chunk's buffer back for reuse.
func (ra *readAhead) release(b []byte) {
	select {
	case ra.free <- b:
	default:
	}
}

// Close stops the goroutine, waits for it, and lets go of the buffers it
// holds (a trace's analysis goes on after the scan: they are garbage then).
func (ra *readAhead) Close() {
	close(ra.done)
	if ra.ctx.Err() != nil {
		// Cancelled: the goroutine may be blocked in a read that cannot
		// be interrupted; it ends after that read, on done.
		return
	}
	<-ra.exited
	for {
		select {
		case <-ra.free:
		case <-ra.full:
		default:
			return
		}
	}
}
