package inventory

import (
	"regexp/syntax"
	"slices"
	"strings"
)

// literalFilter is what every match of a regular expression contains: for
// each clause, all the literals of one of its groups. A string it does not
// admit cannot match, so the expression need not run; checking a few
// substrings costs a fraction of running Go's backtracker on a templated
// name.
type literalFilter []clause

// A clause holds when one of its groups does; a group when the string
// contains each of its literals.
type clause [][]literal

// admits reports whether s holds every clause.
func (f literalFilter) admits(s string) bool {
	if f == nil {
		return true
	}
	var p pairSet
	p.of(s)
	return f.admitsPairs(s, &p)
}

// admitsPairs is admits with the pairs of s already counted.
func (f literalFilter) admitsPairs(s string, p *pairSet) bool {
	for _, c := range f {
		if !slices.ContainsFunc(c, func(g []literal) bool {
			return !slices.ContainsFunc(g, func(l literal) bool { return !l.in(s, p) })
		}) {
			return false
		}
	}
	return true
}

// A literal is a string to look for and the byte pairs it holds: a string
// lacking one of them does not hold it, which one bit test says, where
// strings.Contains scans the string (a name is checked against some 300
// literals).
type literal struct {
	text  string
	pairs []uint16
}

func newLiteral(text string) literal {
	l := literal{text: text}
	for i := 0; i+1 < len(text); i++ {
		if h := pairHash(text[i], text[i+1]); !slices.Contains(l.pairs, h) {
			l.pairs = append(l.pairs, h)
		}
	}
	return l
}

// in reports whether s (whose pairs p holds) contains l.
func (l literal) in(s string, p *pairSet) bool {
	for _, h := range l.pairs {
		if p[h/64]&(1<<(h%64)) == 0 {
			return false
		}
	}
	return strings.Contains(s, l.text)
}

// pairSet is the set of adjacent byte pairs of a string, hashed to 4096
// bits (a collision only costs a strings.Contains).
type pairSet [64]uint64

func pairHash(a, b byte) uint16 { return (uint16(a)<<5 ^ uint16(b)) & 4095 }

func (p *pairSet) of(s string) {
	*p = pairSet{}
	for i := 0; i+1 < len(s); i++ {
		h := pairHash(s[i], s[i+1])
		p[h/64] |= 1 << (h % 64)
	}
}

// requiredLiterals returns the filter of the regular expression expr (nil
// when it knows none): so `gemm.*(f8|fp8)` wants "gemm" and one of "f8",
// "fp8", and `bf16|_h\d+gemm` wants "bf16", or "_h0".."_h9" with "gemm".
func requiredLiterals(expr string) literalFilter {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	f := required(re.Simplify())
	// The longest literals first: they rule out the most names.
	slices.SortStableFunc(f, func(a, b clause) int { return b.score() - a.score() })
	return f
}

// score is the length of a clause's shortest literal: the longer, the
// fewer names hold one.
func (c clause) score() int {
	m := -1
	for _, g := range c {
		for _, s := range g {
			if m < 0 || len(s.text) < m {
				m = len(s.text)
			}
		}
	}
	return m
}

// maxSpellings bounds the strings (or groups) one part of an expression
// is expanded to.
const maxSpellings = 16

func required(re *syntax.Regexp) literalFilter {
	if set := exactly(re); set != nil {
		return anyOf(set)
	}
	switch re.Op {
	case syntax.OpCapture:
		return required(re.Sub[0])
	case syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpAlternate:
		// One clause: the groups of every branch.
		var c clause
		for _, s := range re.Sub {
			gs := groups(required(s))
			if gs == nil {
				return nil
			}
			c = append(c, gs...)
		}
		return literalFilter{c}
	case syntax.OpConcat:
		// Every part is in a match: all their clauses hold. Adjacent parts
		// that spell a few strings (f, 8|p8) make one clause (f8, fp8); a
		// repeated part ends such a run with its first copy (s\d+ is s0..s9).
		var f literalFilter
		var run []string
		flush := func() {
			f = append(f, anyOf(run)...)
			run = nil
		}
		for _, s := range re.Sub {
			set := exactly(s)
			repeated := false
			if set == nil && (s.Op == syntax.OpPlus || s.Op == syntax.OpRepeat && s.Min >= 1) {
				set, repeated = exactly(s.Sub[0]), true
			}
			if set == nil {
				if alt := prefixed(run, s); alt != nil {
					// The parser factors common prefixes out of
					// alternatives (_(fp8|int8)): put them back.
					run = nil
					s = alt
				}
				flush()
				f = append(f, required(s)...)
				continue
			}
			if p := product(run, set); p != nil {
				run = p
			} else {
				flush()
				run = set
			}
			if repeated {
				flush()
			}
		}
		flush()
		return f
	}
	return nil
}

// prefixed is the alternation re (or a group of one) with each of the
// strings before it in front of each branch, nil when re is no alternation
// or that makes too many branches.
func prefixed(before []string, re *syntax.Regexp) *syntax.Regexp {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if re.Op != syntax.OpAlternate || len(before) == 0 || len(before)*len(re.Sub) > maxGroups {
		return nil
	}
	alt := &syntax.Regexp{Op: syntax.OpAlternate}
	for _, b := range before {
		for _, s := range re.Sub {
			lit := &syntax.Regexp{Op: syntax.OpLiteral, Rune: []rune(b)}
			branch := &syntax.Regexp{Op: syntax.OpConcat, Sub: []*syntax.Regexp{lit, s}}
			if s.Op == syntax.OpConcat {
				branch.Sub = append([]*syntax.Regexp{lit}, s.Sub...)
			}
			alt.Sub = append(alt.Sub, branch)
		}
	}
	return alt
}

// maxGroups bounds the groups of one clause.
const maxGroups = 64

// groups turns a filter into groups one of which holds whenever it does:
// each a choice of one group from every clause, the clauses that rule out
// most first, leaving out those that would make too many; nil when the
// filter is empty.
func groups(f literalFilter) clause {
	f = slices.Clone(f)
	slices.SortStableFunc(f, func(a, b clause) int { return b.score() - a.score() })
	var out clause
	for _, c := range f {
		if out == nil {
			if len(c) <= maxGroups {
				out = c
			}
			continue
		}
		if len(out)*len(c) > maxGroups {
			continue
		}
		next := make(clause, 0, len(out)*len(c))
		for _, g := range out {
			for _, h := range c {
				next = append(next, append(slices.Clip(g), h...))
			}
		}
		out = next
	}
	return out
}

// exactly returns every string re matches when they are few (a literal, a
// small class, alternatives and concatenations of those), else nil.
func exactly(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil
		}
		return []string{string(re.Rune)}
	case syntax.OpCharClass:
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if len(out) == maxSpellings {
					return nil
				}
				out = append(out, string(r))
			}
		}
		return out
	case syntax.OpCapture:
		return exactly(re.Sub[0])
	case syntax.OpAlternate:
		var out []string
		for _, s := range re.Sub {
			set := exactly(s)
			if set == nil || len(out)+len(set) > maxSpellings {
				return nil
			}
			out = append(out, set...)
		}
		return out
	case syntax.OpConcat:
		out := []string{""}
		for _, s := range re.Sub {
			set := exactly(s)
			if set == nil {
				return nil
			}
			if out = product(out, set); out == nil {
				return nil
			}
		}
		return out
	}
	return nil
}

// product is every a followed by every b, nil when there are too many (or
// a is nil).
func product(a, b []string) []string {
	if a == nil || len(a)*len(b) > maxSpellings {
		return nil
	}
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	return out
}

// anyOf is the filter that one of set be present; none when one of them
// is empty (every string holds it).
func anyOf(set []string) literalFilter {
	if len(set) == 0 || slices.Contains(set, "") {
		return nil
	}
	c := make(clause, len(set))
	for i, s := range set {
		c[i] = []literal{newLiteral(s)}
	}
	return literalFilter{c}
}

// requiredPairs are the byte pairs every string the filter admits
// contains: a clause needs the pairs all its alternatives need, an
// alternative (literals that must all be present) the pairs of each.
func (f literalFilter) requiredPairs() []uint16 {
	var out []uint16
	for _, c := range f {
		var common []uint16
		for i, g := range c {
			var need []uint16
			for _, l := range g {
				for _, h := range l.pairs {
					if !slices.Contains(need, h) {
						need = append(need, h)
					}
				}
			}
			if i == 0 {
				common = need
				continue
			}
			common = slices.DeleteFunc(common, func(h uint16) bool { return !slices.Contains(need, h) })
		}
		for _, h := range common {
			if !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	return out
}
