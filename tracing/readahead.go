package tracing

import (
	"context"
	"io"
)

// readAhead reads its source on its own goroutine, a few chunks ahead, so
// that gzip decompression overlaps JSON scanning (the pgzip idea, without
// parallel inflation: one trace is one deflate stream).
type readAhead struct {
	full   chan chunk
	free   chan []byte
	done   chan struct{}
	exited chan struct{}
	cur    chunk
	off    int
}

type chunk struct {
	b   []byte
	err error
}

const (
	readAheadChunk = 1 << 20
	readAheadDepth = 4
)

func newReadAhead(ctx context.Context, r io.Reader) *readAhead {
	ra := &readAhead{
		full:   make(chan chunk, readAheadDepth),
		free:   make(chan []byte, readAheadDepth+1),
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
		if made < readAheadDepth+1 && len(ra.free) == 0 {
			buf = make([]byte, size)
			made++
			size = min(2*size, readAheadChunk)
		} else {
			select {
			case buf = <-ra.free:
			case <-ra.done:
				return
			}
		}
		n := 0
		var err error
		for n < len(buf) && err == nil {
			var k int
			k, err = r.Read(buf[n:])
			n += k
			if ctx.Err() != nil && err == nil {
				err = ctx.Err()
			}
		}
		select {
		case ra.full <- chunk{buf[:n], err}:
		case <-ra.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (ra *readAhead) Read(p []byte) (int, error) {
	for ra.off == len(ra.cur.b) {
		if ra.cur.err != nil {
			return 0, ra.cur.err
		}
		if ra.cur.b != nil {
			ra.free <- ra.cur.b[:cap(ra.cur.b)]
		}
		ra.cur = <-ra.full
		ra.off = 0
	}
	n := copy(p, ra.cur.b[ra.off:])
	ra.off += n
	return n, nil
}

// Close stops the goroutine and waits for it.
func (ra *readAhead) Close() {
	close(ra.done)
	<-ra.exited
}
