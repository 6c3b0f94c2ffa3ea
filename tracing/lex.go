package tracing

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/profile-model/profile-model/internal/jsonscan"
)

// Low-level JSON helpers that work on a byte slice holding one complete value.
// The Scanner finds the extent of each traceEvents entry first (scanner.go),
// then these helpers read the few fields it needs without allocating.

// lexer reads one complete JSON value held in b.
type lexer struct {
	b []byte
	i int
}

func (l *lexer) ws() { l.i = jsonscan.SkipSpace(l.b, l.i) }

// peek returns the next non-space byte, 0 at the end.
func (l *lexer) peek() byte {
	l.ws()
	if l.i >= len(l.b) {
		return 0
	}
	return l.b[l.i]
}

// expect consumes c (after spaces).
func (l *lexer) expect(c byte) bool {
	if l.peek() != c {
		return false
	}
	l.i++
	return true
}

// str reads a string and returns its raw contents (escapes not decoded).
func (l *lexer) str() ([]byte, bool) {
	if l.peek() != '"' {
		return nil, false
	}
	// Keys and short values end within a few bytes: look there before
	// calling IndexByte.
	for j := l.i + 1; j < len(l.b) && j < l.i+24; j++ {
		if c := l.b[j]; c == '"' {
			s := l.b[l.i+1 : j]
			l.i = j + 1
			return s, true
		} else if c == '\\' {
			break
		}
	}
	return l.longStr()
}

// longStr is str for a string that is usually long (an event name): it
// goes to IndexByte at once.
func (l *lexer) longStr() ([]byte, bool) {
	if l.peek() != '"' {
		return nil, false
	}
	e := jsonscan.StringEnd(l.b, l.i)
	if e < 0 {
		return nil, false
	}
	s := l.b[l.i+1 : e-1]
	l.i = e
	return s, true
}

// scalar reads a number or literal and returns its text.
// strOrScalar reads a string or a scalar; q says it was quoted (a number
// written as a string is read, and warned about, by the caller).
func (l *lexer) strOrScalar() (v []byte, q, ok bool) {
	if l.peek() == '"' {
		v, ok = l.str()
		return v, true, ok
	}
	v, ok = l.scalar()
	return v, false, ok
}

func (l *lexer) scalar() ([]byte, bool) {
	l.ws()
	j := l.i
	for j < len(l.b) && !jsonscan.Delim(l.b[j]) {
		j++
	}
	if j == l.i {
		return nil, false
	}
	s := l.b[l.i:j]
	l.i = j
	// Not validated here: the numbers Load uses are checked when parsed,
	// and skipped values are only counted.
	return s, true
}

// skip reads over any value, checking bracket nesting.
func (l *lexer) skip() bool {
	switch l.peek() {
	case '"':
		_, ok := l.str()
		return ok
	case '{', '[':
		e := jsonscan.CompositeEnd(l.b, l.i)
		if e < 0 {
			return false
		}
		l.i = e
		return true
	case 0:
		return false
	}
	_, ok := l.scalar()
	return ok
}

// unquote decodes a raw JSON string body; raw is returned as is when it has
// no escapes.
func unquote(raw []byte, scratch []byte) ([]byte, bool) {
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw, true
	}
	q := append(append(append(scratch[:0], '"'), raw...), '"')
	out, err := jsontext.AppendUnquote(nil, q)
	if err != nil {
		return nil, false
	}
	return out, true
}

// idText reads a pid or tid written as a number or a string ("stream 7",
// "25738"): the trailing digits of a string, 0 when it has none. ok is
// false for an unquoted value that is not JSON (0123, 1.2.3); a literal
// (null) reads as 0, as an absent id does.
func idText(raw []byte, quoted bool) (int64, bool) {
	if !quoted {
		v, ok := jsonscan.ParseInt(raw)
		return v, ok || len(raw) == 0 || jsonscan.ValidScalar(raw)
	}
	j := len(raw)
	for j > 0 && raw[j-1] >= '0' && raw[j-1] <= '9' {
		j--
	}
	for j < len(raw)-1 && raw[j] == '0' {
		j++ // "stream 07" is stream 7: a string is not a JSON number
	}
	if j == len(raw) {
		return 0, true
	}
	v, _ := jsonscan.ParseInt(raw[j:])
	return v, true
}
