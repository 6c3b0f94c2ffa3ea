package tracing

// Fast paths for the layout Kineto writes (fixed key order, ": " after
// each key): a kernel read in one pass, a flow or instant skipped. Each
// gives up (ok false) on anything else, and the general parser reads the
// event again; FuzzFastPaths holds them to its results.

// kernelFast reads a kernel event in the layout Kineto writes: after ph
// and cat come name, pid, tid, ts, dur and args, each once and in that
// order, with numbers unquoted and ": " after each key. i is just past the
// cat string. It fills s.ev as the general path would (but Cat, Index and
// Offset) and returns the index past the event's '}'. Anything else, and
// input that ends first, gives ok false: the general path reads the event
// again from its start, and owns every error message.
func (s *Scanner) kernelFast(b []byte, i int) (end int, ok bool) {
	i, ok = member(b, i, `"name": "`)
	if !ok {
		return 0, false
	}
	e := stringEnd(b, i-1)
	if e < 0 {
		return 0, false
	}
	rawName := b[i : e-1]
	var pid, tid, ts, dur []byte
	if i, pid = numMember(b, e, `"pid": `); pid == nil {
		return 0, false
	}
	if i, tid = numMember(b, i, `"tid": `); tid == nil {
		return 0, false
	}
	if i, ts = numMember(b, i, `"ts": `); ts == nil {
		return 0, false
	}
	if i, dur = numMember(b, i, `"dur": `); dur == nil {
		return 0, false
	}
	if i, ok = member(b, i, `"args": {`); !ok {
		return 0, false
	}
	ev := &s.ev
	*ev = Event{Type: EventKernel, Device: -1, Stream: -1}
	if ev.TS, ok = parseMicros(ts); !ok {
		return 0, false
	}
	if ev.Dur, ok = parseMicros(dur); !ok {
		return 0, false
	}
	ev.PID, _ = parseInt(pid)
	ev.TID, _ = parseInt(tid)
	if i, ok = kernelArgs(ev, b, i); !ok {
		return 0, false
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '}' {
		return 0, false
	}
	u, ok := unquote(rawName, s.scratch)
	if !ok {
		return 0, false
	}
	ev.Name = s.intern(u)
	return i + 1, true
}

// member matches ',', spaces and key (with what follows it) at b[i] and
// returns the index past key.
func member(b []byte, i int, key string) (int, bool) {
	if i >= len(b) || b[i] != ',' {
		return 0, false
	}
	i = skipSpace(b, i+1)
	if len(b)-i < len(key) || string(b[i:i+len(key)]) != key {
		return 0, false
	}
	return i + len(key), true
}

// number returns the end of the unquoted number at b[i], or -1 when it is
// empty or not followed by a delimiter (an exponent, a quote, the end of
// the data).
func number(b []byte, i int) int {
	j := i
	for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == '-') {
		j++
	}
	if j == i || j >= len(b) {
		return -1
	}
	if c := b[j]; c != ',' && c != '}' && c != ']' && !isSpace(c) {
		return -1
	}
	return j
}

// numMember is member followed by a number; nil when either does not match.
func numMember(b []byte, i int, key string) (int, []byte) {
	i, ok := member(b, i, key)
	if !ok {
		return 0, nil
	}
	e := number(b, i)
	if e < 0 {
		return 0, nil
	}
	return e, b[i:e]
}

// kernelArgs reads a kernel's args from just past their '{' to past their
// '}'. Keys it knows, written as Kineto writes them, are read here; from
// the first other key on, argMembers reads the rest.
func kernelArgs(ev *Event, b []byte, i int) (int, bool) {
	i = skipSpace(b, i)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for i < len(b) && b[i] == '"' {
		// Keys are compared with constants (compiled to a few loads).
		var n int64
		var ok bool
		switch {
		case hasKey(b, i, `"device": `):
			if i, n, ok = intAt(b, i+len(`"device": `)); !ok {
				return 0, false
			}
			ev.Device = int32(n)
		case hasKey(b, i, `"stream": `):
			if i, n, ok = intAt(b, i+len(`"stream": `)); !ok {
				return 0, false
			}
			ev.Stream = int32(n)
		case hasKey(b, i, `"correlation": `):
			if i, ev.Correlation, ok = intAt(b, i+len(`"correlation": `)); !ok {
				return 0, false
			}
		case hasKey(b, i, `"External id": `):
			if i, ev.External, ok = intAt(b, i+len(`"External id": `)); !ok {
				return 0, false
			}
		case hasKey(b, i, `"kind": "`):
			i += len(`"kind": "`)
			e := stringEnd(b, i-1)
			if e < 0 {
				return 0, false
			}
			ev.Replay = string(b[i:e-1]) == "Dispatch Task"
			i = e
		case hasKey(b, i, `"grid": [`):
			if i, ok = dims3(&ev.Grid, b, i+len(`"grid": [`)); !ok {
				return 0, false
			}
		case hasKey(b, i, `"block": [`):
			if i, ok = dims3(&ev.Block, b, i+len(`"block": [`)); !ok {
				return 0, false
			}
		default:
			// An unusual key: the general reader goes on from it.
			l := lexer{b: b, i: i}
			if argMembers(ev, &l) != "" {
				return 0, false
			}
			return l.i, true
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case '}':
			return i + 1, true
		case ',':
			i = skipSpace(b, i+1)
			continue
		}
		return 0, false
	}
	return 0, false
}

// hasKey reports whether b[i:] starts with key (a constant, inlined).
func hasKey(b []byte, i int, key string) bool {
	return len(b)-i >= len(key) && string(b[i:i+len(key)]) == key
}

// intAt reads the unquoted number at b[i] as parseInt does (a plain
// integer in one pass, anything else by parseInt) and returns its end.
func intAt(b []byte, i int) (end int, v int64, ok bool) {
	j := i
	for j < len(b) && j-i < 18 && b[j] >= '0' && b[j] <= '9' {
		v = v*10 + int64(b[j]-'0')
		j++
	}
	if j > i && j < len(b) && (b[j] == ',' || b[j] == '}' || b[j] == ']' || isSpace(b[j])) {
		return j, v, true
	}
	e := number(b, i)
	if e < 0 {
		return 0, 0, false
	}
	v, _ = parseInt(b[i:e])
	return e, v, true
}

// dims3 reads "a, b, c]" (exactly three numbers) into dst.
func dims3(dst *[3]int32, b []byte, i int) (int, bool) {
	for k := range 3 {
		i = skipSpace(b, i)
		e, v, ok := intAt(b, i)
		if !ok {
			return 0, false
		}
		dst[k] = int32(v)
		i = skipSpace(b, e)
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
		i = skipSpace(b, i+1)
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
			for j < len(b) && !delim[b[j]] && b[j] != '\\' {
				j++
			}
			if j == i {
				return 0, nil, false
			}
			i = j
		}
		i = skipSpace(b, i)
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
