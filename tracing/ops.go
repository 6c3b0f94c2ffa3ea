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

// opLog collects (External id, name) pairs in 12 bytes each.
type opLog struct {
	ext   []int64
	name  []int32
	ids   map[string]int32
	names []string
}

func (l *opLog) add(ext int64, name string) {
	if ext == 0 {
		return
	}
	if l.ids == nil {
		l.ids = map[string]int32{}
	}
	id, ok := l.ids[name]
	if !ok {
		id = int32(len(l.names))
		l.ids[name] = id
		l.names = append(l.names, name)
	}
	l.ext = append(l.ext, ext)
	l.name = append(l.name, id)
}

// resolve returns the names of the ops whose External id a kernel
// carries, nil when there are none.
func (l *opLog) resolve(kernels []Kernel) map[int64]string {
	if len(l.ext) == 0 {
		return nil
	}
	// Sized once: growing a map of a few hundred thousand ids rehashes it
	// several times. Most ids kernels carry are ops' ids, and out holds
	// at most the ids wanted.
	want := make(map[int64]bool, min(len(kernels), len(l.ext)))
	for i := range kernels {
		if e := kernels[i].External; e != 0 {
			want[e] = true
		}
	}
	if len(want) == 0 {
		return nil
	}
	out := make(map[int64]string, len(want))
	for i, e := range l.ext {
		if want[e] {
			// The innermost op launches: it is written after (and
			// starts inside) the ops around it, which share no id.
			out[e] = l.names[l.name[i]]
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
