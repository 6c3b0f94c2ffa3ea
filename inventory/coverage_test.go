package inventory

import (
	"encoding/csv"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the registry coverage section of docs/kernel-categories.md from what TestRegistryCoverage measures")

// The engine whose trace each library's kernels are seen in: it decides
// the owner of the kernels both engines' custom ops define.
var coverageEngine = map[string]string{"vLLM": EngineVLLM, "SGLang": EngineSGLang, "aiter (ATOM)": EngineATOM}

const (
	coverageBegin = "<!-- registry coverage: written by go test ./inventory -run TestRegistryCoverage -update -->\n"
	coverageEnd   = "<!-- end of registry coverage -->\n"
)

// TestRegistryCoverage measures, per library, which of the kernel families
// the engines ship the registry recognises (category and provider as the
// family's source defines them), and holds docs/kernel-categories.md to it.
func TestRegistryCoverage(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join("testdata", "registry_coverage.csv"))
	require.NoError(t, err)
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	rows, err := r.ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"library", "family", "vendor", "kernel", "category", "provider", "source"}, rows[0])
	type lib struct {
		name    string
		hit, n  int
		missed  []string
		entries []string
	}
	var libs []*lib
	byName := map[string]*lib{}
	for _, row := range rows[1:] {
		name, family, vendor, kernel, cat, prov, src := row[0], row[1], row[2], row[3], row[4], row[5], row[6]
		l := byName[name]
		if l == nil {
			l = &lib{name: name}
			byName[name] = l
			libs = append(libs, l)
		}
		c := classifierFor(registryCase{kernel: kernel, vendor: vendor, engine: coverageEngine[name]})
		got := c.Classify(kernel)
		l.n++
		mark := "yes"
		if got.Category == cat && got.Provider == prov {
			l.hit++
		} else {
			mark = fmt.Sprintf("no: %s / %s", got.Category, got.Provider)
			l.missed = append(l.missed, family)
		}
		var cites []string
		for _, s := range strings.Fields(src) {
			cites = append(cites, "`"+s+"`")
		}
		l.entries = append(l.entries, fmt.Sprintf("| %s | %s | %s / %s | %s | %s |", name, family, cat, prov, mark, strings.Join(cites, " ")))
	}
	var b strings.Builder
	b.WriteString(coverageBegin)
	b.WriteString("\n| library | families recognised | missed |\n|---|---|---|\n")
	total, hits := 0, 0
	for _, l := range libs {
		fmt.Fprintf(&b, "| %s | %d of %d | %s |\n", l.name, l.hit, l.n, strings.Join(l.missed, "; "))
		total += l.n
		hits += l.hit
	}
	fmt.Fprintf(&b, "| **all** | **%d of %d** | |\n\n", hits, total)
	b.WriteString("| library | family | labels | recognised | defined in |\n|---|---|---|---|---|\n")
	for _, l := range libs {
		for _, e := range l.entries {
			b.WriteString(e + "\n")
		}
	}
	b.WriteString("\n" + coverageEnd)
	t.Logf("registry coverage:\n%s", b.String())

	doc := filepath.Join("..", "docs", "kernel-categories.md")
	data, err := os.ReadFile(doc)
	require.NoError(t, err)
	text := string(data)
	i, j := strings.Index(text, coverageBegin), strings.Index(text, coverageEnd)
	require.True(t, i >= 0 && j > i, "%s has no registry coverage section (%q … %q)", doc, coverageBegin, coverageEnd)
	want := text[:i] + b.String() + text[j+len(coverageEnd):]
	if *update {
		require.NoError(t, os.WriteFile(doc, []byte(want), 0o644))
		return
	}
	require.Equal(t, want, text, "the coverage section of %s is stale: go test ./inventory -run TestRegistryCoverage -update", doc)
	require.GreaterOrEqual(t, float64(hits)/float64(total), 0.9, "the registry recognises under 90%% of the families")
}

// A rule's quick pairs are only a summary of its literals: every name its
// literals admit has them all, so the quick test rejects no match.
func TestRuleQuickPairsNecessary(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join("testdata", "registry_coverage.csv"))
	require.NoError(t, err)
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	rows, err := r.ReadAll()
	require.NoError(t, err)
	admitted := 0
	for _, rule := range DefaultRules().rules {
		for _, row := range rows[1:] {
			for _, name := range []string{row[3], readableName(row[3])} {
				if !rule.need.admits(name) {
					continue
				}
				admitted++
				var p pairSet
				p.of(name)
				for _, h := range rule.quick {
					require.NotZero(t, p[h/64]&(1<<(h%64)), "rules.csv:%d %q: a quick pair missing from %s", rule.Line, rule.Pattern, name)
				}
			}
		}
	}
	require.Greater(t, admitted, 100, "the names exercise the rules")
}
