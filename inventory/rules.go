package inventory

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/profile-model/profile-model/internal/sidefile"
)

// Other is the category of kernels no rule matches.
const Other = "Other"

//go:embed rules.csv
var defaultRulesCSV []byte

// Rule is one row of the category rule table: kernels whose name contains
// Pattern (or matches it, for a "re:" pattern) get Category, Provider and
// ShortName. Cite says where the kernels are defined
// ("owner/repo@commit:path"); the built-in table cites one for every rule.
type Rule struct {
	Priority  int
	Pattern   string
	Category  string
	Provider  string
	ShortName string
	Cite      string
	Line      int // line in the rule file, for messages

	// onlyOn is the vendor whose GPUs alone run Provider's code, when the
	// library has no build for the other ("" when it runs on either, or
	// has a counterpart there, as NCCL's names on AMD are RCCL's).
	onlyOn string

	re *regexp.Regexp
	// need is what every match of re contains (for a substring rule, the
	// Pattern): a name without it is no match, and the regular expression
	// is not run. Most names match no
	// rule, and running the 43 built-in expressions on each took 0.15 ms a
	// name.
	need literalFilter
	// quick are byte pairs every match contains (need's, summarised): most
	// names lack one, and a few bit tests reject them before need's
	// literals are looked for.
	quick []uint16
}

// Source says which evidence decided a kernel's category, in the order
// they are tried.
type Source string

const (
	SourceRule     Source = "rule"      // a line of the rule table
	SourceLaunchOp Source = "launch_op" // the CPU op that launched the kernel
	SourceName     Source = "name"      // the words of the name (library family, GEMM, attention, ...)
	SourcePosition Source = "position"  // the layer position it shares with categorised kernels
	SourceNone     Source = "none"      // nothing did: Other
)

// Class is what the analysis says about one kernel name.
type Class struct {
	Category  string
	Provider  string
	ShortName string // the rule's short name, else ShortName(name)
	Source    Source // which evidence decided Category
}

// Rules is a parsed rule table. It is read-only after parsing and safe for
// concurrent use.
type Rules struct {
	Source string // file name, or "built-in"
	rules  []Rule
}

// DefaultRules returns the built-in rule table (rules.csv embedded in the
// binary), parsed on the first call and shared after: a Rules is read-only.
func DefaultRules() *Rules { return defaultRules() }

var defaultRules = sync.OnceValue(func() *Rules {
	r, err := ParseRules(bytes.NewReader(defaultRulesCSV), "built-in rules.csv")
	if err != nil {
		// The embedded table is tested; a bad edit must not go unnoticed.
		return &Rules{Source: "built-in (invalid: " + err.Error() + ")"}
	}
	return r
})

// LoadRules reads a user rule table (same format as the built-in rules.csv).
func LoadRules(path string) (*Rules, error) {
	data, err := sidefile.Read(context.Background(), path, "the rule table", sidefile.Small)
	if err != nil {
		return nil, err
	}
	return ParseRules(bytes.NewReader(data), path)
}

// ParseRules parses a rule table: '#' comment lines, a header line
// "priority,pattern,category,provider,short_name" with an optional sixth
// column "source" (where the kernels are defined), then one rule a line.
// Errors read "name:line: what is wrong".
func ParseRules(r io.Reader, name string) (*Rules, error) {
	rs := &Rules{Source: name}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	header := false
	fields := 0 // 5, or 6 with the source column
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		cr := csv.NewReader(strings.NewReader(text))
		rec, err := cr.Read()
		if err != nil {
			return nil, fmt.Errorf("%s:%d: not a CSV line: %w", name, line, err)
		}
		if !header {
			got := strings.Join(rec, ",")
			if got != strings.Join(ruleHeader, ",") && got != strings.Join(ruleHeader[:5], ",") {
				return nil, fmt.Errorf("%s:%d: header is %q, want %q (source optional)", name, line, text, strings.Join(ruleHeader, ","))
			}
			header, fields = true, len(rec)
			continue
		}
		if len(rec) != fields {
			return nil, fmt.Errorf("%s:%d: %d fields, want %d (%s)", name, line, len(rec), fields, strings.Join(ruleHeader[:fields], ","))
		}
		prio, err := strconv.Atoi(strings.TrimSpace(rec[0]))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: priority %q is not an integer", name, line, rec[0])
		}
		rule := Rule{Priority: prio, Pattern: rec[1], Category: strings.TrimSpace(rec[2]),
			Provider: strings.TrimSpace(rec[3]), ShortName: strings.TrimSpace(rec[4]), Line: line}
		if fields == 6 {
			rule.Cite = strings.TrimSpace(rec[5])
		}
		if rule.Pattern == "" || rule.Pattern == "re:" {
			return nil, fmt.Errorf("%s:%d: empty pattern", name, line)
		}
		if rule.Category == "" {
			return nil, fmt.Errorf("%s:%d: empty category", name, line)
		}
		if expr, ok := strings.CutPrefix(rule.Pattern, "re:"); ok {
			re, err := regexp.Compile(expr)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: bad regular expression %q: %w", name, line, expr, err)
			}
			rule.re, rule.need = re, requiredLiterals(expr)
		} else {
			rule.need = anyOf([]string{rule.Pattern})
		}
		rule.quick = rule.need.requiredPairs()
		if counterpart[rule.Provider] == "" {
			rule.onlyOn = vendorOf[rule.Provider]
		}
		rs.rules = append(rs.rules, rule)
	}
	// Highest priority first (the file's order among equals): the first
	// rule that matches wins, and the rest are not tried.
	slices.SortStableFunc(rs.rules, func(a, b Rule) int { return cmp.Compare(b.Priority, a.Priority) })
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line, err)
	}
	if !header {
		return nil, fmt.Errorf("%s: no header line (priority,pattern,category,provider,short_name[,source])", name)
	}
	return rs, nil
}

var ruleHeader = []string{"priority", "pattern", "category", "provider", "short_name", "source"}

// Filter returns the rules keep accepts, as a new table (to see what the
// fallbacks make of kernels without their rules).
func (rs *Rules) Filter(keep func(Rule) bool) *Rules {
	out := &Rules{Source: rs.Source + " (filtered)"}
	for _, r := range rs.rules {
		if keep(r) {
			out.rules = append(out.rules, r)
		}
	}
	return out
}

// Len is the number of rules.
func (rs *Rules) Len() int { return len(rs.rules) }

// matches reports whether s (whose byte pairs p holds) matches r.
func (r *Rule) matches(s string, p *pairSet) bool {
	for _, h := range r.quick {
		if p[h/64]&(1<<(h%64)) == 0 {
			return false
		}
	}
	if r.re == nil {
		return r.need.admitsPairs(s, p)
	}
	return r.need.admitsPairs(s, p) && r.re.MatchString(s)
}

// maxMatchName bounds the part of a kernel name that rules and name words
// are matched against: the longest real names (templated GEMMs) are a few
// kilobytes, and matching every rule against a 10 MB name took a minute.
const maxMatchName = 16 << 10

// matchText is the part of name that classification reads.
func matchText(name string) string {
	if len(name) > maxMatchName {
		return name[:maxMatchName]
	}
	return name
}

// isInductor reports whether a kernel is one of Inductor's Triton fusions,
// named for the ops it fused.
func isInductor(name string) bool {
	return strings.HasPrefix(name, "triton_poi_") || strings.HasPrefix(name, "triton_per_") || strings.HasPrefix(name, "triton_red_")
}

// Match returns the winning rule for a kernel name (checked as written and
// demangled; its first 16 KiB), or nil.
func (rs *Rules) Match(name string) *Rule { return rs.match(name, "") }

// match is Match on a trace of one GPU vendor ("" any): a rule whose
// provider runs only on the other vendor's GPUs, with no build for this
// one, does not apply (an fmha kernel on an NVIDIA GPU is not ck_tile's;
// NCCL's names on an AMD GPU are RCCL's, see boundByVendor).
func (rs *Rules) match(name, vendor string) *Rule {
	name = matchText(name)
	demangled := readableName(name)
	inductor := isInductor(name)
	var pn, pd pairSet
	pn.of(name)
	if demangled != name {
		pd.of(demangled)
	}
	for i := range rs.rules {
		r := &rs.rules[i]
		if r.onlyOn != "" && vendor != "" && r.onlyOn != vendor {
			continue
		}
		if inductor && !strings.Contains(r.Pattern, "triton_") {
			// An Inductor kernel's name lists the ops it fused; a rule
			// for an ATen kernel of one of them (layer_norm) says less.
			continue
		}
		if r.matches(name, &pn) || (demangled != name && r.matches(demangled, &pd)) {
			return r
		}
	}
	return nil
}

// Classify returns the category, provider and short name of a kernel name
// from its name alone: the rule table, else the words of the name (see
// fallback.go), else Other; then what the name itself states of its
// precision and its library (evidence.go). The provider is Unknown when
// nothing names it.
func (rs *Rules) Classify(name string) Class {
	c := &Classifier{rules: rs} // no trace: no op, phase or vendor
	return c.classify(name, nil)
}
