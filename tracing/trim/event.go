package trim

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/profile-model/profile-model/internal/jsonscan"
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
	ts       int64  // ns, as written (baseTimeNanoseconds not added)
	hasTS    bool
	id       []byte // flow id, raw
	durRaw   []byte // read when asked: most events are decided on ts alone
	argsRaw  []byte
	dur      int64
	corr     int64 // args.correlation, 0 when absent
	ext      int64 // args["External id"], 0 when absent
	durRead  bool
	argsRead bool
}

// end is ts+dur (ts when dur is absent or not a number).
func (e *event) end() int64 {
	if !e.durRead {
		e.durRead = true
		if len(e.durRaw) > 0 {
			e.dur, _ = jsonscan.ParseMicros(e.durRaw)
		}
	}
	return e.ts + max(e.dur, 0)
}

// correlation is args.correlation, 0 when absent.
func (e *event) correlation() int64 {
	e.readArgs()
	return e.corr
}

// externalID is args["External id"], 0 when absent.
func (e *event) externalID() int64 {
	e.readArgs()
	return e.ext
}

func (e *event) readArgs() {
	if !e.argsRead {
		e.argsRead = true
		if len(e.argsRaw) > 0 && e.argsRaw[0] == '{' {
			parseArgs(e.argsRaw, 0, e)
		}
	}
}

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
	e := jsonscan.StringEnd(b, i)
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
// index past its closing brace, jsonscan.Incomplete when b ends first, or jsonscan.Invalid
// with a message.
func parseEvent(b []byte, ev *event) (int, string) {
	*ev = event{}
	i := jsonscan.SkipSpace(b, 1)
	if i >= len(b) {
		return jsonscan.Incomplete, ""
	}
	if b[i] == '}' {
		ev.raw = b[:i+1]
		return i + 1, ""
	}
	hint := 0
	for {
		if i >= len(b) {
			return jsonscan.Incomplete, ""
		}
		if b[i] != '"' {
			return jsonscan.Invalid, "expected a key"
		}
		key, ke := memberKey(b, i, &hint)
		if ke < 0 {
			return jsonscan.Incomplete, ""
		}
		if ke+2 < len(b) && b[ke] == ':' && b[ke+1] == ' ' && b[ke+2] > ' ' {
			i = ke + 2
		} else if ke < len(b) && b[ke] == ':' {
			i = ke + 1
		} else {
			i = jsonscan.SkipSpace(b, ke)
			if i >= len(b) {
				return jsonscan.Incomplete, ""
			}
			if b[i] != ':' {
				return jsonscan.Invalid, fmt.Sprintf("expected ':' after key %s", b[ke-min(ke, 16):ke])
			}
			i++
		}
		i = jsonscan.SkipSpace(b, i)
		if i >= len(b) {
			return jsonscan.Incomplete, ""
		}
		e, msg := memberValue(b, i, key, ev)
		if e < 0 {
			if e == jsonscan.Invalid {
				return jsonscan.Invalid, cmp.Or(msg, "bad value")
			}
			return jsonscan.Incomplete, ""
		}
		// ", " then the next key is the usual separator.
		if e+2 < len(b) && b[e] == ',' && b[e+1] == ' ' && b[e+2] == '"' {
			i = e + 2
			continue
		}
		i = jsonscan.SkipSpace(b, e)
		if i >= len(b) {
			return jsonscan.Incomplete, ""
		}
		switch b[i] {
		case ',':
			i = jsonscan.SkipSpace(b, i+1)
		case '}':
			ev.raw = b[:i+1]
			return i + 1, ""
		default:
			return jsonscan.Invalid, "expected ',' or '}' after a member"
		}
	}
}

// memberValue reads the value at b[i] of the member key into ev and
// returns the index past it (or jsonscan.Incomplete, or Invalid with what
// is wrong when it can say).
func memberValue(b []byte, i int, key keyID, ev *event) (int, string) {
	var e int
	switch key {
	case keyPh, keyCat, keyName:
		e = jsonscan.ValueEnd(b, i)
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
		e = jsonscan.ValueEnd(b, i)
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
	case keyTS:
		// A ts that is not a number of microseconds leaves the event
		// without a time (it is then dropped, as viewers would).
		if c := b[i]; c == '-' || (c >= '0' && c <= '9') {
			if e, ev.ts, ev.hasTS = jsonscan.MicrosAt(b, i); e >= 0 && !ev.hasTS {
				// A number that is not JSON (0123), or too large.
				return jsonscan.Invalid, fmt.Sprintf("bad ts %q: not a JSON number of microseconds that fits 64-bit nanoseconds", b[i:e])
			}
		} else {
			e = jsonscan.ValueEnd(b, i)
		}
	case keyDur:
		if e = jsonscan.ValueEnd(b, i); e >= 0 {
			ev.durRaw = b[i:e]
		}
	case keyArgs:
		if e = jsonscan.ValueEnd(b, i); e >= 0 {
			ev.argsRaw = b[i:e]
		}
	default:
		e = jsonscan.ValueEnd(b, i)
	}
	return e, ""
}

// parseArgs reads the args object opening at b[i] for correlation and
// External id and returns the index past it.
func parseArgs(b []byte, i int, ev *event) int {
	i = jsonscan.SkipSpace(b, i+1)
	if i >= len(b) {
		return jsonscan.Incomplete
	}
	if b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) {
			return jsonscan.Incomplete
		}
		if b[i] != '"' {
			return jsonscan.Invalid
		}
		ke := jsonscan.StringEnd(b, i)
		if ke < 0 {
			return ke
		}
		key := b[i+1 : ke-1]
		i = jsonscan.SkipSpace(b, ke)
		if i >= len(b) {
			return jsonscan.Incomplete
		}
		if b[i] != ':' {
			return jsonscan.Invalid
		}
		i = jsonscan.SkipSpace(b, i+1)
		e := jsonscan.ValueEnd(b, i)
		if e < 0 {
			return e
		}
		switch string(key) {
		case "correlation":
			ev.corr, _ = jsonscan.ParseInt(b[i:e])
		case "External id", "external id":
			ev.ext, _ = jsonscan.ParseInt(b[i:e])
		}
		i = jsonscan.SkipSpace(b, e)
		if i >= len(b) {
			return jsonscan.Incomplete
		}
		switch b[i] {
		case ',':
			i = jsonscan.SkipSpace(b, i+1)
		case '}':
			return i + 1
		default:
			return jsonscan.Invalid
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
	classCPU      class = iota // CPU ops, annotations, Python frames, anything unknown
	classRuntime               // runtime and driver calls (they carry the correlation id)
	classGPU                   // kernels, copies, memsets
	classGPUAnn                // GPU user annotations
	classFlow                  // flow starts, steps and ends
	classMeta                  // M events: process and thread names and order
	classInstant               // instants and counters
	classProfiler              // the profiler's own span ("Trace"): dropped
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

// Kineto writes its events with the members in one order:
//
//	{"ph": "X", "cat": C, "name": N, "pid": P, "tid": T, "ts": TS, "dur": D, "args": {...}}
//	{"ph": "f", "id": I, "pid": P, "tid": T, "ts": TS, "cat": C, "name": N, "bp": "e"}
//
// (on one line, or with "ts" and "args" or "cat" on lines of their own).
// fastEvent reads events of those shapes with a word compare or two per
// member instead of a key lookup; ok is false for any other shape, which
// parseEvent reads.
func fastEvent(b []byte, ev *event) (n int, ok bool) {
	*ev = event{}
	i := jsonscan.SkipSpace(b, 1)
	if i = expect(b, i, litPh); i < 0 || i+2 > len(b) || b[i+1] != '"' {
		return 0, false
	}
	ev.ph = b[i]
	i += 2
	var e int
	switch ev.ph {
	case 'X':
		if i, ev.cat = stringMember(b, i, &sepCat); i < 0 {
			return 0, false
		}
		if i, ev.name = stringMember(b, i, &sepName); i < 0 {
			return 0, false
		}
		if i, ev.pid = scalarMember(b, i, &sepPid); i < 0 {
			return 0, false
		}
		if i, ev.tid = scalarMember(b, i, &sepTid); i < 0 {
			return 0, false
		}
		if i = member(b, i, &sepTS); i < 0 {
			return 0, false
		}
		if e, ev.ts, ev.hasTS = jsonscan.MicrosAt(b, i); e < 0 || !ev.hasTS {
			return 0, false
		}
		if i, ev.durRaw = scalarMember(b, e, &sepDur); i < 0 {
			return 0, false
		}
		if j := member(b, i, &sepArgs); j >= 0 && j < len(b) && b[j] == '{' {
			if e = jsonscan.CompositeEnd(b, j); e < 0 {
				return 0, false
			}
			ev.argsRaw, i = b[j:e], e
		}
	case 's', 'f', 't':
		if i, ev.id = scalarMember(b, i, &sepID); i < 0 {
			return 0, false
		}
		if i, ev.pid = scalarMember(b, i, &sepPid); i < 0 {
			return 0, false
		}
		if i, ev.tid = scalarMember(b, i, &sepTid); i < 0 {
			return 0, false
		}
		if i = member(b, i, &sepTS); i < 0 {
			return 0, false
		}
		if e, ev.ts, ev.hasTS = jsonscan.MicrosAt(b, i); e < 0 || !ev.hasTS {
			return 0, false
		}
		if i, ev.cat = stringMember(b, e, &sepCat); i < 0 {
			return 0, false
		}
		if i, ev.name = stringMember(b, i, &sepName); i < 0 {
			return 0, false
		}
		if j, _ := stringMember(b, i, &sepBP); j >= 0 {
			i = j
		}
	default:
		return 0, false
	}
	if i = jsonscan.SkipSpace(b, i); i >= len(b) || b[i] != '}' {
		return 0, false
	}
	ev.raw = b[:i+1]
	return i + 1, true
}

// lit is a literal of at most sixteen bytes and the two words it loads as.
type lit struct {
	s    string
	w, m [2]uint64
}

func newLit(s string) lit {
	var b [16]byte
	copy(b[:], s)
	l := lit{s: s}
	for k := range 2 {
		l.w[k] = binary.LittleEndian.Uint64(b[8*k:])
		if n := len(s) - 8*k; n >= 8 {
			l.m[k] = ^uint64(0)
		} else if n > 0 {
			l.m[k] = uint64(1)<<(8*n) - 1
		}
	}
	return l
}

// at says whether l is at b[i].
func (l *lit) at(b []byte, i int) bool {
	if i+16 <= len(b) {
		return binary.LittleEndian.Uint64(b[i:])&l.m[0] == l.w[0] && binary.LittleEndian.Uint64(b[i+8:])&l.m[1] == l.w[1]
	}
	return i+len(l.s) <= len(b) && string(b[i:i+len(l.s)]) == l.s
}

// sepKey is a member key with the separator and key Kineto writes before a
// value: `, "key": ` on one line, or `,\n    "key": ` on a new one.
type sepKey struct{ bare, line, newline lit }

func newSepKey(k string) sepKey {
	return sepKey{newLit(`"` + k + `": `), newLit(`, "` + k + `": `), newLit(",\n    \"" + k + `": `)}
}

var (
	litPh   = newLit(`"ph": "`)
	sepCat  = newSepKey("cat")
	sepName = newSepKey("name")
	sepPid  = newSepKey("pid")
	sepTid  = newSepKey("tid")
	sepTS   = newSepKey("ts")
	sepDur  = newSepKey("dur")
	sepArgs = newSepKey("args")
	sepID   = newSepKey("id")
	sepBP   = newSepKey("bp")
)

// expect matches l at b[i] after white space; -1 when it is not there.
func expect(b []byte, i int, l lit) int {
	if i < 0 {
		return -1
	}
	if i = jsonscan.SkipSpace(b, i); !l.at(b, i) {
		return -1
	}
	return i + len(l.s)
}

// member passes the separator and key k after a value ending at b[i] and
// returns where the member's value starts; -1 when k is not next.
func member(b []byte, i int, k *sepKey) int {
	switch {
	case k.line.at(b, i):
		return i + len(k.line.s)
	case k.newline.at(b, i):
		return i + len(k.newline.s)
	}
	// Other white space.
	i = jsonscan.SkipSpace(b, i)
	if i >= len(b) || b[i] != ',' {
		return -1
	}
	return expect(b, i+1, k.bare)
}

// stringMember reads the member k with a string value after b[i] and
// returns the index past it and the value between the quotes.
func stringMember(b []byte, i int, k *sepKey) (int, []byte) {
	if i = member(b, i, k); i < 0 || i >= len(b) || b[i] != '"' {
		return -1, nil
	}
	e := jsonscan.StringEnd(b, i)
	if e < 0 {
		return -1, nil
	}
	return e, b[i+1 : e-1]
}

// scalarMember reads the member k with a number or a string after b[i] and
// returns the index past it and the value as written.
func scalarMember(b []byte, i int, k *sepKey) (int, []byte) {
	if i = member(b, i, k); i < 0 || i >= len(b) {
		return -1, nil
	}
	var e int
	if b[i] == '"' {
		e = jsonscan.StringEnd(b, i)
	} else {
		e = jsonscan.ScalarEnd(b, i)
	}
	if e < 0 {
		return -1, nil
	}
	return e, b[i:e]
}
