package tokenizer

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/dlclark/regexp2/v2"
	"golang.org/x/text/unicode/norm"
)

// gpt2Pattern is what the ByteLevel pre-tokenizer splits with when use_regex
// is true.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// maxBacktrack bounds a regex match's backtracking stack (integer slots);
// the library's default is too small for long whitespace runs under \s+(?!\S).
const maxBacktrack = 1 << 22

// compileRegex compiles a pattern from tokenizer.json. The reference
// implementation uses Oniguruma; regexp2's default (.NET) syntax agrees with
// it on lookaround, \p{..} classes, (?i:..) groups and on what \s and \d
// match.
func compileRegex(pattern string) (*regexp2.Regexp, error) {
	re, err := regexp2.Compile(pattern, regexp2.OptionMaxBacktrackingStackSize(maxBacktrack))
	if err != nil {
		return nil, fmt.Errorf("regex %q: %w", pattern, err)
	}
	return re, nil
}

// normalizer rewrites a segment of text before pre-tokenisation.
type normalizer func(string) string

func newNormalizer(c *componentJSON) (normalizer, error) {
	if c == nil {
		return nil, nil
	}
	switch c.Type {
	case "NFC":
		return norm.NFC.String, nil
	case "NFD":
		return norm.NFD.String, nil
	case "NFKC":
		return norm.NFKC.String, nil
	case "NFKD":
		return norm.NFKD.String, nil
	case "Lowercase":
		return strings.ToLower, nil
	case "Prepend":
		p := c.Prepend
		return func(s string) string {
			if s == "" {
				return s
			}
			return p + s
		}, nil
	case "Strip":
		left, right := c.StripLeft, c.StripRight
		return func(s string) string {
			if left {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
			}
			if right {
				s = strings.TrimRightFunc(s, unicode.IsSpace)
			}
			return s
		}, nil
	case "Replace":
		if c.Pattern == nil {
			return nil, fmt.Errorf("normalizer Replace has no pattern")
		}
		content := c.Content
		if c.Pattern.String != nil {
			old := *c.Pattern.String
			return func(s string) string { return strings.ReplaceAll(s, old, content) }, nil
		}
		if c.Pattern.Regex == nil {
			return nil, fmt.Errorf("normalizer Replace: pattern has neither String nor Regex")
		}
		re, err := compileRegex(*c.Pattern.Regex)
		if err != nil {
			return nil, fmt.Errorf("normalizer Replace: %w", err)
		}
		return func(s string) string {
			var b strings.Builder
			prev := 0
			for _, m := range findAll(re, s) {
				b.WriteString(s[prev:m[0]])
				b.WriteString(content)
				prev = m[1]
			}
			b.WriteString(s[prev:])
			return b.String()
		}, nil
	case "Sequence":
		var seq []normalizer
		for i := range c.Normalizers {
			n, err := newNormalizer(&c.Normalizers[i])
			if err != nil {
				return nil, err
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		return func(s string) string {
			for _, n := range seq {
				s = n(s)
			}
			return s
		}, nil
	}
	return nil, fmt.Errorf("unsupported normalizer %q: %w", c.Type, errUnsupported)
}

// preTokenizer refines a list of pieces of one segment into smaller pieces;
// atStart says the first piece begins the whole text.
type preTokenizer func(pieces []string, atStart bool) []string

// newPreTokenizer flattens the pre-tokenizer into a list of steps and says
// whether a ByteLevel step maps bytes to GPT-2's unicode characters.
func newPreTokenizer(c *componentJSON) (steps []preTokenizer, byteLevel bool, err error) {
	if c == nil {
		return nil, false, nil
	}
	switch c.Type {
	case "Sequence":
		for i := range c.Pretokenizers {
			s, bl, err := newPreTokenizer(&c.Pretokenizers[i])
			if err != nil {
				return nil, false, err
			}
			steps = append(steps, s...)
			byteLevel = byteLevel || bl
		}
		return steps, byteLevel, nil
	case "ByteLevel":
		prefix := c.AddPrefixSpace == nil || *c.AddPrefixSpace
		if prefix {
			steps = append(steps, func(pieces []string, atStart bool) []string {
				for i, p := range pieces {
					if !strings.HasPrefix(p, " ") {
						pieces[i] = " " + p
					}
				}
				return pieces
			})
		}
		if c.UseRegex == nil || *c.UseRegex {
			re, err := compileRegex(gpt2Pattern)
			if err != nil {
				return nil, false, err
			}
			steps = append(steps, regexSplitter(re, "Isolated", false))
		}
		return steps, true, nil
	case "Split":
		if c.Pattern == nil || (c.Pattern.Regex == nil && c.Pattern.String == nil) {
			return nil, false, fmt.Errorf("pre_tokenizer Split has no pattern")
		}
		if !validBehavior(c.Behavior) {
			return nil, false, fmt.Errorf("pre_tokenizer Split: unknown behavior %q", c.Behavior)
		}
		pattern := ""
		if c.Pattern.Regex != nil {
			pattern = *c.Pattern.Regex
		} else {
			pattern = regexp2.Escape(*c.Pattern.String)
		}
		re, err := compileRegex(pattern)
		if err != nil {
			return nil, false, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		return []preTokenizer{regexSplitter(re, c.Behavior, c.Invert)}, false, nil
	case "Digits":
		individual := c.IndividualDigits
		return []preTokenizer{funcSplitter(func(s string) [][]int {
			return runs(s, unicode.IsNumber, individual)
		}, "Isolated")}, false, nil
	case "Whitespace":
		re, err := compileRegex(`\w+|[^\w\s]+`)
		if err != nil {
			return nil, false, err
		}
		return []preTokenizer{regexSplitter(re, "Removed", true)}, false, nil
	case "WhitespaceSplit":
		return []preTokenizer{whitespaceSplit}, false, nil
	case "Punctuation":
		behavior := c.Behavior
		if behavior == "" {
			behavior = "Isolated"
		}
		if !validBehavior(behavior) {
			return nil, false, fmt.Errorf("pre_tokenizer Punctuation: unknown behavior %q", behavior)
		}
		return []preTokenizer{funcSplitter(func(s string) [][]int {
			return runs(s, isPunctuation, true)
		}, behavior)}, false, nil
	case "BertPreTokenizer":
		return []preTokenizer{whitespaceSplit, funcSplitter(func(s string) [][]int {
			return runs(s, isPunctuation, true)
		}, "Isolated")}, false, nil
	case "Metaspace":
		rep := metaspaceReplacement(*c)
		scheme := c.PrependScheme
		if scheme == "" {
			scheme = "always"
			if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
				scheme = "never"
			}
		}
		if scheme != "always" && scheme != "first" && scheme != "never" {
			return nil, false, fmt.Errorf("pre_tokenizer Metaspace: unknown prepend_scheme %q", scheme)
		}
		steps = append(steps, func(pieces []string, atStart bool) []string {
			for i, p := range pieces {
				p = strings.ReplaceAll(p, " ", rep)
				// "first" prepends only to the piece at the start of the text.
				if (scheme == "always" || (scheme == "first" && i == 0 && atStart)) && !strings.HasPrefix(p, rep) {
					p = rep + p
				}
				pieces[i] = p
			}
			return pieces
		})
		if c.Split == nil || *c.Split {
			steps = append(steps, funcSplitter(func(s string) [][]int {
				var out [][]int
				for i := 0; ; {
					j := strings.Index(s[i:], rep)
					if j < 0 {
						return out
					}
					out = append(out, []int{i + j, i + j + len(rep)})
					i += j + len(rep)
				}
			}, "MergedWithNext"))
		}
		return steps, false, nil
	}
	return nil, false, fmt.Errorf("unsupported pre_tokenizer %q: %w", c.Type, errUnsupported)
}

func metaspaceReplacement(c componentJSON) string {
	if c.Replacement == "" {
		return "\u2581"
	}
	return c.Replacement
}

func validBehavior(b string) bool {
	switch b {
	case "Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous":
		return true
	}
	return false
}

// findAll returns the byte ranges of re's matches in s. A match error (the
// backtracking limit on pathological input) leaves s unsplit rather than
// failing the whole encode.
func findAll(re *regexp2.Regexp, s string) [][]int {
	idx, err := re.FindAllStringIndex(s, -1)
	if err != nil {
		return nil
	}
	return idx
}

func regexSplitter(re *regexp2.Regexp, behavior string, invert bool) preTokenizer {
	return func(pieces []string, atStart bool) []string {
		out := make([]string, 0, 2*len(pieces))
		for _, p := range pieces {
			out = splitPiece(p, findAll(re, p), behavior, invert, out)
		}
		return out
	}
}

func funcSplitter(find func(string) [][]int, behavior string) preTokenizer {
	return func(pieces []string, atStart bool) []string {
		var out []string
		for _, p := range pieces {
			out = splitPiece(p, find(p), behavior, false, out)
		}
		return out
	}
}

type span struct {
	lo, hi  int
	isMatch bool
}

// splitPiece cuts s at the matches (sorted, non-overlapping byte ranges) by
// the reference's SplitDelimiterBehavior and appends the non-empty pieces.
func splitPiece(s string, matches [][]int, behavior string, invert bool, out []string) []string {
	if behavior == "Isolated" { // the common case, without the spans
		prev := 0
		for _, m := range matches {
			if len(m) < 2 || m[0] < prev || m[1] < m[0] || m[1] > len(s) {
				continue
			}
			if prev < m[0] {
				out = append(out, s[prev:m[0]])
			}
			if m[0] < m[1] {
				out = append(out, s[m[0]:m[1]])
			}
			prev = m[1]
		}
		if prev < len(s) {
			out = append(out, s[prev:])
		}
		return out
	}
	spans := make([]span, 0, 2*len(matches)+1)
	prev := 0
	for _, m := range matches {
		if len(m) < 2 || m[0] < prev || m[1] < m[0] || m[1] > len(s) {
			continue
		}
		if prev != m[0] {
			spans = append(spans, span{prev, m[0], invert})
		}
		spans = append(spans, span{m[0], m[1], !invert})
		prev = m[1]
	}
	if prev != len(s) {
		spans = append(spans, span{prev, len(s), invert})
	}

	var keep []span
	switch behavior {
	case "Removed":
		for _, sp := range spans {
			if !sp.isMatch {
				keep = append(keep, sp)
			}
		}
	case "Isolated":
		keep = spans
	case "MergedWithPrevious":
		prevMatch := false
		for _, sp := range spans {
			if sp.isMatch && !prevMatch && len(keep) > 0 {
				keep[len(keep)-1].hi = sp.hi
			} else {
				keep = append(keep, sp)
			}
			prevMatch = sp.isMatch
		}
	case "MergedWithNext":
		prevMatch := false
		for i := len(spans) - 1; i >= 0; i-- {
			sp := spans[i]
			if sp.isMatch && !prevMatch && len(keep) > 0 {
				keep[len(keep)-1].lo = sp.lo
			} else {
				keep = append(keep, sp)
			}
			prevMatch = sp.isMatch
		}
		for i, j := 0, len(keep)-1; i < j; i, j = i+1, j-1 {
			keep[i], keep[j] = keep[j], keep[i]
		}
	case "Contiguous":
		prevMatch := false
		for i, sp := range spans {
			if i > 0 && sp.isMatch == prevMatch {
				keep[len(keep)-1].hi = sp.hi
			} else {
				keep = append(keep, sp)
			}
			prevMatch = sp.isMatch
		}
	}
	for _, sp := range keep {
		if sp.lo < sp.hi {
			out = append(out, s[sp.lo:sp.hi])
		}
	}
	return out
}

// runs returns the byte ranges of runes for which in is true: each rune alone
// when individual, else maximal runs.
func runs(s string, in func(rune) bool, individual bool) [][]int {
	var out [][]int
	for i, r := range s {
		if !in(r) {
			continue
		}
		hi := i + len(string(r))
		if !individual && len(out) > 0 && out[len(out)-1][1] == i {
			out[len(out)-1][1] = hi
			continue
		}
		out = append(out, []int{i, hi})
	}
	return out
}

func whitespaceSplit(pieces []string, _ bool) []string {
	var out []string
	for _, p := range pieces {
		out = append(out, strings.FieldsFunc(p, unicode.IsSpace)...)
	}
	return out
}

func isPunctuation(r rune) bool { return unicode.IsPunct(r) || (r < 128 && unicode.IsSymbol(r)) }

func isSpace(r rune) bool { return unicode.IsSpace(r) }

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

// byteToRune is GPT-2's byte-to-unicode table: printable bytes map to
// themselves, the others to U+0100 onwards in byte order. It is built once
// and only read.
var byteToRune = byteTable()

func byteTable() [256]rune {
	var fwd [256]rune
	n := rune(0)
	for b := range 256 {
		if ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF) {
			fwd[b] = rune(b)
		} else {
			fwd[b] = 256 + n
			n++
		}
	}
	return fwd
}

func byteLevelString(s string) string {
	var b strings.Builder
	b.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		b.WriteRune(byteToRune[s[i]])
	}
	return b.String()
}

func unicodeToByte(r rune) (byte, bool) {
	if r < 256 && byteToRune[r] == r {
		return byte(r), true
	}
	if r < 256 || r >= 256+68 { // 68 bytes do not print as themselves
		return 0, false
	}
	for b, m := range byteToRune {
		if m == r {
			return byte(b), true
		}
	}
	return 0, false
}

// byteFallbackToken reads a "<0xXX>" byte token.
func byteFallbackToken(tok string) (byte, bool) {
	if len(tok) != 6 || !strings.HasPrefix(tok, "<0x") || tok[5] != '>' {
		return 0, false
	}
	var v byte
	for _, c := range tok[3:5] {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | byte(c-'0')
		case 'A' <= c && c <= 'F':
			v = v<<4 | byte(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}
