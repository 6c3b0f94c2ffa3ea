package tracing

import (
	"bytes"
	"cmp"
	"maps"
	"slices"
)

// CPU ops (cpu_op events) name what launched a kernel: aten::mm, a vLLM
// custom op, a collective. The loader keeps each op's External id and name
// compactly while it reads (a large trace holds millions of ops), then
// keeps only the ops whose External id a kernel carries.

// opEvent is the type of a kept cpu_op event: ProfilerStep#N is a step
// annotation, every other op an EventOp.
func opEvent(name []byte) eventType {
	if bytes.HasPrefix(name, profilerStep) || isStepFunction(name) {
		return eventAnnotation
	}
	return eventOp
}

// opLog collects (External id, name id) pairs in chunks: a dense serving
// trace has hundreds of thousands of ops, and appending to one slice
// copied it over and over (0.07 s of CPU for 170k ops).
type opLog struct {
	recs  [][]opRec // chunks of opChunk records
	n     int
	names nameTable
}

type opRec struct {
	ext  int64
	name uint32
}

const opChunk = 4096

func (l *opLog) add(ext int64, name string) {
	if ext == 0 {
		return
	}
	if len(l.recs) == 0 || len(l.recs[len(l.recs)-1]) == opChunk {
		l.recs = append(l.recs, make([]opRec, 0, opChunk))
	}
	last := &l.recs[len(l.recs)-1]
	*last = append(*last, opRec{ext, l.names.id(name)})
	l.n++
}

// opIndex finds the CPU op that launched a kernel from the kernel's
// External id. Kineto numbers record functions in order, so the ids the
// kernels carry span a range not much wider than their count: a table
// over that range answers with one load (a map of a few hundred thousand
// ids cost 0.15 s to build and query on a trace of a million kernels);
// ids too sparse for a table are searched in a sorted list.
type opIndex struct {
	names []string // distinct op names; the index's ids index it
	base  int64    // dense: byExt[ext-base] is the name id + 1, 0 for none
	byExt []uint32
	exts  []int64 // sparse: sorted ids and their name ids
	ids   []uint32
}

// tableSlotsPerKernel bounds the dense table against the kernels that
// query it: past 4 slots (16 bytes) per kernel the sorted list is smaller.
const tableSlotsPerKernel = 4

// resolve indexes the ops whose External id a kernel carries; when ids
// repeat, the last op read wins (the innermost op launches: it is written
// after, and starts inside, the ops around it, which carry other ids).
func (l *opLog) resolve(kernels []Kernel) opIndex {
	if l.n == 0 {
		return opIndex{}
	}
	lo, hi, n := int64(0), int64(0), 0
	for i := range kernels {
		if e := kernels[i].External; e != 0 {
			if n == 0 || e < lo {
				lo = e
			}
			if n == 0 || e > hi {
				hi = e
			}
			n++
		}
	}
	if n == 0 {
		return opIndex{}
	}
	x := opIndex{names: l.names.names}
	if span := uint64(hi - lo); span < uint64(tableSlotsPerKernel*n+1024) {
		x.base, x.byExt = lo, make([]uint32, span+1)
		for _, recs := range l.recs {
			for _, r := range recs {
				if r.ext >= lo && r.ext <= hi {
					x.byExt[r.ext-lo] = r.name + 1
				}
			}
		}
		return x
	}
	// Sparse: the ops' ids sorted (stably, so the last of equal ids is
	// the one read last), the last of each kept.
	recs := make([]opRec, 0, l.n)
	for _, c := range l.recs {
		for _, r := range c {
			if r.ext >= lo && r.ext <= hi {
				recs = append(recs, r)
			}
		}
	}
	if !slices.IsSortedFunc(recs, cmpOpRec) {
		slices.SortStableFunc(recs, cmpOpRec)
	}
	for i, r := range recs {
		if i+1 < len(recs) && recs[i+1].ext == r.ext {
			continue
		}
		x.exts = append(x.exts, r.ext)
		x.ids = append(x.ids, r.name)
	}
	return x
}

func cmpOpRec(a, b opRec) int { return cmp.Compare(a.ext, b.ext) }

// id is the name id of the op with External id ext, -1 when none.
func (x *opIndex) id(ext int64) int32 {
	if ext == 0 {
		return -1
	}
	if x.byExt != nil {
		if ext < x.base || ext-x.base >= int64(len(x.byExt)) {
			return -1
		}
		return int32(x.byExt[ext-x.base]) - 1
	}
	if i, ok := slices.BinarySearch(x.exts, ext); ok {
		return int32(x.ids[i])
	}
	return -1
}

// OpNames are the distinct names of the CPU ops the trace kept (with
// Options.Ops); LaunchOpID indexes it.
func (t *Trace) OpNames() []string { return t.ops.names }

// LaunchOpID is the index in OpNames of the CPU op (cpu_op event) that
// launched kernel i, found through the kernel's External id; -1 when the
// trace does not say (a kernel replayed from a graph, a trace without CPU
// ops, a load without Options.Ops).
func (t *Trace) LaunchOpID(i int) int32 {
	if i < 0 || i >= len(t.Kernels) {
		return -1
	}
	return t.ops.id(t.Kernels[i].External)
}

// LaunchOp is the name of the CPU op that launched kernel i; "" when the
// trace does not say (see LaunchOpID).
func (t *Trace) LaunchOp(i int) string {
	if id := t.LaunchOpID(i); id >= 0 {
		return t.ops.names[id]
	}
	return ""
}

// SetOps gives a trace built by hand (tests, converters) the names of its
// CPU ops by External id.
func (t *Trace) SetOps(byExternal map[int64]string) {
	var l opLog
	exts := slices.Sorted(maps.Keys(byExternal))
	for _, e := range exts {
		l.add(e, byExternal[e])
	}
	t.ops = l.resolve(t.Kernels)
}
