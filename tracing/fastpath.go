package tracing

import (
	"encoding/binary"

	"github.com/profile-model/profile-model/internal/jsonscan"
)

// Fast paths for the layout Kineto writes (fixed key order, ": " after
// each key): a kept complete event (kernel, launch, CPU op, annotation)
// read in one pass, one not kept skipped on its name, a flow or instant
// skipped. Each
// gives up (ok false) on anything else, and the general parser reads the
// event again; FuzzFastPaths holds them to its results.

// completeFast reads a complete ("X") event of class cl in the layout
// Kineto writes: after ph and cat come name, pid, tid, ts, dur and args,
// each once and in that order, with numbers unquoted and ": " after each
// key. i is just past the cat string. When the name says the event is not
// kept (a CPU op other than a step, a runtime call that launches nothing),
// it returns kept false and end just past the name, where the caller skips
// the rest. A kept event fills s.ev as the general path would (but Cat,
// Index and Offset) and end is past its '}'. Anything else, and input that
// ends first, gives ok false: the general path reads the event again from
// its start, and owns every error message.
func (s *scanner) completeFast(b []byte, i int, cl class) (end int, kept, ok bool) {
	// Keys are compared as literals written out at each place: the
	// compiler turns those into a few word loads (a key passed as an
	// argument would cost a call to memequal).
	if i = nextMember(b, i); i < 0 || len(b)-i < 9 || string(b[i:i+9]) != `"name": "` {
		return 0, false, false
	}
	i += 9
	e := jsonscan.StringEnd(b, i-1)
	if e < 0 {
		return 0, false, false
	}
	rawName := b[i : e-1]
	if cl != clKernel {
		if k, _ := keep(cl, phComplete, rawName, true, true, s.KeepOps); !k {
			return e, false, true
		}
	}
	ev := &s.ev
	*ev = traceEvent{Type: cl.eventType(rawName), Device: -1, Stream: -1}
	if cl == clRuntime {
		_, ev.Graph = isLaunch(rawName)
	}
	if i = nextMember(b, e); i < 0 || len(b)-i < 7 || string(b[i:i+7]) != `"pid": ` {
		return 0, false, false
	}
	if i, ev.PID, ok = intAt(b, i+7); !ok {
		return 0, false, false
	}
	if i = nextMember(b, i); i < 0 || len(b)-i < 7 || string(b[i:i+7]) != `"tid": ` {
		return 0, false, false
	}
	if i, ev.TID, ok = intAt(b, i+7); !ok {
		return 0, false, false
	}
	if i = nextMember(b, i); i < 0 || len(b)-i < 6 || string(b[i:i+6]) != `"ts": ` {
		return 0, false, false
	}
	if i, ev.TS, ok = jsonscan.MicrosAt(b, i+6); !ok {
		return 0, false, false
	}
	if i = nextMember(b, i); i < 0 || len(b)-i < 7 || string(b[i:i+7]) != `"dur": ` {
		return 0, false, false
	}
	if i, ev.Dur, ok = jsonscan.MicrosAt(b, i+7); !ok {
		return 0, false, false
	}
	if i = nextMember(b, i); i < 0 || len(b)-i < 9 || string(b[i:i+9]) != `"args": {` {
		return 0, false, false
	}
	if i, ok = kernelArgs(ev, b, i+9); !ok {
		return 0, false, false
	}
	i = jsonscan.SkipSpace(b, i)
	if i >= len(b) || b[i] != '}' {
		return 0, false, false
	}
	u, ok := unquote(rawName, s.scratch)
	if !ok {
		return 0, false, false
	}
	ev.Name = s.intern(u)
	return i + 1, true, true
}

// nextMember matches ',' and spaces at b[i] and returns the index of what
// follows, or -1.
func nextMember(b []byte, i int) int {
	if i >= len(b) || b[i] != ',' {
		return -1
	}
	// One space is what Kineto writes within a line.
	if i+2 < len(b) && b[i+1] == ' ' && b[i+2] > ' ' {
		return i + 2
	}
	return jsonscan.SkipSpace(b, i+1)
}

// kernelArgs reads an event's args from just past their '{' to past their
// '}'. Keys it knows, written as Kineto writes them, are read here; from
// the first other key on, argMembers reads the rest.
func kernelArgs(ev *traceEvent, b []byte, i int) (int, bool) {
	i = jsonscan.SkipSpace(b, i)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	key, v := argKey(b, i)
	var seen uint16 // a key given twice goes to the general path, which says so
	for {
		if key == argOther {
			// An unusual key: the general reader goes on from it.
			l := lexer{b: b, i: i}
			an := argNotes{seen: seen}
			if argMembers(ev, &l, &an) != "" || an.dup != "" || an.quoted != "" {
				return 0, false
			}
			return l.i, true
		}
		if seen&argBit(key) != 0 {
			return 0, false
		}
		seen |= argBit(key)
		var ok bool
		if i, ok = argValue(ev, b, key, v); !ok {
			return 0, false
		}
		// The key Kineto writes next, with the ", " before it, in one
		// compare; else the general way.
		if next, at := nextArg(b, i, key); next != argOther {
			key, v = next, at
			continue
		}
		i = jsonscan.SkipSpace(b, i)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case '}':
			return i + 1, true
		case ',':
			i = jsonscan.SkipSpace(b, i+1)
			if i >= len(b) || b[i] != '"' {
				return 0, false
			}
			key, v = argKey(b, i)
			continue
		}
		return 0, false
	}
}

// argValue reads the value of args key (one kernelArgs knows) at b[v] into
// ev and returns the index past it.
func argValue(ev *traceEvent, b []byte, key, v int) (end int, ok bool) {
	var n int64
	switch key {
	case argDevice:
		end, n, ok = intAt(b, v)
		ev.Device = int32(n)
	case argStream:
		end, n, ok = intAt(b, v)
		ev.Stream = int32(n)
	case argCorrelation:
		end, ev.Correlation, ok = intAt(b, v)
	case argExternal:
		end, ev.External, ok = intAt(b, v)
	case argKind:
		end = jsonscan.StringEnd(b, v-1)
		if end < 0 {
			return 0, false
		}
		ev.Replay = string(b[v:end-1]) == "Dispatch Task"
		ok = true
	case argGrid:
		end, ok = dims3(&ev.Grid, b, v)
	case argBlock:
		end, ok = dims3(&ev.Block, b, v)
	}
	return end, ok
}

// nextArg matches, at b[i] just past the value of key, the args key
// Kineto writes after it (External id, device, stream, correlation, kind,
// grid, block) with the ", " before it, and returns it and where its value
// starts; argOther when anything else follows.
func nextArg(b []byte, i, key int) (next, v int) {
	if len(b)-i < 18 {
		return argOther, 0
	}
	switch key {
	case argExternal:
		if string(b[i:i+12]) == `, "device": ` {
			return argDevice, i + 12
		}
	case argDevice:
		if string(b[i:i+12]) == `, "stream": ` {
			return argStream, i + 12
		}
	case argStream:
		if string(b[i:i+17]) == `, "correlation": ` {
			return argCorrelation, i + 17
		}
	case argCorrelation:
		if string(b[i:i+11]) == `, "kind": "` {
			return argKind, i + 11
		}
	case argKind:
		if string(b[i:i+11]) == `, "grid": [` {
			return argGrid, i + 11
		}
	case argGrid:
		if string(b[i:i+12]) == `, "block": [` {
			return argBlock, i + 12
		}
	}
	return argOther, 0
}

// The args keys kernelArgs reads itself.
const (
	argOther = iota
	argDevice
	argStream
	argCorrelation
	argExternal
	argKind
	argGrid
	argBlock
)

// argKey tells which args key (with ": " and, for strings and arrays, the
// opening quote or bracket) starts at b[i], a quote, and where its value
// starts: one byte picks the candidate, one literal compare confirms it.
// argOther (at i) for any other key.
func argKey(b []byte, i int) (key, v int) {
	if len(b)-i < 16 {
		return argOther, i // near the end: the general reader decides
	}
	switch b[i+1] {
	case 'd':
		if string(b[i:i+10]) == `"device": ` {
			return argDevice, i + 10
		}
	case 's':
		if string(b[i:i+10]) == `"stream": ` {
			return argStream, i + 10
		}
	case 'c':
		if string(b[i:i+15]) == `"correlation": ` {
			return argCorrelation, i + 15
		}
	case 'E':
		if string(b[i:i+15]) == `"External id": ` {
			return argExternal, i + 15
		}
	case 'k':
		if string(b[i:i+9]) == `"kind": "` {
			return argKind, i + 9
		}
	case 'g':
		if string(b[i:i+9]) == `"grid": [` {
			return argGrid, i + 9
		}
	case 'b':
		if string(b[i:i+10]) == `"block": [` {
			return argBlock, i + 10
		}
	}
	return argOther, i
}

// intAt reads the unquoted number at b[i] as ParseInt does (a plain
// integer in one pass, anything else by ParseInt) and returns its end; ok
// is false for anything ParseInt does not take (the general path reads it
// and says what is wrong).
func intAt(b []byte, i int) (end int, v int64, ok bool) {
	// Most are a digit or two (device, stream, pid, grid and block sizes).
	if i+2 < len(b) {
		if d0 := b[i] - '0'; d0 <= 9 {
			if c := b[i+1]; jsonscan.NumberEnd(c) {
				return i + 1, int64(d0), true
			} else if d1 := c - '0'; d1 <= 9 && d0 != 0 && jsonscan.NumberEnd(b[i+2]) {
				return i + 2, int64(d0)*10 + int64(d1), true
			}
		}
	}
	if n, u := jsonscan.UintAt(b, i); n > 0 && n < 16 && (n == 1 || b[i] != '0') && i+n < len(b) && jsonscan.NumberEnd(b[i+n]) {
		return i + n, int64(u), true
	}
	e := jsonscan.ScalarEnd(b, i)
	if e < 0 || e >= len(b) || !jsonscan.NumberEnd(b[e]) {
		return 0, 0, false
	}
	v, ok = jsonscan.ParseInt(b[i:e])
	return e, v, ok
}

// dims3 reads "a, b, c]" (exactly three numbers) into dst.
func dims3(dst *[3]int32, b []byte, i int) (int, bool) {
	for k := range 3 {
		i = jsonscan.SkipSpace(b, i)
		e, v, ok := intAt(b, i)
		if !ok {
			return 0, false
		}
		dst[k] = int32(v)
		i = jsonscan.SkipSpace(b, e)
		if i >= len(b) {
			return 0, false
		}
		want := byte(',')
		if k == 2 {
			want = ']'
		}
		if b[i] != want {
			return 0, false
		}
		i++
	}
	return i, true
}

// flowFast skips a flow event in the layout Kineto writes for flows
// (ph, then id, pid, tid, ts, cat, name and optionally bp, numbers
// unquoted, short strings without escapes), from i just past the phase's
// closing quote. It returns the index past the event's '}' and its cat,
// as the text search of the general path would (the cat key is the first
// one, well within its 512 bytes, with no bracket before it), or ok false.
func flowFast(b []byte, i int) (end int, cat []byte, ok bool) {
	start := i
	if i = nextMember(b, i); i < 0 || len(b)-i < 6 || string(b[i:i+6]) != `"id": ` {
		return 0, nil, false
	}
	if i = plainNumber(b, i+6); i < 0 {
		return 0, nil, false
	}
	if i = nextMember(b, i); i < 0 || len(b)-i < 7 || string(b[i:i+7]) != `"pid": ` {
		return 0, nil, false
	}
	if i = plainNumber(b, i+7); i < 0 {
		return 0, nil, false
	}
	if i = nextMember(b, i); i < 0 || len(b)-i < 7 || string(b[i:i+7]) != `"tid": ` {
		return 0, nil, false
	}
	if i = plainNumber(b, i+7); i < 0 {
		return 0, nil, false
	}
	if i = nextMember(b, i); i < 0 || len(b)-i < 6 || string(b[i:i+6]) != `"ts": ` {
		return 0, nil, false
	}
	if i = plainNumber(b, i+6); i < 0 {
		return 0, nil, false
	}
	if i = nextMember(b, i); i < 0 || len(b)-i < 8 || string(b[i:i+8]) != catKey || i+8 > start+510 {
		return 0, nil, false
	}
	e := shortString(b, i+7)
	if e < 0 {
		return 0, nil, false
	}
	cat = b[i+8 : e-1]
	i = e
	if j := nextMember(b, i); j >= 0 && len(b)-j >= 9 && string(b[j:j+9]) == `"name": "` {
		if i = shortString(b, j+8); i < 0 {
			return 0, nil, false
		}
		if j := nextMember(b, i); j >= 0 && len(b)-j >= 7 && string(b[j:j+7]) == `"bp": "` {
			if i = shortString(b, j+6); i < 0 {
				return 0, nil, false
			}
		}
	}
	i = jsonscan.SkipSpace(b, i)
	if i >= len(b) || b[i] != '}' {
		return 0, nil, false
	}
	return i + 1, cat, true
}

// plainNumber returns the end of the unsigned number (digits, at most one
// point) of at most 24 bytes at b[i], followed by a delimiter, or -1.
func plainNumber(b []byte, i int) int {
	n := digitCount(b, i)
	j := i + n
	if n == 0 || j >= len(b) {
		return -1
	}
	if b[j] == '.' {
		m := digitCount(b, j+1)
		if m == 0 {
			return -1
		}
		j += 1 + m
	}
	if j >= len(b) || j-i > 24 || !jsonscan.NumberEnd(b[j]) {
		return -1
	}
	return j
}

// digitCount is how many decimal digits start at b[i], up to 16: jsonscan.UintAt
// without the value, eight bytes at a time.
func digitCount(b []byte, i int) int {
	if len(b)-i < 16 {
		n := 0
		for n < 16 && i+n < len(b) && b[i+n] >= '0' && b[i+n] <= '9' {
			n++
		}
		return n
	}
	n := jsonscan.LeadingDigits(binary.LittleEndian.Uint64(b[i:]))
	if n == 8 {
		n += jsonscan.LeadingDigits(binary.LittleEndian.Uint64(b[i+8:]))
	}
	return n
}

// flatEvent reads the members of a skipped event in the layout Kineto
// writes for flows and instants (`, "key": value` with short, unescaped
// strings and scalars, no nested value, one cat) from b[i] to its '}', and
// returns the index past it and the cat, whose key must end before
// catLimit. Anything else gives ok false. What it takes, the text search
// below would take too, with the same cat.
func flatEvent(b []byte, i, catLimit int) (end int, cat []byte, ok bool) {
	for i < len(b) {
		switch b[i] {
		case '}':
			return i + 1, cat, cat != nil
		case ',':
		default:
			return 0, nil, false
		}
		i = jsonscan.SkipSpace(b, i+1)
		k := shortString(b, i)
		if k < 0 || k+2 > len(b) || b[k] != ':' || b[k+1] != ' ' {
			return 0, nil, false
		}
		key := b[i+1 : k-1]
		i = k + 2
		if i >= len(b) {
			return 0, nil, false
		}
		if b[i] == '"' {
			e := shortString(b, i)
			if e < 0 {
				return 0, nil, false
			}
			if string(key) == "cat" {
				if cat != nil || k+3 > catLimit {
					return 0, nil, false
				}
				cat = b[i+1 : e-1]
			}
			i = e
		} else {
			j := i
			for j < len(b) && !jsonscan.Delim(b[j]) && b[j] != '\\' {
				j++
			}
			if j == i {
				return 0, nil, false
			}
			i = j
		}
		i = jsonscan.SkipSpace(b, i)
	}
	return 0, nil, false
}

// shortString returns the index past the string at b[i] when it is short
// (under 64 bytes) and has no escape, else -1.
func shortString(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	for j := i + 1; j < len(b) && j < i+64; j++ {
		switch b[j] {
		case '"':
			return j + 1
		case '\\':
			return -1
		}
	}
	return -1
}
