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
type lazyRegexp struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
}

func lazyRE(expr string) *lazyRegexp { return &lazyRegexp{expr: expr} }

func (l *lazyRegexp) get() *regexp.Regexp {
	l.once.Do(func() { l.re = regexp.MustCompile(l.expr) })
	return l.re
}

func (l *lazyRegexp) MatchString(s string) bool { return l.get().MatchString(s) }

func (l *lazyRegexp) FindAllString(s string, n int) []string { return l.get().FindAllString(s, n) }
