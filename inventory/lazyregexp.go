package inventory

import (
	"regexp"
	"sync"
)

// lazyRegexp is a pattern compiled on its first use, once, safely for
// concurrent callers. The name fallbacks hold some fifty patterns; compiled
// at package init they cost every command (version, bench, diff) 8 ms and
// 1.2 MB before main, classifying a kernel or not. A package-level
// &lazyRegexp{expr: "..."} is laid out by the linker: no init code at all.
// Each is matched only on strings that hold its required literals.
type lazyRegexp struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
	need literalFilter
}

func lazyRE(expr string) *lazyRegexp { return &lazyRegexp{expr: expr} }

func (l *lazyRegexp) get() *regexp.Regexp {
	l.once.Do(func() { l.re, l.need = regexp.MustCompile(l.expr), requiredLiterals(l.expr) })
	return l.re
}

func (l *lazyRegexp) MatchString(s string) bool {
	re := l.get()
	return l.need.admits(s) && re.MatchString(s)
}

func (l *lazyRegexp) FindAllString(s string, n int) []string {
	re := l.get()
	if !l.need.admits(s) {
		return nil
	}
	return re.FindAllString(s, n)
}
