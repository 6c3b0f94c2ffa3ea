package tracing

import (
	"bytes"
	"fmt"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/jsonscan"
)

// The general event parser: any key order, any spacing, every error
// message. The fast paths (fastpath.go) hand it what they do not take.

// parseEvent reads one complete event object. It returns a message when the
// event is malformed.
//
// b holds the event from its '{' to the end of the buffered data. It returns
// the index past the event's '}', or jsonscan.Incomplete when b ends first;
// msg explains a malformed event.
func (s *scanner) parseEvent(b []byte) (end int, kept bool, msg string) {
	if l := (lexer{b: b, i: 1}); l.peek() == '}' {
		s.countCat(nil, false)
		return l.i + 1, false, ""
	}
	if end, kept, msg, done := s.fastEvent(b); done {
		return end, kept, msg
	}
	return s.parseMembers(b)
}

// fastEvent reads the events in the layout Kineto writes (ph, then cat):
// a kept complete event in one pass, a skipped event on its category (or
// its name) alone, a flow or instant by its shape. done is false when the
// general parser must read the event.
func (s *scanner) fastEvent(b []byte) (end int, kept bool, msg string, done bool) {
	if p, j := kinetoCat(b); j > 0 {
		e := bytes.IndexByte(b[j:min(len(b), j+64)], '"')
		if e <= 0 {
			return 0, false, "", false
		}
		cat := b[j : j+e]
		cl := classify(cat)
		if cl == clPython && !stepFunctionNext(b[j+e+1:]) {
			cl = clSkip // the many Python frames that are no step function
		}
		if cl == clSkip {
			return s.skipRest(b, j+e+1, cat)
		}
		if b[p] != 'X' || s.noFast {
			return 0, false, "", false
		}
		end, kept, ok := s.completeFast(b, j+e+1, cl)
		switch {
		case !ok:
			return 0, false, "", false
		case !kept:
			return s.skipRest(b, end, cat)
		}
		s.ev.Cat = s.intern(cat)
		s.countCat(cat, true)
		return end, true, "", true
	}
	j := kinetoPhase(b)
	if j <= 0 || b[j] == 'X' {
		return 0, false, "", false
	}
	if !s.noFast {
		if end, cat, ok := flowFast(b, j+2); ok {
			s.countCat(cat, true)
			return end, false, "", true
		}
		if end, cat, ok := flatEvent(b, j+2, j+512); ok {
			s.countCat(cat, true)
			return end, false, "", true
		}
	}
	// Only complete ("X") events are kept: flows, instants and metadata
	// are counted by their cat, found by text when no bracket comes before
	// it (else the general path reads it), and skipped from there. (The
	// search starts past the phase's closing quote: that quote can begin a
	// cat key in malformed input.)
	c := bytes.Index(b[j+2:min(len(b), j+512)], []byte(catKey))
	if c < 0 {
		return 0, false, "", false
	}
	c += j + 2
	if bytes.ContainsAny(b[j+2:c], "{}[]") {
		return 0, false, "", false
	}
	v := c + len(catKey)
	e := jsonscan.StringEnd(b, v-1)
	if e <= 0 {
		return 0, false, "", false
	}
	return s.skipRest(b, e, b[v:e-1])
}

// skipRest skips an event of category cat from b[i], in its members, to
// past its '}'.
func (s *scanner) skipRest(b []byte, i int, cat []byte) (end int, kept bool, msg string, done bool) {
	end = jsonscan.ObjectRest(b, i)
	if end < 0 {
		end, kept, msg = s.bad(b, "")
		return end, kept, msg, true
	}
	s.countCat(cat, true)
	return end, false, "", true
}

// rawEvent is what the general parser has read of an event: the raw
// values of the keys it reads, and what it noted on the way.
type rawEvent struct {
	ph, cat, name, pid, tid, ts, dur, args []byte

	havePh, haveCat, haveName bool
	pidQ, tidQ, tsQ, durQ     bool // the value was a string
	argsDone                  bool // args read in place into s.ev

	cl   class
	seen uint16 // event keys read, to find one given twice
	dup  string // the first key given twice
	an   argNotes
}

// opOnly tells an event that may be a CPU op kept only for its name (see
// badOp).
func (e *rawEvent) opOnly() bool {
	return e.cl == clOp && e.haveCat && !opNamed(e.ph, e.name, e.havePh, e.haveName)
}

// keep says whether the event is kept, once that is decided.
func (s *scanner) keep(e *rawEvent) (kept, decided bool) {
	return keep(e.cl, e.ph, e.name, e.havePh, e.haveName, s.KeepOps)
}

// parseMembers is the general parser: any key order, any spacing, every
// error message.
func (s *scanner) parseMembers(b []byte) (end int, kept bool, msg string) {
	l := lexer{b: b, i: 1}
	e := rawEvent{cl: clSkip}
	for {
		key, ok := l.str()
		if !ok {
			return s.badOp(b, e.opOnly(), e.cat, "expected a key string in an event")
		}
		if !l.expect(':') {
			return s.badOp(b, e.opOnly(), e.cat, fmt.Sprintf("expected ':' after event key %q", key))
		}
		if msg := s.member(&l, &e, key); msg != "" {
			return s.badOp(b, e.opOnly(), e.cat, msg)
		}
		if e.haveCat {
			if kept, decided := s.keep(&e); decided && !kept {
				// Skipped: find the end without reading the rest.
				end := jsonscan.ObjectRest(b, l.i)
				if end < 0 {
					return s.badOp(b, e.opOnly(), e.cat, "")
				}
				s.countCat(e.cat, true)
				return end, false, ""
			}
		}
		switch l.peek() {
		case ',':
			l.i++
			continue
		case '}':
			return s.finishEvent(l.i+1, &e)
		}
		return s.badOp(b, e.opOnly(), e.cat, "expected ',' or '}' in an event")
	}
}

// member reads the value of one event key into e; a message when it is bad.
func (s *scanner) member(l *lexer, e *rawEvent, key []byte) string {
	switch string(key) {
	case "ph":
		mark(&e.seen, keyPh, key, &e.dup)
		if e.ph, e.havePh = l.str(); !e.havePh {
			return "ph is not a string"
		}
	case "cat":
		mark(&e.seen, keyCat, key, &e.dup)
		if e.cat, e.haveCat = l.str(); !e.haveCat {
			return "cat is not a string"
		}
		e.cl = classify(e.cat)
	case "name":
		mark(&e.seen, keyName, key, &e.dup)
		if e.name, e.haveName = l.longStr(); !e.haveName {
			return "name is not a string"
		}
	case "pid", "tid", "ts", "dur":
		return e.scalarMember(l, key)
	case "args":
		mark(&e.seen, keyArgs, key, &e.dup)
		if kept, decided := s.keep(e); e.haveCat && decided && kept {
			// Kept (cat came first, as Kineto writes it): read args in place.
			s.ev = traceEvent{Device: -1, Stream: -1}
			e.argsDone = true
			return parseArgs(&s.ev, l, &e.an)
		}
		a := l.i
		if !l.skip() {
			return "bad args"
		}
		e.args = l.b[a:l.i]
	default:
		if !l.skip() {
			return fmt.Sprintf("bad value of event key %q", key)
		}
	}
	return ""
}

// scalarMember reads pid, tid, ts or dur: a number, or a string (read, and
// warned about, by the caller).
func (e *rawEvent) scalarMember(l *lexer, key []byte) string {
	v, q, ok := l.strOrScalar()
	if !ok {
		return fmt.Sprintf("bad %s", key)
	}
	switch string(key) {
	case "pid":
		mark(&e.seen, keyPID, key, &e.dup)
		e.pid, e.pidQ = v, q
	case "tid":
		mark(&e.seen, keyTID, key, &e.dup)
		e.tid, e.tidQ = v, q
	case "ts":
		mark(&e.seen, keyTS, key, &e.dup)
		e.ts, e.tsQ = v, q
	default:
		mark(&e.seen, keyDur, key, &e.dup)
		e.dur, e.durQ = v, q
	}
	return ""
}

// finishEvent counts an event read to its end and builds s.ev when it is
// kept.
func (s *scanner) finishEvent(end int, e *rawEvent) (int, bool, string) {
	s.countCat(e.cat, e.haveCat)
	if !e.haveCat {
		return end, false, ""
	}
	if kept, _ := s.keep(e); !kept {
		return end, false, ""
	}
	bad := s.build(e)
	if bad != "" && e.cl == clOp {
		// CPU ops are read only to name what launched a kernel: a damaged
		// one is skipped, as it is when ops are not read, rather than
		// failing a trace that reads without them.
		return end, false, ""
	}
	if bad == "" && (e.dup != "" || e.tsQ || e.durQ || e.an.dup != "" || e.an.quoted != "") {
		s.oddEvent(e.dup, e.tsQ, e.durQ, &e.an, map[string][]byte{"ph": e.ph, "cat": e.cat, "name": e.name, "pid": e.pid, "tid": e.tid, "ts": e.ts, "dur": e.dur})
	}
	return end, true, bad
}

// mark records an event key read, and the first one read twice.
func mark(seen *uint16, bit uint16, key []byte, dup *string) {
	if *seen&bit != 0 && *dup == "" {
		*dup = string(key)
	}
	*seen |= bit
}

// oddEvent warns about a kept event read in full that has a key twice or a
// number written as a string. The values are raw text by key.
func (s *scanner) oddEvent(dup string, tsQ, durQ bool, an *argNotes, raw map[string][]byte) {
	if dup != "" {
		won := "the last args object"
		if dup != "args" {
			won = fmt.Sprintf("the last value (%s)", truncate(string(raw[dup]), 40))
		}
		s.eventNote(diag.DuplicateKey, "event key", "the event gives %q more than once: %s was used", dup, won)
	}
	if an.dup != "" {
		s.eventNote(diag.DuplicateKey, "args key", "args gives %q more than once: the last value was used", an.dup)
	}
	for _, k := range []struct {
		key string
		q   bool
	}{{"ts", tsQ}, {"dur", durQ}} {
		if k.q {
			s.eventNote(diag.QuotedNumber, k.key, "%s is written as a string (%q): it was read as a number", k.key, truncate(string(raw[k.key]), 40))
		}
	}
	if an.quoted != "" {
		s.eventNote(diag.QuotedNumber, "args "+an.quoted, "args.%s is written as a string (%q): it was read as a number", an.quoted, truncate(string(an.raw), 40))
	}
}

// badOp is bad for an event that may be a CPU op kept only for its name
// (opOnly: KeepOps is set, and the op is no ProfilerStep#N). Without
// KeepOps such an op is skipped on its brackets alone, and reading ops
// must change nothing else: so it is skipped when its brackets match.
func (s *scanner) badOp(b []byte, opOnly bool, cat []byte, msg string) (int, bool, string) {
	if opOnly && s.KeepOps {
		if e := jsonscan.CompositeEnd(b, 0); e >= 0 {
			s.countCat(cat, true)
			return e, false, ""
		}
	}
	return s.bad(b, msg)
}

// opNamed tells a CPU op kept without KeepOps (a ProfilerStep#N), or one
// whose ph or name is not read yet.
func opNamed(ph, name []byte, havePh, haveName bool) bool {
	kept, decided := keep(clOp, ph, name, havePh, haveName, false)
	return kept || !decided
}

// bad tells a malformed event from one that the buffered data cuts short.
func (s *scanner) bad(b []byte, msg string) (int, bool, string) {
	switch jsonscan.CompositeEnd(b, 0) {
	case jsonscan.Incomplete:
		return jsonscan.Incomplete, false, ""
	case jsonscan.Invalid:
		return 0, false, "brackets do not match"
	}
	if msg == "" {
		msg = "malformed event"
	}
	return 0, false, msg
}

// build builds s.ev from the raw fields of a kept event.
func (s *scanner) build(e *rawEvent) string {
	ev := &s.ev
	if !e.argsDone {
		*ev = traceEvent{Device: -1, Stream: -1}
		if e.args != nil {
			if msg := parseArgs(ev, &lexer{b: e.args}, &e.an); msg != "" {
				return msg
			}
		}
	}
	ev.Type = e.cl.eventType(e.name)
	if e.cl == clRuntime {
		_, ev.Graph = isLaunch(e.name)
	}
	ev.Cat = s.intern(e.cat)
	u, ok := unquote(e.name, s.scratch)
	if !ok {
		return "bad escape in name"
	}
	ev.Name = s.intern(u)
	if e.ts == nil {
		return fmt.Sprintf("%s event %q has no ts", e.cat, truncate(ev.Name, 80))
	}
	if ev.TS, ok = jsonscan.ParseMicros(e.ts); !ok {
		return fmt.Sprintf("bad ts %q%s", truncate(string(e.ts), 40), notNumber(e.ts))
	}
	if e.dur != nil {
		if ev.Dur, ok = jsonscan.ParseMicros(e.dur); !ok {
			return fmt.Sprintf("bad dur %q%s", truncate(string(e.dur), 40), notNumber(e.dur))
		}
	}
	if ev.PID, ok = idText(e.pid, e.pidQ); !ok {
		return fmt.Sprintf("bad pid %q%s", truncate(string(e.pid), 40), notNumber(e.pid))
	}
	if ev.TID, ok = idText(e.tid, e.tidQ); !ok {
		return fmt.Sprintf("bad tid %q%s", truncate(string(e.tid), 40), notNumber(e.tid))
	}
	return ""
}

// eventType is the type of a kept event of class cl named name.
func (cl class) eventType(name []byte) eventType {
	switch cl {
	case clKernel:
		return eventKernel
	case clMemcpy:
		return eventMemcpy
	case clMemset:
		return eventMemset
	case clRuntime:
		return eventLaunch
	case clAnnotation, clPython:
		return eventAnnotation
	case clOp:
		return opEvent(name)
	}
	return eventGPUAnnotation
}

// notNumber explains a value read as a number that is not one: JSON has
// no leading zeros, no '+', and digits on both sides of a point.
func notNumber(v []byte) string {
	if len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9') && !jsonscan.ValidNumber(v) {
		return " (not a JSON number: no leading zeros, no '+', digits on both sides of a point)"
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// parseArgs reads the args fields Load needs from the object at l.
func parseArgs(ev *traceEvent, l *lexer, an *argNotes) string {
	if !l.expect('{') {
		return "args is not an object"
	}
	an.seen = 0 // a second args object is read afresh
	if l.peek() == '}' {
		l.i++
		return ""
	}
	return argMembers(ev, l, an)
}

// argMembers reads args from a member's key on to the closing '}'. an
// gets the keys given twice and the numbers written as strings.
func argMembers(ev *traceEvent, l *lexer, an *argNotes) string {
	for {
		key, ok := l.str()
		if !ok || !l.expect(':') {
			return "bad key in args"
		}
		var msg string
		switch string(key) {
		case "device", "stream", "correlation", "External id", "external id":
			msg = argID(ev, l, an, key)
		case "kind":
			an.mark(argKind, key)
			if l.peek() == '"' {
				v, _ := l.str()
				ev.Replay = string(v) == "Dispatch Task"
			} else if !l.skip() {
				msg = "bad args.kind"
			}
		case "grid", "block":
			msg = argDims(ev, l, an, key)
		default:
			if !l.skip() {
				msg = fmt.Sprintf("bad value of args key %q", key)
			}
		}
		if msg != "" {
			return msg
		}
		switch l.peek() {
		case ',':
			l.i++
			continue
		case '}':
			l.i++
			return ""
		}
		return "expected ',' or '}' in args"
	}
}

// argID reads args.device, stream, correlation or External id: a number,
// or a number in a string (read, and said so); any other string, and a
// literal, leave the field as it was.
func argID(ev *traceEvent, l *lexer, an *argNotes, key []byte) string {
	var bit int
	switch key[0] {
	case 'd':
		bit = argDevice
	case 's':
		bit = argStream
	case 'c':
		bit = argCorrelation
	default:
		bit = argExternal
	}
	an.mark(bit, key)
	var v int64
	if l.peek() == '"' {
		raw, ok := l.str()
		if !ok {
			return fmt.Sprintf("bad args.%s", key)
		}
		if v, ok = jsonscan.ParseInt(raw); !ok {
			return ""
		}
		if an.quoted == "" {
			an.quoted, an.raw = string(key), raw
		}
	} else {
		t, ok := l.scalar()
		if !ok {
			if !l.skip() {
				return fmt.Sprintf("bad args.%s", key)
			}
			return ""
		}
		if v, ok = jsonscan.ParseInt(t); !ok && !jsonscan.ValidScalar(t) {
			return fmt.Sprintf("bad args.%s %q%s", key, truncate(string(t), 40), notNumber(t))
		}
	}
	switch bit {
	case argDevice:
		ev.Device = int32(v)
	case argStream:
		ev.Stream = int32(v)
	case argCorrelation:
		ev.Correlation = v
	default:
		ev.External = v
	}
	return ""
}

// argDims reads args.grid or args.block, three numbers in an array (a
// value of another type is skipped).
func argDims(ev *traceEvent, l *lexer, an *argNotes, key []byte) string {
	dst := &ev.Grid
	if key[0] == 'b' {
		dst = &ev.Block
		an.mark(argBlock, key)
	} else {
		an.mark(argGrid, key)
	}
	if l.peek() != '[' {
		if !l.skip() {
			return fmt.Sprintf("bad args.%s", key)
		}
		return ""
	}
	l.i++
	for k := 0; l.peek() != ']'; k++ {
		t, ok := l.scalar()
		if !ok {
			return fmt.Sprintf("bad args.%s", key)
		}
		if k < 3 {
			v, ok := jsonscan.ParseInt(t)
			if !ok && !jsonscan.ValidScalar(t) {
				return fmt.Sprintf("bad args.%s %q%s", key, truncate(string(t), 40), notNumber(t))
			}
			dst[k] = int32(v)
		}
		if !l.expect(',') {
			break
		}
	}
	if !l.expect(']') {
		return fmt.Sprintf("bad args.%s", key)
	}
	return ""
}
