package jsonscan

import (
	"context"
	"io"
)

// ReadAhead reads (and so decompresses) its source on its own goroutine, a
// few chunks ahead, so that gzip inflation overlaps JSON scanning (the
// pgzip idea, without parallel inflation: one trace is one deflate stream).
// A reader takes each chunk's buffer as its own instead of copying it: a
// headroom before the data receives the few bytes of an event cut by the
// chunk boundary. Cancelling ctx ends a wait for data at once, even when a
// read cannot be interrupted.
type ReadAhead struct {
	ctx    context.Context
	full   chan Chunk
	free   chan []byte
	done   chan struct{}
	exited chan struct{}
	err    error // the error that ended the stream, once seen
}

// Chunk is a buffer whose data is B[Headroom : Headroom+N], and the error
// that ended the stream with it (io.EOF at a clean end).
type Chunk struct {
	B   []byte
	N   int
	Err error
}

// Sizes: scanning and decompression go at uneven speeds from chunk to
// chunk (and the scheduler interrupts either), and four chunks queued
// absorb that: one queued chunk made the 1 GB trace's inspect 0.3 s
// slower. Each hand-over may park and wake a goroutine, so chunks are not
// small: 512 KB, about 3.4 MB of buffers in all (1 MB chunks were no
// faster).
const (
	chunkSize = 512 << 10
	depth     = 4
	// Headroom is the room in front of each chunk's data.
	Headroom = 64 << 10
)

// NewReadAhead starts reading r. Close must be called.
func NewReadAhead(ctx context.Context, r io.Reader) *ReadAhead {
	ra := &ReadAhead{
		ctx:    ctx,
		full:   make(chan Chunk, depth),
		free:   make(chan []byte, depth+2),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	go ra.run(ctx, r)
	return ra
}

func (ra *ReadAhead) run(ctx context.Context, r io.Reader) {
	defer close(ra.exited)
	// Buffers are made on demand, small first, so that a small trace costs
	// little; they grow to chunkSize.
	made, size := 0, 64<<10
	for {
		var buf []byte
		if made < depth+2 && len(ra.free) == 0 {
			buf = make([]byte, Headroom+size)
			made++
			size = min(2*size, chunkSize)
		} else {
			select {
			case buf = <-ra.free:
			case <-ra.done:
				return
			}
		}
		data := buf[Headroom:]
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
		case ra.full <- Chunk{buf, n, err}:
		case <-ra.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// Next returns the next chunk; after the last one, an empty chunk with the
// error that ended the stream (io.EOF at a clean end, ctx's error once it
// is cancelled).
func (ra *ReadAhead) Next() Chunk {
	if ra.err != nil {
		return Chunk{Err: ra.err}
	}
	var c Chunk
	select {
	case c = <-ra.full:
	case <-ra.ctx.Done():
		c = Chunk{Err: ra.ctx.Err()}
	}
	ra.err = c.Err
	return c
}

// Release gives a chunk's buffer back for reuse.
func (ra *ReadAhead) Release(b []byte) {
	select {
	case ra.free <- b:
	default:
	}
}

// Close stops the goroutine, waits for it, and lets go of the buffers it
// holds (a trace's analysis goes on after the scan: they are garbage then).
func (ra *ReadAhead) Close() {
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
