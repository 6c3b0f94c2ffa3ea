package tracing

import (
	"bytes"
	"fmt"
	"github.com/profile-model/profile-model/internal/jsonscan"

	"github.com/profile-model/profile-model/internal/diag"
)

// The general event parser: any key order, any spacing, every error
// message. The fast paths (fastpath.go) hand it what they do not take.

// parseEvent reads one complete event object. It returns a message when the
// event is malformed.
//
// b holds the event from its '{' to the end of the buffered data. It returns
// the index past the event's '}', or jsonscan.Incomplete when b ends first; msg
// explains a malformed event.
func (s *Scanner) parseEvent(b []byte) (end int, kept bool, msg string) {
	l := lexer{b: b, i: 1}
	var ph, cat, name, pid, tid, ts, dur, args []byte
	var havePh, haveCat, haveName, pidQ, tidQ, tsQ, durQ, argsDone bool
	var seen uint16 // event keys read, to find one given twice
	var dup string  // the first key given twice
	var an argNotes
	cl := clSkip
	if l.peek() == '}' {
		s.countCat(nil, false)
		return l.i + 1, false, ""
	}
	// Fast path for the layout Kineto writes (ph, then cat): most events
	// are skipped on their category alone.
	if p, j := kinetoCat(b); j > 0 {
		if e := bytes.IndexByte(b[j:min(len(b), j+64)], '"'); e > 0 {
			cat := b[j : j+e]
			cl := classify(cat)
			kernel := cl == clKernel && b[p] == 'X'
			if kernel && !s.noFast {
				if end, ok := s.kernelFast(b, j+e+1); ok {
					s.ev.Cat = s.intern(cat)
					s.countCat(cat, true)
					return end, true, ""
				}
			}
			if cl == clSkip {
				end := jsonscan.ObjectRest(b, j+e+1)
				if end < 0 {
					return s.bad(b, "")
				}
				s.countCat(cat, true)
				return end, false, ""
			}
		}
	} else if j := kinetoPhase(b); j > 0 && b[j] != 'X' {
		if !s.noFast {
			if end, cat, ok := flowFast(b, j+2); ok {
				s.countCat(cat, true)
				return end, false, ""
			}
			if end, cat, ok := flatEvent(b, j+2, j+512); ok {
				s.countCat(cat, true)
				return end, false, ""
			}
		}
		// Only complete ("X") events are kept: flows, instants and
		// metadata are counted by their cat, found by text when no
		// bracket comes before it (else the general path reads it), and
		// skipped from there.
		// (The search starts past the phase's closing quote: that quote
		// can begin a cat key in malformed input.)
		if c := bytes.Index(b[j+2:min(len(b), j+512)], []byte(catKey)); c >= 0 {
			c += j + 2
			pre := b[j+2 : c]
			if bytes.IndexByte(pre, '{') < 0 && bytes.IndexByte(pre, '}') < 0 &&
				bytes.IndexByte(pre, '[') < 0 && bytes.IndexByte(pre, ']') < 0 {
				v := c + len(catKey)
				if e := jsonscan.StringEnd(b, v-1); e > 0 {
					end := jsonscan.ObjectRest(b, e)
					if end < 0 {
						return s.bad(b, "")
					}
					s.countCat(b[v:e-1], true)
					return end, false, ""
				}
			}
		}
	}
	for {
		key, ok := l.str()
		if !ok {
			return s.badOp(b, cl == clOp && haveCat && !opNamed(ph, name, havePh, haveName), cat, "expected a key string in an event")
		}
		if !l.expect(':') {
			return s.badOp(b, cl == clOp && haveCat && !opNamed(ph, name, havePh, haveName), cat, fmt.Sprintf("expected ':' after event key %q", key))
		}
		switch string(key) {
		case "ph":
			mark(&seen, keyPh, key, &dup)
			ph, havePh = l.str()
			if !havePh {
				return s.badOp(b, cl == clOp && haveCat && !opNamed(ph, name, havePh, haveName), cat, "ph is not a string")
			}
		case "cat":
			mark(&seen, keyCat, key, &dup)
			cat, haveCat = l.str()
			if !haveCat {
				return s.badOp(b, cl == clOp && haveCat && !opNamed(ph, name, havePh, haveName), cat, "cat is not a string")
			}
			cl = classify(cat)
		case "name":
			mark(&seen, keyName, key, &dup)
			name, haveName = l.longStr()
			if !haveName {
				return s.badOp(b, cl == clOp && haveCat && !opNamed(ph, name, havePh, haveName), cat, "name is not a string")
			}
		case "pid", "tid", "ts", "dur":
			v, q, ok := l.strOrScalar()
			if !ok {
				return s.badOp(b, cl == clOp && haveCat && !opNamed(ph, name, havePh, haveName), cat, fmt.Sprintf("bad %s", key))
			}
			switch string(key) {
			case "pid":
				mark(&seen, keyPID, key, &dup)
				pid, pidQ = v, q
			case "tid":
				mark(&seen, keyTID, key, &dup)
				tid, tidQ = v, q
			case "ts":
				mark(&seen, keyTS, key, &dup)
				ts, tsQ = v, q
			default:
				mark(&seen, keyDur, key, &dup)
				dur, durQ = v, q
			}
		case "args":
			mark(&seen, keyArgs, key, &dup)
			if haveCat {
				// Kept (cat came first, as Kineto writes it): read args in place.
				if kept, decided := keep(cl, ph, name, havePh, haveName, s.KeepOps); decided && kept {
					s.ev = Event{Device: -1, Stream: -1}
					if msg := parseArgs(&s.ev, &l, &an); msg != "" {
						return s.badOp(b, cl == clOp && haveCat && !opNamed(ph, name, havePh, haveName), cat, msg)
					}
					argsDone = true
					break
				}
			}
			a := l.i
			if !l.skip() {
				return s.badOp(b, cl == clOp && haveCat && !opNamed(ph, name, havePh, haveName), cat, "bad args")
			}
			args = b[a:l.i]
		default:
			if !l.skip() {
				return s.badOp(b, cl == clOp && haveCat && !opNamed(ph, name, havePh, haveName), cat, fmt.Sprintf("bad value of event key %q", key))
			}
		}
		if haveCat {
			if kept, decided := keep(cl, ph, name, havePh, haveName, s.KeepOps); decided && !kept {
				// Skipped: find the end without reading the rest.
				e := jsonscan.ObjectRest(b, l.i)
				if e < 0 {
					return s.badOp(b, cl == clOp && haveCat && !opNamed(ph, name, havePh, haveName), cat, "")
				}
				s.countCat(cat, true)
				return e, false, ""
			}
		}
		switch l.peek() {
		case ',':
			l.i++
			continue
		case '}':
		default:
			return s.badOp(b, cl == clOp && haveCat && !opNamed(ph, name, havePh, haveName), cat, "expected ',' or '}' in an event")
		}
		break
	}
	end = l.i + 1
	s.countCat(cat, haveCat)
	if !haveCat {
		return end, false, ""
	}
	if kept, _ := keep(cl, ph, name, havePh, haveName, s.KeepOps); !kept {
		return end, false, ""
	}
	bad := s.build(cl, cat, name, pid, tid, ts, dur, args, pidQ, tidQ, argsDone, &an)
	if bad != "" && cl == clOp {
		// CPU ops are read only to name what launched a kernel: a damaged
		// one is skipped, as it is when ops are not read, rather than
		// failing a trace that reads without them.
		return end, false, ""
	}
	if bad == "" && (dup != "" || tsQ || durQ || an.dup != "" || an.quoted != "") {
		s.oddEvent(dup, tsQ, durQ, &an, map[string][]byte{"ph": ph, "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur})
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
func (s *Scanner) oddEvent(dup string, tsQ, durQ bool, an *argNotes, raw map[string][]byte) {
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
func (s *Scanner) badOp(b []byte, opOnly bool, cat []byte, msg string) (int, bool, string) {
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
func (s *Scanner) bad(b []byte, msg string) (int, bool, string) {
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
func (s *Scanner) build(cl class, cat, name, pid, tid, ts, dur, args []byte, pidQ, tidQ, argsDone bool, an *argNotes) string {
	ev := &s.ev
	if !argsDone {
		*ev = Event{Device: -1, Stream: -1}
		if args != nil {
			if msg := parseArgs(ev, &lexer{b: args}, an); msg != "" {
				return msg
			}
		}
	}
	switch cl {
	case clKernel:
		ev.Type = EventKernel
	case clMemcpy:
		ev.Type = EventMemcpy
	case clMemset:
		ev.Type = EventMemset
	case clRuntime:
		ev.Type = EventLaunch
		_, ev.Graph = isLaunch(name)
	case clAnnotation:
		ev.Type = EventAnnotation
	case clOp:
		ev.Type = opEvent(name)
	case clGPUAnnotation:
		ev.Type = EventGPUAnnotation
	}
	ev.Cat = s.intern(cat)
	u, ok := unquote(name, s.scratch)
	if !ok {
		return "bad escape in name"
	}
	ev.Name = s.intern(u)
	if ts == nil {
		return fmt.Sprintf("%s event %q has no ts", cat, truncate(ev.Name, 80))
	}
	if ev.TS, ok = jsonscan.ParseMicros(ts); !ok {
		return fmt.Sprintf("bad ts %q", truncate(string(ts), 40))
	}
	if dur != nil {
		if ev.Dur, ok = jsonscan.ParseMicros(dur); !ok {
			return fmt.Sprintf("bad dur %q", truncate(string(dur), 40))
		}
	}
	ev.PID = idText(pid, pidQ)
	ev.TID = idText(tid, tidQ)
	return ""
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// parseArgs reads the args fields Load needs from the object at l.
func parseArgs(ev *Event, l *lexer, an *argNotes) string {
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
func argMembers(ev *Event, l *lexer, an *argNotes) string {
	for {
		key, ok := l.str()
		if !ok || !l.expect(':') {
			return "bad key in args"
		}
		switch string(key) {
		case "device", "stream", "correlation", "External id", "external id":
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
				// A number in a string is read, and said so; any other
				// string is ignored.
				raw, ok := l.str()
				if !ok {
					return fmt.Sprintf("bad args.%s", key)
				}
				if v, ok = jsonscan.ParseInt(raw); !ok {
					break
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
					break
				}
				v, _ = jsonscan.ParseInt(t)
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
		case "kind":
			an.mark(argKind, key)
			if l.peek() == '"' {
				v, _ := l.str()
				ev.Replay = string(v) == "Dispatch Task"
			} else if !l.skip() {
				return "bad args.kind"
			}
		case "grid", "block":
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
				break
			}
			l.i++
			for k := 0; l.peek() != ']'; k++ {
				t, ok := l.scalar()
				if !ok {
					return fmt.Sprintf("bad args.%s", key)
				}
				if k < 3 {
					v, _ := jsonscan.ParseInt(t)
					dst[k] = int32(v)
				}
				if !l.expect(',') {
					break
				}
			}
			if !l.expect(']') {
				return fmt.Sprintf("bad args.%s", key)
			}
		default:
			if !l.skip() {
				return fmt.Sprintf("bad value of args key %q", key)
			}
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
