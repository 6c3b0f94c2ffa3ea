package trim

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// event is one traceEvents entry: its raw bytes, copied to the output as
// they are, and the few fields that decide whether it is kept. The byte
// slices point into raw.
type event struct {
	raw      []byte
	ph       byte   // 0 when absent
	cat      []byte // as written, between the quotes
	name     []byte // as written, between the quotes (escapes not decoded)
	pid, tid []byte // the raw value: a number, or a string with its quotes
	ts, dur  int64  // ns, as written (baseTimeNanoseconds not added)
	hasTS    bool
	id       []byte // flow id, raw
	corr     int64  // args.correlation, 0 when absent
	ext      int64  // args["External id"], 0 when absent
}

func (e *event) end() int64 { return e.ts + max(e.dur, 0) }

// Member keys the keep rules read, recognised eight bytes at a time
// (each, with its quotes, fits in a word).
type keyID uint8

const (
	keyOther keyID = iota
	keyPh
	keyCat
	keyName
	keyPid
	keyTid
	keyTS
	keyDur
	keyArgs
	keyID_
)

var knownKeys = func() (t [9]struct {
	word, mask uint64
	n          int
	id         keyID
}) {
	for i, k := range []struct {
		s  string
		id keyID
	}{{`"ph"`, keyPh}, {`"cat"`, keyCat}, {`"name"`, keyName}, {`"pid"`, keyPid}, {`"tid"`, keyTid}, {`"ts"`, keyTS}, {`"dur"`, keyDur}, {`"args"`, keyArgs}, {`"id"`, keyID_}} {
		var w [8]byte
		copy(w[:], k.s)
		t[i].word = binary.LittleEndian.Uint64(w[:])
		t[i].mask = 1<<(8*len(k.s)) - 1
		t[i].n = len(k.s)
		t[i].id = k.id
	}
	return t
}()

// memberKey reads the key at b[i] (its opening quote) and returns which it
// is and the index past it. Known keys are tried from hint on (the index in
// knownKeys after the previous member's key: Kineto writes them in order).
func memberKey(b []byte, i int, hint *int) (keyID, int) {
	if i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		for n, k := 0, *hint; n < len(knownKeys); n, k = n+1, k+1 {
			if k == len(knownKeys) {
				k = 0
			}
			if x&knownKeys[k].mask == knownKeys[k].word {
				*hint = k + 1
				return knownKeys[k].id, i + knownKeys[k].n
			}
		}
	}
	e := stringEnd(b, i)
	if e < 0 {
		return keyOther, e
	}
	switch string(b[i:e]) {
	case `"ph"`, `"cat"`, `"name"`, `"pid"`, `"tid"`, `"ts"`, `"dur"`, `"args"`, `"id"`:
		// Near the end of the buffer: the word did not fit.
		for k := range knownKeys {
			if knownKeys[k].n == e-i && string(b[i:e]) == wordString(knownKeys[k].word, knownKeys[k].n) {
				return knownKeys[k].id, e
			}
		}
	}
	return keyOther, e
}

func wordString(w uint64, n int) string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], w)
	return string(b[:n])
}

// parseEvent reads the event object that opens at b[0]. It returns the
// index past its closing brace, incomplete when b ends first, or invalid
// with a message.
func parseEvent(b []byte, ev *event) (int, string) {
	*ev = event{}
	i := skipSpace(b, 1)
	if i >= len(b) {
		return incomplete, ""
	}
	if b[i] == '}' {
		ev.raw = b[:i+1]
		return i + 1, ""
	}
	hint := 0
	for {
		if i >= len(b) {
			return incomplete, ""
		}
		if b[i] != '"' {
			return invalid, "expected a key"
		}
		key, ke := memberKey(b, i, &hint)
		if ke < 0 {
			return incomplete, ""
		}
		if ke < len(b) && b[ke] == ':' {
			i = ke + 1
		} else {
			i = skipSpace(b, ke)
			if i >= len(b) {
				return incomplete, ""
			}
			if b[i] != ':' {
				return invalid, fmt.Sprintf("expected ':' after key %s", b[ke-min(ke, 16):ke])
			}
			i++
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return incomplete, ""
		}
		var e int
		switch key {
		case keyPh, keyCat, keyName:
			e = valueEnd(b, i)
			if e >= 0 && b[i] == '"' {
				v := b[i+1 : e-1]
				switch key {
				case keyPh:
					if len(v) > 0 {
						ev.ph = v[0]
					}
				case keyCat:
					ev.cat = v
				default:
					ev.name = v
				}
			}
		case keyPid, keyTid, keyID_:
			e = valueEnd(b, i)
			if e >= 0 {
				switch key {
				case keyPid:
					ev.pid = b[i:e]
				case keyTid:
					ev.tid = b[i:e]
				default:
					ev.id = b[i:e]
				}
			}
		case keyTS, keyDur:
			var v int64
			var ok bool
			v, e, ok = microsAt(b, i)
			if e >= 0 {
				if !ok && b[i] != '"' {
					return invalid, fmt.Sprintf("bad time %q", b[i:e])
				}
				if key == keyTS {
					ev.ts, ev.hasTS = v, ok
				} else {
					ev.dur = v
				}
			}
		case keyArgs:
			if b[i] == '{' && wantArgs(ev) {
				e = parseArgs(b, i, ev)
			} else {
				e = valueEnd(b, i)
			}
		default:
			e = valueEnd(b, i)
		}
		if e < 0 {
			if e == invalid {
				return invalid, "bad value"
			}
			return incomplete, ""
		}
		i = skipSpace(b, e)
		if i >= len(b) {
			return incomplete, ""
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			ev.raw = b[:i+1]
			return i + 1, ""
		default:
			return invalid, "expected ',' or '}' after a member"
		}
	}
}

// wantArgs says whether args must be read (for correlation and External
// id): not for Python frames and CPU operators, which are most of a trace,
// unless the category comes after args.
func wantArgs(ev *event) bool {
	switch string(ev.cat) {
	case "python_function", "cpu_instant_event":
		return false
	case "cpu_op", "Operator":
		return bytes.HasPrefix(ev.name, []byte("ProfilerStep#"))
	}
	return true
}

// parseArgs reads the args object opening at b[i] for correlation and
// External id and returns the index past it.
func parseArgs(b []byte, i int, ev *event) int {
	i = skipSpace(b, i+1)
	if i >= len(b) {
		return incomplete
	}
	if b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) {
			return incomplete
		}
		if b[i] != '"' {
			return invalid
		}
		ke := stringEnd(b, i)
		if ke < 0 {
			return ke
		}
		key := b[i+1 : ke-1]
		i = skipSpace(b, ke)
		if i >= len(b) {
			return incomplete
		}
		if b[i] != ':' {
			return invalid
		}
		i = skipSpace(b, i+1)
		e := valueEnd(b, i)
		if e < 0 {
			return e
		}
		switch string(key) {
		case "correlation":
			ev.corr, _ = parseInt(b[i:e])
		case "External id", "external id":
			ev.ext, _ = parseInt(b[i:e])
		}
		i = skipSpace(b, e)
		if i >= len(b) {
			return incomplete
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1
		default:
			return invalid
		}
	}
}

// nameString decodes a name's escapes, when it has any.
func nameString(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var s string
	q := append(append([]byte{'"'}, raw...), '"')
	if err := json.Unmarshal(q, &s); err != nil {
		return string(raw)
	}
	return s
}

// class is what an event is, for the keep rules.
type class uint8

const (
	classCPU        class = iota // CPU ops, annotations, Python frames, anything unknown
	classRuntime                 // runtime and driver calls (they carry the correlation id)
	classGPU                     // kernels, copies, memsets
	classGPUAnn                  // GPU user annotations
	classFlow                    // flow starts, steps and ends
	classMeta                    // M events: process and thread names and order
	classInstant                 // instants and counters
	classProfiler                // the profiler's own span ("Trace"): dropped
)

func classify(ev *event) class {
	switch ev.ph {
	case 'M':
		return classMeta
	case 's', 't', 'f':
		return classFlow
	case 'i', 'I', 'C', 'n':
		return classInstant
	}
	switch string(ev.cat) {
	case "kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset":
		return classGPU
	case "cuda_runtime", "cuda_driver", "Runtime", "hip_runtime", "hip_api":
		return classRuntime
	case "gpu_user_annotation":
		return classGPUAnn
	case "Trace":
		return classProfiler
	}
	return classCPU
}

// inCPUSection says whether an event belongs to the first section Kineto
// writes (CPU operators and user annotations, with their flows and
// instants): the step annotations are all there.
func inCPUSection(ev *event) bool {
	if ev.ph == 'M' {
		return true
	}
	switch string(ev.cat) {
	case "cpu_op", "user_annotation", "Operator", "fwdbwd", "cpu_instant_event":
		return true
	}
	return false
}
