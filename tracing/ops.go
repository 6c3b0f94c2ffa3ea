package tracing

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
