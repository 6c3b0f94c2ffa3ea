package bench

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// frame is what the client takes from one streamed JSON frame.
type frame struct {
	delta []byte // choices[0].text, else choices[0].delta.content, else its reasoning_content or reasoning (as written when read fast)
	// reasoning: the delta came from reasoning_content or reasoning (a
	// thinking model's tokens before its answer: tokens all the same).
	reasoning bool
	choices   bool // choices is not empty
	// finish: choices[0].finish_reason is not null (with empty text, the
	// closing frame, not a token); role: its delta names a role (a chat
	// stream's opening frame, not a token unless it has text).
	finish, role bool
	usage        bool   // usage is given
	prompt       int    // usage.prompt_tokens
	output       int    // usage.completion_tokens
	failed       bool   // an in-stream error: error is not null, or object is "error"
	message      string // the error's text
}

// chunk is one streamed frame as the general decoder reads it;
// completions carry text, chat a delta.
type chunk struct {
	Choices []struct {
		Text         string         `json:"text"`
		FinishReason jsontext.Value `json:"finish_reason"`
		Delta        struct {
			Content          string         `json:"content"`
			ReasoningContent string         `json:"reasoning_content"`
			Reasoning        string         `json:"reasoning"`
			Role             jsontext.Value `json:"role"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error   jsontext.Value `json:"error"`
	Object  string         `json:"object"`
	Message string         `json:"message"`
}

var decodeOpts = json.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

// parseFrame reads a frame: the shape every engine streams by a fast path,
// anything else (escapes, non-ASCII text, errors, nested values it does
// not expect) by the general decoder, whose results the fast path gives
// exactly (FuzzParseFrame). The frame's slices are valid as long as data.
func parseFrame(data []byte, ch *chunk) (frame, error) {
	if f, ok := parseFrameFast(data); ok {
		return f, nil
	}
	return parseFrameSlow(data, ch)
}

func parseFrameSlow(data []byte, ch *chunk) (frame, error) {
	ch.Choices = ch.Choices[:0]
	ch.Usage, ch.Error, ch.Object, ch.Message = nil, nil, "", ""
	if err := json.Unmarshal(data, ch, decodeOpts); err != nil {
		return frame{}, err
	}
	var f frame
	if len(ch.Error) > 0 && string(ch.Error) != "null" || ch.Object == "error" {
		f.failed, f.message = true, string(ch.Error)
		if ch.Object == "error" {
			f.message = ch.Message
		}
	}
	if len(ch.Choices) > 0 {
		f.choices = true
		c := &ch.Choices[0]
		d := c.Text
		if d == "" {
			d = c.Delta.Content
		}
		if d == "" {
			if d = c.Delta.ReasoningContent; d == "" {
				d = c.Delta.Reasoning
			}
			f.reasoning = d != ""
		}
		f.delta = []byte(d)
		f.finish = notNull(c.FinishReason)
		f.role = notNull(c.Delta.Role)
	}
	if ch.Usage != nil {
		f.usage, f.prompt, f.output = true, ch.Usage.PromptTokens, ch.Usage.CompletionTokens
	}
	return f, nil
}

func notNull(v jsontext.Value) bool { return len(v) > 0 && string(v) != "null" }

// frameLexer reads the subset of JSON the fast path takes: strings of
// printable ASCII without escapes, numbers, literals.
type frameLexer struct {
	b []byte
	i int
}

func (l *frameLexer) ws() {
	for l.i < len(l.b) {
		switch l.b[l.i] {
		case ' ', '\t', '\n', '\r':
			l.i++
		default:
			return
		}
	}
}

// next skips whitespace and consumes c.
func (l *frameLexer) next(c byte) bool {
	l.ws()
	if l.i < len(l.b) && l.b[l.i] == c {
		l.i++
		return true
	}
	return false
}

// peek skips whitespace and returns the next byte, 0 at the end.
func (l *frameLexer) peek() byte {
	l.ws()
	if l.i < len(l.b) {
		return l.b[l.i]
	}
	return 0
}

// str reads a string of printable ASCII without escapes; ascii is false
// for a string with other bytes (still taken: a value that is skipped may
// hold any UTF-8, valid or not, as the general decoder allows), ok false
// for one with an escape, a control character or no end.
func (l *frameLexer) str() (s []byte, ascii, ok bool) {
	if !l.next('"') {
		return nil, false, false
	}
	ascii = true
	for j := l.i; j < len(l.b); j++ {
		switch c := l.b[j]; {
		case c == '"':
			s, l.i = l.b[l.i:j], j+1
			return s, ascii, true
		case c == '\\' || c < 0x20:
			return nil, false, false
		case c >= 0x7f:
			ascii = false
		}
	}
	return nil, false, false
}

// scalar skips a string, number or literal.
func (l *frameLexer) scalar() bool {
	switch l.peek() {
	case '"':
		_, _, ok := l.str()
		return ok
	case 't':
		return l.lit("true")
	case 'f':
		return l.lit("false")
	case 'n':
		return l.lit("null")
	}
	_, ok := l.number()
	return ok
}

func (l *frameLexer) lit(s string) bool {
	if len(l.b)-l.i >= len(s) && string(l.b[l.i:l.i+len(s)]) == s {
		l.i += len(s)
		return true
	}
	return false
}

// number reads a JSON number; integer is false unless it is one that fits
// an int (no fraction, no exponent, at most 18 digits).
func (l *frameLexer) number() (v int, integer bool) {
	l.ws()
	b, i := l.b, l.i
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	d := i
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			if i-d < 18 {
				v = v*10 + int(b[i]-'0')
			}
			i++
		}
	default:
		return 0, false
	}
	integer = i-d <= 18
	if i < len(b) && b[i] == '.' {
		i++
		f := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == f {
			return 0, false
		}
		integer = false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		e := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == e {
			return 0, false
		}
		integer = false
	}
	l.i = i
	if neg {
		v = -v
	}
	return v, integer
}

// members calls member with each key of the object at l (after its '{'
// was read) and reads on past its '}'. member reads the value.
func (l *frameLexer) members(member func(key []byte) bool) bool {
	if l.next('}') {
		return true
	}
	for {
		key, ascii, ok := l.str()
		if !ok || !ascii || !l.next(':') || !member(key) {
			return false
		}
		if l.next(',') {
			continue
		}
		return l.next('}')
	}
}

// parseFrameFast reads the frames engines stream: an object of scalars,
// choices (objects of scalars and a delta object of scalars) and usage (an
// object of integers and scalars). ok is false for anything else.
func parseFrameFast(data []byte) (f frame, ok bool) {
	l := frameLexer{b: data}
	if !l.next('{') {
		return f, false
	}
	var seenChoices, seenUsage, seenObject bool
	ok = l.members(func(key []byte) bool {
		switch string(key) {
		case "choices":
			if seenChoices || !l.next('[') {
				return false
			}
			seenChoices = true
			return l.choices(&f)
		case "usage":
			if seenUsage {
				return false
			}
			seenUsage = true
			if l.peek() == 'n' {
				return l.lit("null") // vLLM's frames before the last
			}
			if !l.next('{') {
				return false
			}
			f.usage = true
			return l.usage(&f)
		case "object":
			s, ascii, ok := l.str()
			if seenObject || !ok || !ascii || string(s) == "error" {
				return false
			}
			seenObject = true
			return true
		case "error", "message":
			return false // rare: the general decoder says what they hold
		}
		return l.scalar()
	})
	if !ok {
		return frame{}, false
	}
	l.ws()
	return f, l.i == len(l.b)
}

// choices reads the elements of choices (after its '[') and its ']'.
func (l *frameLexer) choices(f *frame) bool {
	if l.next(']') {
		return true
	}
	for k := 0; ; k++ {
		if !l.next('{') {
			return false
		}
		var text, content, reasoning []byte
		var seenText, seenDelta, seenFinish, finish, role bool
		ok := l.members(func(key []byte) bool {
			switch string(key) {
			case "finish_reason":
				if seenFinish {
					return false
				}
				seenFinish, finish = true, l.peek() != 'n'
				return l.scalar()
			case "text":
				s, ascii, ok := l.str()
				if seenText || !ok || !ascii {
					return false
				}
				seenText, text = true, s
				return true
			case "delta":
				if seenDelta || !l.next('{') {
					return false
				}
				seenDelta = true
				var seenContent, seenRC, seenR, seenRole bool
				var rc, r []byte
				ok := l.members(func(key []byte) bool {
					var seen *bool
					var dst *[]byte
					switch string(key) {
					case "role":
						if seenRole {
							return false
						}
						seenRole, role = true, l.peek() != 'n'
						return l.scalar()
					case "content":
						seen, dst = &seenContent, &content
					case "reasoning_content":
						seen, dst = &seenRC, &rc
					case "reasoning":
						seen, dst = &seenR, &r
					default:
						return l.scalar()
					}
					s, ascii, ok := l.str()
					if *seen || !ok || !ascii {
						return false
					}
					*seen, *dst = true, s
					return true
				})
				reasoning = rc
				if len(reasoning) == 0 {
					reasoning = r
				}
				return ok
			}
			return l.scalar()
		})
		if !ok {
			return false
		}
		if k == 0 {
			f.choices, f.finish, f.role = true, finish, role
			f.delta = text
			if len(text) == 0 {
				f.delta = content
			}
			if len(f.delta) == 0 && len(reasoning) > 0 {
				f.delta, f.reasoning = reasoning, true
			}
		}
		if l.next(',') {
			continue
		}
		return l.next(']')
	}
}

// usage reads the members of usage (after its '{') and its '}'.
func (l *frameLexer) usage(f *frame) bool {
	var seenPrompt, seenOutput bool
	return l.members(func(key []byte) bool {
		switch string(key) {
		case "prompt_tokens", "completion_tokens":
			v, integer := l.number()
			if !integer {
				return false
			}
			if key[0] == 'p' {
				if seenPrompt {
					return false
				}
				seenPrompt, f.prompt = true, v
			} else {
				if seenOutput {
					return false
				}
				seenOutput, f.output = true, v
			}
			return true
		}
		return l.scalar()
	})
}
