package analysis

import (
	"bufio"
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/tracing"
	"github.com/stretchr/testify/require"
)

// The public labelled set (fixtures/labels/public): traces that are not in
// the corpus, kept as facts (kernel, share, launching op, phase shares,
// device, engine) with an expert's labels written before the tool ran on
// them. The project keeps no trace, so the test rebuilds each one from its
// facts and labels it through the inventory.
var updateAgreement = flag.Bool("update", false, "rewrite docs/labels-agreement.md from the agreement the test measures")

// The goal on the held half and on every trace the work is judged on. Not
// asserted yet: the table shows how far each trace is.
const (
	publicGoalCategory         = 0.98
	publicGoalCategoryProvider = 0.95
)

var publicColumns = []string{"kernel", "pct", "launch_op", "prefill_pct", "decode_pct", "mixed_pct", "category", "provider", "reason"}

type factRow struct {
	kernel, launchOp            string
	pct, prefill, decode, mixed float64 // pct of the trace; the rest of its own time
	category, provider, reason  string
	line                        int
}

type publicTrace struct {
	name, path string
	// kind is "trace" (facts extracted from a trace file) or "listing"
	// (a kernel table someone published), from the header's first line.
	kind string
	meta map[string]string // the "# key: value" lines of the header
	rows []factRow
}

// coverage is the share of the trace's kernel time its rows label.
func (p *publicTrace) coverage() float64 {
	var s float64
	for _, r := range p.rows {
		s += r.pct
	}
	return s / 100
}

func readPublicTrace(t *testing.T, path string) *publicTrace {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	p := &publicTrace{name: strings.TrimSuffix(filepath.Base(path), ".csv"), path: path, meta: map[string]string{}}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "# ")
		if !ok {
			continue
		}
		if p.kind == "" {
			switch {
			case strings.HasPrefix(line, "Public trace "):
				p.kind = "trace"
			case strings.HasPrefix(line, "Listing "):
				p.kind = "listing"
			}
			require.NotEmpty(t, p.kind, "%s: the first line says 'Public trace NAME: ...' or 'Listing NAME: ...'", path)
		}
		if k, v, ok := strings.Cut(line, ": "); ok && !strings.Contains(k, " ") && p.meta[k] == "" {
			p.meta[k] = v
		}
	}
	r := csv.NewReader(strings.NewReader(string(data)))
	r.Comment = '#'
	recs, err := r.ReadAll()
	require.NoError(t, err, path)
	require.NotEmpty(t, recs, path)
	require.Equal(t, publicColumns, recs[0], "%s: header", path)
	num := func(row []string, i, n int) float64 {
		v, err := strconv.ParseFloat(row[i], 64)
		require.NoError(t, err, "%s row %d: %s", path, n, publicColumns[i])
		require.True(t, v >= 0 && v <= 100, "%s row %d: %s %v out of 0..100", path, n, publicColumns[i], v)
		return v
	}
	for i, row := range recs[1:] {
		n := i + 2
		f := factRow{kernel: row[0], launchOp: row[2], pct: num(row, 1, n), prefill: num(row, 3, n), decode: num(row, 4, n), mixed: num(row, 5, n),
			category: row[6], provider: row[7], reason: row[8], line: n}
		require.Equal(t, labelKey(f.kernel), f.kernel, "%s row %d: a name over 200 bytes is written as its label key", path, n)
		require.LessOrEqual(t, f.prefill+f.decode+f.mixed, 100.5, "%s row %d: phase shares", path, n)
		require.NotEmpty(t, f.provider, "%s row %d: provider", path, n)
		require.NotEmpty(t, f.reason, "%s row %d: reason", path, n)
		p.rows = append(p.rows, f)
	}
	return p
}

// documentedCategories are the categories docs/kernel-categories.md lists.
func documentedCategories(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "kernel-categories.md"))
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(data), "## Categories")
	require.True(t, ok)
	rest, _, _ = strings.Cut(rest, "## Providers")
	cats := map[string]bool{}
	for _, line := range strings.Split(rest, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		if c := strings.TrimSpace(cells[1]); c != "" && c != "category" && !strings.HasPrefix(c, "---") {
			cats[c] = true
		}
	}
	require.NotEmpty(t, cats)
	return cats
}

// readSplit reads fixtures/labels/public/SPLIT: the half of each trace.
func readSplit(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	halves := map[string]string{}
	for n, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		require.Len(t, f, 2, "%s line %d: want 'dev|held NAME'", path, n+1)
		require.Contains(t, []string{"dev", "held"}, f[0], "%s line %d", path, n+1)
		require.NotContains(t, halves, f[1], "%s line %d: %s listed twice", path, n+1, f[1])
		halves[f[1]] = f[0]
	}
	return halves
}

// publicStepLabel is a step annotation in the spelling of the engine that
// wrote the trace, so that the trace carries what a real one says of its
// engine.
func publicStepLabel(engine string, kind tracing.StepKind) string {
	switch {
	case strings.HasPrefix(engine, "SGLang"):
		if kind == tracing.StepDecode {
			return "step[DECODE bs=8]"
		}
		return "step[EXTEND bs=8 toks=8192]"
	case strings.HasPrefix(engine, "ATOM"):
		if kind == tracing.StepDecode {
			return "decode[bs=8 tok=8]"
		}
		return "prefill[bs=8 tok=8192]"
	case strings.HasPrefix(engine, "vLLM"):
		switch kind {
		case tracing.StepDecode:
			return "execute_8_context_0(sq0sk0sqsq0sqsk0)_generation_8(sq8sk8192)"
		case tracing.StepMixed:
			return "execute_8192_context_8(sq8184sk8184)_generation_8(sq8sk8192)"
		}
		return "execute_8192_context_8(sq8192sk8192)_generation_0(sq0)"
	}
	return string(kind)
}

// traceOfFacts rebuilds a trace from the facts: each row's share of kernel
// time split over the steps it ran in, its launching op through an External
// id, the device's vendor and name. What the facts cannot give is left out
// and approximated: one kernel per row and phase (no layer repetition, so no
// layer-position evidence), names over 200 bytes seen as their label key
// (first 120 bytes), and no Python frames or graph launches.
func traceOfFacts(p *publicTrace) *tracing.Trace {
	tr := &tracing.Trace{Path: p.name, Device: p.meta["device"], Vendor: p.meta["vendor"], Kind: tracing.KindExecution}
	stepOf := map[tracing.StepKind]int32{}
	step := func(kind tracing.StepKind) int32 {
		if i, ok := stepOf[kind]; ok {
			return i
		}
		i := int32(len(tr.Steps))
		tr.Steps = append(tr.Steps, tracing.Step{Kind: kind, Label: publicStepLabel(p.meta["engine"], kind), Source: "cpu_annotation"})
		stepOf[kind] = i
		return i
	}
	ops := map[int64]string{}
	var now int64
	for i, r := range p.rows {
		var ext int64
		if r.launchOp != "" {
			ext = int64(i + 1)
			ops[ext] = r.launchOp
		}
		total := r.pct * 1e5 // ns: the whole trace is 10 ms
		other := max(0, 100-r.prefill-r.decode-r.mixed)
		for _, part := range []struct {
			kind  tracing.StepKind
			share float64
		}{{tracing.StepPrefill, r.prefill}, {tracing.StepDecode, r.decode}, {tracing.StepMixed, r.mixed}, {"", other}} {
			dur := int64(math.Round(total * part.share / 100))
			if dur <= 0 {
				continue
			}
			k := tracing.Kernel{Start: now, Dur: dur, External: ext, Correlation: int64(len(tr.Kernels) + 1), Graph: -1, Step: -1, Kind: tracing.KindKernel}
			if part.kind != "" {
				k.Step = step(part.kind)
				tr.Steps[k.Step].Kernels = append(tr.Steps[k.Step].Kernels, int32(len(tr.Kernels)))
			}
			tr.AddKernel(r.kernel, k)
			now += dur + 1000
		}
	}
	for i := range tr.Steps {
		s := &tr.Steps[i]
		if len(s.Kernels) > 0 {
			s.Start, s.End = tr.Kernels[s.Kernels[0]].Start, tr.Kernels[s.Kernels[len(s.Kernels)-1]].End()
		}
	}
	tr.SetOps(ops)
	return tr
}

type publicAgreement struct {
	name, half, kind, device, engine string
	coverage, category, catProvider  float64 // shares of the labelled time
	misses                           []string
}

// measurePublic classifies a trace's facts through the inventory and weighs
// the agreement with the expert's labels by kernel time.
func measurePublic(t *testing.T, p *publicTrace) publicAgreement {
	t.Helper()
	inv, err := inventory.BuildInventory(context.Background(), traceOfFacts(p), nil, nil)
	require.NoError(t, err, p.name)
	got := map[string]inventory.KernelRow{}
	for _, k := range inv.Kernels.All() {
		got[k.Kernel] = k
	}
	a := publicAgreement{name: p.name, kind: p.kind, device: p.meta["device"], engine: p.meta["engine"], coverage: p.coverage()}
	var all, cat, both float64
	seen := map[string]bool{}
	for _, r := range p.rows {
		k, ok := got[r.kernel]
		require.True(t, ok, "%s: %s is not in the inventory", p.name, r.kernel)
		if seen[r.kernel] {
			continue
		}
		seen[r.kernel] = true
		w := float64(k.Total)
		all += w
		switch {
		case k.Category != r.category:
			a.misses = append(a.misses, fmt.Sprintf("%.1f%% %s: got %s / %s, want %s / %s", r.pct, k.ShortName, k.Category, k.Provider, r.category, r.provider))
		case k.Provider != r.provider:
			cat += w
			a.misses = append(a.misses, fmt.Sprintf("%.1f%% %s: got provider %s, want %s", r.pct, k.ShortName, k.Provider, r.provider))
		default:
			cat += w
			both += w
		}
	}
	if all > 0 {
		a.category, a.catProvider = cat/all, both/all
	}
	return a
}

// TestPublicLabelAgreement checks the public labelled set (every file reads,
// uses the documented categories, names its source, device and engine,
// covers 97% of its kernel time or says why, and is in exactly one half of
// the split) and measures, per trace and per half, the share of the labelled
// kernel time whose category (and provider) the inventory gives as the
// expert did. The goal (≥98% category, ≥95% category and provider on the
// held half) is printed, not asserted yet.
func TestPublicLabelAgreement(t *testing.T) {
	dir := filepath.Join("..", "..", "fixtures", "labels", "public")
	files, err := filepath.Glob(filepath.Join(dir, "*.csv"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	split := readSplit(t, filepath.Join(dir, "SPLIT"))
	cats := documentedCategories(t)
	var results []publicAgreement
	for _, f := range files {
		p := readPublicTrace(t, f)
		for _, key := range []string{"source", "device", "vendor", "engine"} {
			require.NotEmpty(t, p.meta[key], "%s: the header names its %s ('# %s: ...')", f, key, key)
		}
		require.Contains(t, []string{"amd", "nvidia"}, p.meta["vendor"], f)
		for _, r := range p.rows {
			require.True(t, cats[r.category], "%s row %d: category %q is not in docs/kernel-categories.md", f, r.line, r.category)
		}
		if p.coverage() < goalCoverage {
			require.NotEmpty(t, p.meta["coverage"], "%s: rows cover %.1f%% of the kernel time; under 97%% the header says why ('# coverage: ...')", f, 100*p.coverage())
		}
		half, ok := split[p.name]
		require.True(t, ok, "%s is not in %s/SPLIT", p.name, dir)
		a := measurePublic(t, p)
		a.half = half
		results = append(results, a)
	}
	require.Len(t, split, len(results), "SPLIT names a trace that has no file")
	table := agreementTable(results)
	t.Logf("agreement with the public labels:\n%s", table)
	for _, a := range results {
		if a.half == "held" {
			// The held half's misses are not printed: no rule is to be
			// written from them.
			continue
		}
		for i, m := range a.misses {
			if i == 5 {
				break
			}
			t.Logf("%s (%s): %s", a.name, a.half, m)
		}
	}
	doc := filepath.Join("..", "..", "docs", "labels-agreement.md")
	if *updateAgreement {
		require.NoError(t, os.WriteFile(doc, []byte(table), 0o644))
	} else if old, err := os.ReadFile(doc); err != nil || string(old) != table {
		// Not a failure: the rules change on other branches; the table
		// is rewritten with -update when their work lands.
		t.Logf("%s differs from this measurement: rewrite it with -update", doc)
	}
}

// TestTraceOfFacts checks the rebuilding of a trace from its facts: each
// row's time split over its steps, its launching op and the device.
func TestTraceOfFacts(t *testing.T) {
	p := &publicTrace{name: "x", meta: map[string]string{"vendor": "amd", "device": "AMD Instinct MI300X", "engine": "SGLang"}, rows: []factRow{
		{kernel: "gemm_a", pct: 60, launchOp: "aten::mm", prefill: 25, decode: 75},
		{kernel: "norm_b", pct: 30, mixed: 50},
	}}
	tr := traceOfFacts(p)
	require.Equal(t, "amd", tr.Vendor)
	require.Equal(t, "AMD Instinct MI300X", tr.Device)
	type part struct {
		name, op string
		ns       int64
		kind     tracing.StepKind
	}
	var got []part
	for i := range tr.Kernels {
		k := &tr.Kernels[i]
		var kind tracing.StepKind
		if k.Step >= 0 {
			kind = tr.Steps[k.Step].Kind
			require.Contains(t, tr.Steps[k.Step].Kernels, int32(i))
		}
		got = append(got, part{tr.KernelName(i), tr.LaunchOp(i), k.Dur, kind})
	}
	require.Equal(t, []part{
		{"gemm_a", "aten::mm", 1_500_000, tracing.StepPrefill},
		{"gemm_a", "aten::mm", 4_500_000, tracing.StepDecode},
		{"norm_b", "", 1_500_000, tracing.StepMixed},
		{"norm_b", "", 1_500_000, ""},
	}, got)
	require.Equal(t, "step[DECODE bs=8]", tr.Steps[1].Label)
}

// agreementTable is docs/labels-agreement.md: per half, each trace's
// coverage and agreement, and the half's mean against the goal.
func agreementTable(results []publicAgreement) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Agreement with the public labelled set\n\n")
	fmt.Fprintf(&b, "Generated by `go test -run TestPublicLabelAgreement ./inventory/analysis/ -args -update` from\n")
	fmt.Fprintf(&b, "`fixtures/labels/public/` (facts of public traces beyond the corpus, labelled by hand\n")
	fmt.Fprintf(&b, "before the tool ran on them; see that folder's `SPLIT` for the halves). Each trace is\n")
	fmt.Fprintf(&b, "rebuilt from its facts and labelled by the inventory; the shares are of the labelled\n")
	fmt.Fprintf(&b, "kernel time. Goal on the held half and on every trace: ≥ %.0f%% category, ≥ %.0f%% category\n", 100*publicGoalCategory, 100*publicGoalCategoryProvider)
	fmt.Fprintf(&b, "and provider.\n\n")
	fmt.Fprintf(&b, "What the facts cannot give is approximated: each row is one kernel per phase (no layer\n")
	fmt.Fprintf(&b, "repetition, so no layer-position evidence), a name over 200 bytes is seen as its 120-byte\n")
	fmt.Fprintf(&b, "label key, and a listing's names are as it prints them (often cut). *facts*: `trace` when\n")
	fmt.Fprintf(&b, "extracted from a trace file, `listing` when taken from a published kernel table.\n")
	for _, half := range []string{"dev", "held"} {
		var in []publicAgreement
		for _, a := range results {
			if a.half == half {
				in = append(in, a)
			}
		}
		slices.SortFunc(in, func(x, y publicAgreement) int { return strings.Compare(x.name, y.name) })
		fmt.Fprintf(&b, "\n## %s half (%d traces)\n\n", half, len(in))
		fmt.Fprintf(&b, "| trace | facts | device | engine | labelled | category | cat+provider |\n|---|---|---|---|---:|---:|---:|\n")
		var cat, both float64
		met := 0
		for _, a := range in {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %.1f%% | %.1f%% | %.1f%% |\n", a.name, a.kind, shortMeta(a.device), shortMeta(a.engine), 100*a.coverage, 100*a.category, 100*a.catProvider)
			cat += a.category
			both += a.catProvider
			if a.category >= publicGoalCategory && a.catProvider >= publicGoalCategoryProvider {
				met++
			}
		}
		if n := float64(len(in)); n > 0 {
			fmt.Fprintf(&b, "| **mean** | | | | | **%.1f%%** | **%.1f%%** |\n", 100*cat/n, 100*both/n)
		}
		fmt.Fprintf(&b, "\nTraces at the goal: %d of %d.\n", met, len(in))
	}
	return b.String()
}

// shortMeta is a header value without its explanation: the text before
// " (" or ";".
func shortMeta(s string) string {
	if i := strings.IndexAny(s, "(;"); i > 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
