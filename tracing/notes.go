package tracing

import (
	"fmt"

	"github.com/profile-model/profile-model/internal/diag"
)

// notes collects what the reader warns about: each kind of problem once in
// full (the first event it was seen in), then only counted, so that input
// with millions of bad events costs no more than input with one.
type notes struct {
	list []note
}

type note struct {
	kind string // what the problem is, one per message shape
	w    diag.Warning
	more int64
}

func (n *notes) add(code diag.Code, kind, msg string) {
	for i := range n.list {
		if n.list[i].kind == kind {
			n.list[i].more++
			return
		}
	}
	n.list = append(n.list, note{kind: kind, w: diag.New(code, msg)})
}

// warnings returns the notes as warnings, each with how many more events
// had the same problem.
func (n *notes) warnings() []diag.Warning {
	var out []diag.Warning
	for _, e := range n.list {
		w := e.w
		if e.more > 0 {
			w.Message += fmt.Sprintf(" (and %d more events like it)", e.more)
		}
		out = append(out, w)
	}
	return out
}

// eventNote warns about the event being read (the one at s.Offset()).
func (s *scanner) eventNote(code diag.Code, kind, format string, args ...any) {
	s.notes.add(code, kind, fmt.Sprintf("traceEvents[%d] (byte %d): ", s.entries, s.Offset())+fmt.Sprintf(format, args...))
}

// Warnings returns what the scanner found odd but read on: impossible
// values, duplicate keys, numbers written as strings, data after the JSON
// document. It is complete once Scan returned false.
func (s *scanner) Warnings() []diag.Warning { return s.notes.warnings() }

// argNotes are what parsing an args object found odd, reported once the
// event is read to its end.
type argNotes struct {
	seen   uint16 // the arg* keys read so far in this args object
	dup    string // an args key given twice ("" when none)
	quoted string // an args number written as a string ("" when none)
	raw    []byte // the quoted value
}

// argBit names an args key for argNotes.seen.
func argBit(key int) uint16 { return 1 << key }

// eventKeys are the event keys the general parser reads, as bits, to find
// duplicates.
const (
	keyPh = 1 << iota
	keyCat
	keyName
	keyPID
	keyTID
	keyTS
	keyDur
	keyArgs
)

// mark records an args key read, and the first one read twice.
func (an *argNotes) mark(key int, name []byte) {
	if an.seen&argBit(key) != 0 && an.dup == "" {
		an.dup = string(name)
	}
	an.seen |= argBit(key)
}
