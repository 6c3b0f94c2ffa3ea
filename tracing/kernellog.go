package tracing

import (
	"encoding/binary"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
)

// kernelLog stages kernels during the scan as varint records (about 15
// bytes each instead of 64): the final []Kernel is then made once, at its
// exact size. Growing a []Kernel by append would hold the old and the new
// array at once (1.8× the kernels' memory at the peak); this holds 1.2×.
type kernelLog struct {
	recordChunks
	names nameTable
	prev  Kernel // fields are written as deltas against the previous record
}

// recordChunks holds varint records in chunks that grow to 1 MB. A
// record's deltas restart at each chunk, so each chunk decodes on its own
// (on several cores at once).
type recordChunks struct {
	chunks [][]byte
	counts []int // records in each chunk
	cur    []byte
	curN   int
	n      int
}

const recordChunk = 1 << 20

// room makes room in cur for a record of up to size bytes and reports
// whether a new chunk was begun (the caller restarts its deltas). Chunks
// start small, so that a trace with few records costs little.
func (c *recordChunks) room(size int) (fresh bool) {
	if cap(c.cur)-len(c.cur) >= size {
		return false
	}
	next := 16 << 10
	if len(c.chunks) > 0 || c.cur != nil {
		next = min(2*cap(c.cur), recordChunk)
	}
	c.flush()
	c.cur = make([]byte, 0, next)
	return true
}

// added counts the record just appended to cur.
func (c *recordChunks) added() {
	c.curN++
	c.n++
}

func (c *recordChunks) flush() {
	if c.cur != nil {
		c.chunks = append(c.chunks, c.cur)
		c.counts = append(c.counts, c.curN)
		c.cur, c.curN = nil, 0
	}
}

// recordReader reads one chunk's records field by field, in the order add
// appended them. It serves both the kernel and the launch decode, the hot
// end of a load: varint and byte inline into the loops, and uvarint (once a
// record) is a call; measured as fast as reading the chunk by hand.
type recordReader struct {
	c []byte
	i int
}

func (r *recordReader) more() bool { return r.i < len(r.c) }

func (r *recordReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.c[r.i:])
	r.i += n
	return v
}

func (r *recordReader) varint() int64 {
	v, n := binary.Varint(r.c[r.i:])
	r.i += n
	return v
}

func (r *recordReader) byte() byte {
	b := r.c[r.i]
	r.i++
	return b
}

// nameTable numbers distinct names in the order they first come.
type nameTable struct {
	names  []string
	ids    map[string]uint32
	recent [64]nameID
}

type nameID struct {
	name string
	id   uint32 // id+1, 0 for an empty slot
}

// nameSlot is a cheap hash of a name for a small direct-mapped cache.
func nameSlot(s string) int {
	if s == "" {
		return 0
	}
	return (len(s)*31 + int(s[len(s)-1])*7 + int(s[len(s)/2])) & 63
}

// id returns name's number. A direct-mapped cache comes before the map:
// names are interned, so a hit compares equal pointers instead of hashing
// a long name.
func (t *nameTable) id(name string) uint32 {
	slot := &t.recent[nameSlot(name)]
	if slot.id != 0 && slot.name == name {
		return slot.id - 1
	}
	if t.ids == nil {
		t.ids = map[string]uint32{}
	}
	id, ok := t.ids[name]
	if !ok {
		id = uint32(len(t.names))
		t.names = append(t.names, name)
		t.ids[name] = id
	}
	*slot = nameID{name, id + 1}
	return id
}

// add logs k under name (k.NameID is set here).
func (l *kernelLog) add(k *Kernel, name string) {
	id := l.names.id(name)
	k.NameID = int32(id)
	if l.room(10 * binary.MaxVarintLen64) {
		l.prev = Kernel{} // each chunk decodes on its own
	}
	b := l.cur
	b = binary.AppendUvarint(b, uint64(id))
	b = binary.AppendVarint(b, k.Start-l.prev.Start)
	b = binary.AppendVarint(b, k.Dur)
	b = binary.AppendVarint(b, k.Correlation-l.prev.Correlation)
	b = binary.AppendVarint(b, k.External-l.prev.External)
	b = binary.AppendVarint(b, int64(k.Device))
	b = binary.AppendVarint(b, int64(k.Stream))
	b = binary.AppendVarint(b, int64(k.Dims))
	flags := byte(k.Kind) << 1
	if k.Replayed {
		flags |= 1
	}
	b = append(b, flags)
	l.cur = b
	l.prev = *k
	l.added()
}

// kernels decodes the log into a new slice, with base added to every
// start, and releases the log; names are the distinct names the kernels'
// NameID index, and sorted says whether the starts are in order (one GPU
// stream's section often is).
//
// The caller pauses the collector around a large decode: making the slice
// would start a collection (the heap grows severalfold at once) that runs
// beside the decode for nothing, since the log is garbage after it. The
// decode allocates nothing, so the pause costs no memory. Measured on a
// 1 GB trace when a Kernel still held its name as a string (the marking
// then read the fresh pages and the stores took write barriers): the
// decode took 100–120 ms with the collection running, 45–80 ms without,
// and 33–45 ms on two cores.
func (l *kernelLog) kernels(base int64) (out []Kernel, names []string, sorted bool) {
	l.flush()
	out = make([]Kernel, l.n)
	// Each chunk's deltas start afresh, so each core decodes a run of
	// chunks into its own part of out, parts of about as many records
	// (the first chunks are small).
	parts := min(runtime.GOMAXPROCS(0), len(l.chunks))
	var wg sync.WaitGroup
	partSorted := make([]bool, parts)
	bounds := make([]int, 0, parts) // where each part begins in out
	c0, o0 := 0, 0
	for p := 1; p <= parts; p++ {
		c1, o1 := c0, o0
		for c1 < len(l.chunks) && (p == parts || o1 < l.n*p/parts) {
			o1 += l.counts[c1]
			c1++
		}
		bounds = append(bounds, o0)
		chunks, dst, ok := l.chunks[c0:c1], out[o0:o1], &partSorted[p-1]
		if p == parts {
			*ok = l.decode(dst, chunks, base)
		} else {
			wg.Go(func() { *ok = l.decode(dst, chunks, base) })
		}
		c0, o0 = c1, o1
	}
	wg.Wait()
	names = l.names.names
	*l = kernelLog{}
	sorted = !slices.Contains(partSorted, false)
	for _, b := range bounds {
		if b > 0 && b < len(out) && out[b].Start < out[b-1].Start {
			sorted = false
		}
	}
	return out, names, sorted
}

// gcPaused counts the decodes running with the collector off, so that
// concurrent loads restore the caller's GC percentage only when the last
// one ends.
var gcPaused struct {
	mu  sync.Mutex
	n   int
	old int
}

// pauseGC turns the collector off until the returned function is called.
func pauseGC() (resume func()) {
	gcPaused.mu.Lock()
	if gcPaused.n == 0 {
		gcPaused.old = debug.SetGCPercent(-1)
	}
	gcPaused.n++
	gcPaused.mu.Unlock()
	return func() {
		gcPaused.mu.Lock()
		gcPaused.n--
		if gcPaused.n == 0 {
			debug.SetGCPercent(gcPaused.old)
		}
		gcPaused.mu.Unlock()
	}
}

// decode decodes chunks into out, which has room for exactly their
// records, and reports whether their starts are in order.
func (l *kernelLog) decode(out []Kernel, chunks [][]byte, base int64) (sorted bool) {
	o := 0
	sorted = true
	last := int64(math.MinInt64)
	for ci, c := range chunks {
		prev := Kernel{Start: base} // the deltas carry base along
		for r := (recordReader{c: c}); r.more(); {
			k := &out[o]
			o++
			k.NameID = int32(r.uvarint())
			k.Start = prev.Start + r.varint()
			if k.Start < last {
				sorted = false
			}
			last = k.Start
			k.Dur = r.varint()
			k.Correlation = prev.Correlation + r.varint()
			k.External = prev.External + r.varint()
			k.Device = int32(r.varint())
			k.Stream = int32(r.varint())
			k.Dims = int32(r.varint())
			flags := r.byte()
			k.Kind = ActivityKind(flags >> 1)
			k.Replayed = flags&1 != 0
			k.Graph, k.Step = -1, -1
			prev = *k
		}
		chunks[ci] = nil // let the GC take each chunk once decoded
	}
	return sorted
}
