package tracing

import "encoding/binary"

// launchLog stages runtime launches during the scan as varint records
// (about 12 bytes each instead of 72), as kernelLog does kernels: a dense
// serving trace holds hundreds of thousands, and growing a []runtimeLaunch
// by append copied (and faulted in) several times its final size, 0.2 s of
// CPU for 170k launches. The slice is made once, at its exact size.
type launchLog struct {
	recordChunks
	names nameTable
	prev  runtimeLaunch // fields are written as deltas against the previous record
}

// add logs one launch.
func (l *launchLog) add(r *runtimeLaunch) {
	id := l.names.id(r.Name)
	if l.room(7*binary.MaxVarintLen64 + 1) {
		l.prev = runtimeLaunch{} // each chunk decodes on its own
	}
	b := l.cur
	b = binary.AppendUvarint(b, uint64(id))
	b = binary.AppendVarint(b, r.Start-l.prev.Start)
	b = binary.AppendVarint(b, r.Dur)
	b = binary.AppendVarint(b, r.Correlation-l.prev.Correlation)
	b = binary.AppendVarint(b, r.External-l.prev.External)
	b = binary.AppendVarint(b, r.PID-l.prev.PID)
	b = binary.AppendVarint(b, r.TID-l.prev.TID)
	var graph byte
	if r.Graph {
		graph = 1
	}
	l.cur = append(b, graph)
	l.prev = *r
	l.added()
}

// launches decodes the log, with base added to every start, and releases
// it; nil when it is empty.
func (l *launchLog) launches(base int64) []runtimeLaunch {
	l.flush()
	if l.n == 0 {
		*l = launchLog{}
		return nil
	}
	out := make([]runtimeLaunch, l.n)
	o := 0
	names := l.names.names
	for ci, c := range l.chunks {
		prev := runtimeLaunch{Start: base} // the deltas carry base along
		for rd := (recordReader{c: c}); rd.more(); {
			r := &out[o]
			o++
			r.Name = names[rd.uvarint()]
			r.Start = prev.Start + rd.varint()
			r.Dur = rd.varint()
			r.Correlation = prev.Correlation + rd.varint()
			r.External = prev.External + rd.varint()
			r.PID = prev.PID + rd.varint()
			r.TID = prev.TID + rd.varint()
			r.Graph = rd.byte() != 0
			prev = *r
		}
		l.chunks[ci] = nil // let the GC take each chunk once decoded
	}
	*l = launchLog{}
	return out
}
