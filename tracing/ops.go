package tracing

import "bytes"

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

// resolve returns the names of the ops whose External id a kernel
// carries, nil when there are none.
func (l *opLog) resolve(kernels []Kernel) map[int64]string {
	if l.n == 0 {
		return nil
	}
	// Sized once: growing a map of a few hundred thousand ids rehashes it
	// several times. Most ids kernels carry are ops' ids, and out holds
	// at most the ids wanted.
	want := make(map[int64]bool, min(len(kernels), l.n))
	for i := range kernels {
		if e := kernels[i].External; e != 0 {
			want[e] = true
		}
	}
	if len(want) == 0 {
		return nil
	}
	out := make(map[int64]string, len(want))
	for _, recs := range l.recs {
		for _, r := range recs {
			if want[r.ext] {
				// The innermost op launches: it is written after (and
				// starts inside) the ops around it, which share no id.
				out[r.ext] = l.names.names[r.name]
			}
		}
	}
	return out
}

// LaunchOp is the name of the CPU op (cpu_op event) that launched kernel i,
// found through the kernel's External id; "" when the trace does not say
// (a kernel replayed from a graph, a trace without CPU ops).
func (t *Trace) LaunchOp(i int) string {
	if t.Ops == nil || i < 0 || i >= len(t.Kernels) {
		return ""
	}
	if ext := t.Kernels[i].External; ext != 0 {
		return t.Ops[ext]
	}
	return ""
}
