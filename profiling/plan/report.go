package plan

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/internal/svgchart"
	"github.com/profile-model/profile-model/profiling/diff"
	"github.com/profile-model/profile-model/profiling/report"
)

// Files of the sweep report.
const (
	ReadmeFile  = "readme.md"
	ParetoChart = "pareto.svg"
	// EnergyChart: throughput per GPU against output tokens per joule,
	// when the pairs' GPUs were sampled.
	EnergyChart = "energy.svg"
	// CostChart: cost per million output tokens against speed per user,
	// when the pairs were priced.
	CostChart = "cost.svg"
	DiffsDir  = "diffs"
)

// Point is one measured level of one pair.
type Point struct {
	Pair   string // server/bench
	Server string
	Conc   int
	Status string
	GPUs   int
	// OutTokS is the output throughput; PerGPU divides it by the GPUs;
	// PerUser is 1000 / median TPOT: the tokens per second one request
	// streams.
	OutTokS, PerGPU, PerUser float64
	TTFTP50MS, TPOTP50MS     float64
	DecodeBS                 int
	// TokPerJ is the output tokens per joule of the server's GPUs and
	// MeanW their mean power, from the level's telemetry; 0 without it.
	TokPerJ, MeanW float64
	// CostPerMOut is the cost of the level's GPU-hours per million output
	// tokens at the pair's --gpu-price; 0 without a price.
	CostPerMOut float64
	oneBench    bool // the plan has one bench variant: labels name the server alone
}

// Label names a point on the chart: pair@conc, or server@conc when the
// plan has one bench variant.
func (pt Point) Label() string {
	if pt.oneBench {
		return fmt.Sprintf("%s@%d", pt.Server, pt.Conc)
	}
	return fmt.Sprintf("%s@%d", pt.Pair, pt.Conc)
}

// Points reads every level of every pair of a sweep directory; levels
// that did not complete have a status and no figures.
func Points(dir string, p *Plan, x *Index) []Point {
	gpus := map[string]int{}
	for _, sv := range p.Servers {
		gpus[sv.Name] = p.GPUs(sv)
	}
	var out []Point
	for _, e := range x.Pairs {
		run := results.Run(filepath.Join(dir, e.Dir))
		var price float64
		if info, err := results.LoadRunInfo(run.RunInfo()); err == nil {
			price = info.GPUPrice
		}
		for _, lv := range e.Levels {
			pt := Point{Pair: e.Name(), Server: e.Server, Conc: lv.Conc, Status: lv.Status, GPUs: max(gpus[e.Server], 1), oneBench: len(p.Benches) == 1}
			if l, err := results.LoadLevel(run.LevelResult(lv.Conc)); err == nil {
				r := results.SummaryRowOf(l)
				pt.Status, pt.OutTokS, pt.TTFTP50MS, pt.TPOTP50MS, pt.DecodeBS = r.Status, r.OutTokS, r.TTFTP50MS, r.TPOTP50MS, r.DecodeBS
				pt.PerGPU = r.OutTokS / float64(pt.GPUs)
				if r.TPOTP50MS > 0 {
					pt.PerUser = 1000 / r.TPOTP50MS
				}
				if e, ok := results.EnergyOf(l); ok {
					pt.TokPerJ, pt.MeanW = e.OutTokensPerJ, e.MeanW
				}
				if price > 0 && l.TotalOutputTokens > 0 {
					pt.CostPerMOut = price * float64(pt.GPUs) * l.DurationS / 3600 / float64(l.TotalOutputTokens) * 1e6
				}
			}
			out = append(out, pt)
		}
	}
	return out
}

func (pt Point) measured() bool {
	return (pt.Status == results.StatusOK || pt.Status == results.StatusTraceIncomplete) && pt.PerUser > 0 && pt.PerGPU > 0
}

// Frontier is the Pareto frontier of the measured points: those no other
// point beats on both throughput per GPU and tokens per second per user,
// by increasing speed per user.
func Frontier(pts []Point) []Point {
	var out []Point
	for i, a := range pts {
		if !a.measured() {
			continue
		}
		dominated := false
		for j, b := range pts {
			if i != j && b.measured() && b.PerUser >= a.PerUser && b.PerGPU >= a.PerGPU &&
				(b.PerUser > a.PerUser || b.PerGPU > a.PerGPU || j < i) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, a)
		}
	}
	slices.SortStableFunc(out, func(a, b Point) int { return cmp.Compare(a.PerUser, b.PerUser) })
	return out
}

// WriteReport writes the sweep directory's readme.md, pareto.svg and one
// diff per pair of server variants that differ in one setting
// (diffs/A-vs-B.bench.md), from the files of the sweep alone. A readme.md
// or pareto.svg edited since a report wrote it (report.sha256) is
// replaced only with force.
func WriteReport(ctx context.Context, dir string, force bool) (err error) {
	p, x, err := openSweep(dir)
	if err != nil {
		return err
	}
	owned, err := report.OpenOwned(dir, force)
	if err != nil {
		return err
	}
	if err := owned.Check(ReadmeFile, ParetoChart); err != nil {
		return err
	}
	defer func() {
		if serr := owned.Save(); err == nil {
			err = serr
		}
	}()
	pts := Points(dir, p, x)
	front := Frontier(pts)
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Sweep %s\n\n", p.Name)
	if p.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", p.Description)
	}
	fmt.Fprintf(&b, "Engine %s, model %s; status %s. Each pair's run directory has its own readme.md. The plan is in plan.json, the status of every pair and level in sweep.json.\n\n", p.Engine, p.Model, x.Status)

	b.WriteString("## Server variants\n\n")
	settings := varyingSettings(p)
	head := append([]string{"server", "GPUs"}, settings...)
	var rows [][]string
	for _, sv := range p.Servers {
		st := p.Settings(sv)
		row := []string{sv.Name, strconv.Itoa(p.GPUs(sv))}
		for _, k := range settings {
			row = append(row, show(st[k]))
		}
		rows = append(rows, row)
	}
	table(&b, head, rows)
	if len(settings) == 0 {
		b.WriteString("The server variants do not differ in any setting.\n\n")
	}
	if len(x.Dropped) > 0 {
		b.WriteString("Pairs the links left out: ")
		var ds []string
		for _, d := range x.Dropped {
			ds = append(ds, fmt.Sprintf("%s/%s (%s)", d.Server, d.Bench, d.Why))
		}
		b.WriteString(strings.Join(ds, "; ") + ".\n\n")
	}

	b.WriteString("## Pairs and levels\n\n")
	b.WriteString("Output tokens/s per GPU divide the throughput by the server's GPUs (TP × DP); tokens/s per user is 1000 / median TPOT.\n\n")
	rows = nil
	for _, pt := range pts {
		row := []string{pt.Pair, strconv.Itoa(pt.Conc), pt.Status}
		if pt.OutTokS > 0 || pt.measured() {
			row = append(row, f1(pt.OutTokS), f1(pt.PerGPU), f1(pt.PerUser), f1(pt.TTFTP50MS), f2(pt.TPOTP50MS), strconv.Itoa(pt.DecodeBS))
		} else {
			row = append(row, "", "", "", "", "", "")
		}
		if slices.ContainsFunc(front, func(f Point) bool { return f.Pair == pt.Pair && f.Conc == pt.Conc }) {
			row[0] = "**" + row[0] + "**"
		}
		rows = append(rows, row)
	}
	table(&b, []string{"pair", "conc", "status", "out tok/s", "out tok/s/GPU", "tok/s/user", "TTFT p50 ms", "TPOT p50 ms", "decode bs"}, rows)
	for _, e := range x.Pairs {
		if e.Error != "" {
			fmt.Fprintf(&b, "* %s %s: %s\n", e.Name(), e.Status, firstLine(e.Error))
		}
	}

	b.WriteString("\n## Pareto frontier\n\n")
	if len(front) == 0 {
		b.WriteString("No level completed: no frontier.\n\n")
	} else {
		svg, err := paretoChart(pts, front)
		if err != nil {
			return err
		}
		if err := owned.Write(ParetoChart, svg); err != nil {
			return err
		}
		fmt.Fprintf(&b, "![Pareto frontier](%s)\n\n", ParetoChart)
		b.WriteString("The levels no other level beats on both throughput per GPU and speed per user (bold in the table above), slowest per user first:\n\n")
		rows = nil
		for _, pt := range front {
			rows = append(rows, []string{pt.Pair, strconv.Itoa(pt.Conc), f1(pt.PerUser), f1(pt.PerGPU), strconv.Itoa(pt.DecodeBS)})
		}
		table(&b, []string{"pair", "conc", "tok/s/user", "out tok/s/GPU", "decode bs"}, rows)
	}

	if err := energySection(&b, dir, pts); err != nil {
		return err
	}
	if err := costSection(&b, dir, pts, front); err != nil {
		return err
	}

	b.WriteString("## What each server setting changes in the kernels\n\n")
	if ts := simTimeScale(dir, x); ts != 0 && ts != 1 {
		fmt.Fprintf(&b, "The simulated engine ran at time scale %g: a step takes %g times its traced GPU time on the wall clock, so the client's TPOT and the kernel times below are on different clocks (the TPOT sentences compare them as they are).\n\n", ts, 1/ts)
	}
	if err := settingDiffs(ctx, &b, dir, p, x); err != nil {
		return err
	}
	return owned.Write(ReadmeFile, b.Bytes())
}

// simTimeScale is the time scale of the simulated engine of the first
// pair that ran, 0 for a real engine.
func simTimeScale(dir string, x *Index) float64 {
	for _, e := range x.Pairs {
		if info, err := results.LoadRunInfo(results.Run(filepath.Join(dir, e.Dir)).RunInfo()); err == nil {
			if info.Engine.Kind == "sim" {
				return info.Engine.TimeScale
			}
			return 0
		}
	}
	return 0
}

// varyingSettings are the settings whose values differ between server
// variants.
func varyingSettings(p *Plan) []string {
	vals := map[string]map[string]bool{}
	for _, sv := range p.Servers {
		for k, v := range p.Settings(sv) {
			if vals[k] == nil {
				vals[k] = map[string]bool{}
			}
			vals[k][v] = true
		}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		// A key only some variants have (an env var) varies too.
		if len(vals[k]) > 1 || countHaving(p, k) != len(p.Servers) {
			out = append(out, k)
		}
	}
	return out
}

func countHaving(p *Plan, key string) int {
	n := 0
	for _, sv := range p.Servers {
		if _, ok := p.Settings(sv)[key]; ok {
			n++
		}
	}
	return n
}

// oneSetting is the one setting a and b differ in, "" when they differ in
// none or several.
func oneSetting(p *Plan, a, b Server) (key, va, vb string) {
	sa, sb := p.Settings(a), p.Settings(b)
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(mergeKeys(sa, sb))) {
		if sa[k] != sb[k] {
			diffs = append(diffs, k)
		}
	}
	if len(diffs) != 1 {
		return "", "", ""
	}
	return diffs[0], sa[diffs[0]], sb[diffs[0]]
}

func mergeKeys(ms ...map[string]string) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			out[k] = true
		}
	}
	return out
}

// settingDiffs compares, for every bench variant, each two server variants
// that differ in one setting, level by level with the diff package; the
// full comparison goes to diffs/, a summary per level to the readme.
func settingDiffs(ctx context.Context, w io.Writer, dir string, p *Plan, x *Index) error {
	pairDir := map[string]string{}
	for _, e := range x.Pairs {
		if diff.IsRun(filepath.Join(dir, e.Dir)) {
			pairDir[e.Name()] = filepath.Join(dir, e.Dir)
		}
	}
	n := 0
	for _, bv := range p.Benches {
		for i, a := range p.Servers {
			for _, bs := range p.Servers[i+1:] {
				key, va, vb := oneSetting(p, a, bs)
				da, db := pairDir[a.Name+"/"+bv.Name], pairDir[bs.Name+"/"+bv.Name]
				if key == "" || da == "" || db == "" {
					continue
				}
				n++
				rr, err := diff.CompareRuns(ctx, da, db, diff.Options{})
				if err != nil {
					fmt.Fprintf(w, "### %s: %s → %s (%s vs %s, bench %s)\n\nNot compared: %v\n\n", key, show(va), show(vb), a.Name, bs.Name, bv.Name, err)
					continue
				}
				name := fmt.Sprintf("%s-vs-%s.%s.md", a.Name, bs.Name, bv.Name)
				var full bytes.Buffer
				if err := rr.WriteMarkdown(&full, diff.MarkdownOptions{Top: 25}); err != nil {
					return err
				}
				if err := os.MkdirAll(filepath.Join(dir, DiffsDir), 0o755); err != nil {
					return err
				}
				if err := atomicfile.Write(filepath.Join(dir, DiffsDir, name), full.Bytes()); err != nil {
					return err
				}
				fmt.Fprintf(w, "### %s: %s → %s\n\n%s (A) against %s (B), bench %s; the whole comparison is in [%s/%s](%s/%s).\n\n",
					key, show(va), show(vb), a.Name, bs.Name, bv.Name, DiffsDir, name, DiffsDir, name)
				for _, lr := range rr.Levels {
					summariseLevel(w, &lr)
				}
				fmt.Fprintln(w)
			}
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "No two server variants that differ in exactly one setting both have results: nothing to compare.")
	}
	return nil
}

func show(v string) string {
	if v == "" || v == "0" || v == "[]" {
		return "(engine default)"
	}
	return v
}

// summariseLevel writes the kernel-level difference at one concurrency:
// batch, GPU time per step and per layer, the categories that moved most,
// the kernels that appear, vanish, fuse or split, and whether the kernels
// explain the TPOT change.
func summariseLevel(w io.Writer, lr *diff.LevelReport) {
	fmt.Fprintf(w, "* **conc %d**", lr.Conc)
	var bsA, bsB float64
	for _, m := range lr.Client {
		if m.Name == "decode batch size (trace)" {
			bsA, bsB = m.Pair.A, m.Pair.B
		}
	}
	if bsA > 0 || bsB > 0 {
		fmt.Fprintf(w, ", decode batch %g → %g", bsA, bsB)
	}
	k := lr.Kernels
	if k == nil {
		fmt.Fprintf(w, ": no kernel analysis on both sides. %s\n", lr.Explanation)
		return
	}
	if k.StepUS != nil {
		fmt.Fprintf(w, "; GPU time per decode step %s → %s µs (%s)", f1(k.StepUS.A), f1(k.StepUS.B), pctStr(k.StepUS))
	}
	if k.LayerUS != nil {
		fmt.Fprintf(w, ", per layer %s → %s µs (%s)", f1(k.LayerUS.A), f1(k.LayerUS.B), pctStr(k.LayerUS))
	}
	fmt.Fprintln(w, ".")
	var cats []string
	cs := slices.Clone(k.Categories)
	measure := func(c *diff.CategoryChange) *diff.Pair { return cmp.Or(c.LayerUS, c.StepUS, c.TotalUS) }
	slices.SortStableFunc(cs, func(a, b diff.CategoryChange) int {
		pa, pb := measure(&a), measure(&b)
		if pa == nil || pb == nil {
			return 0
		}
		return cmp.Compare(math.Abs(pb.Delta), math.Abs(pa.Delta))
	})
	for _, c := range cs {
		if pr := measure(&c); pr != nil && math.Abs(pr.Delta) >= 0.05 && len(cats) < 4 {
			cats = append(cats, fmt.Sprintf("%s %s µs (%s)", c.Category, signed1(pr.Delta), pctStr(pr)))
		}
	}
	if len(cats) > 0 {
		unit := "per layer"
		if cs[0].LayerUS == nil {
			unit = "per step"
		}
		fmt.Fprintf(w, "  * categories %s: %s\n", unit, strings.Join(cats, ", "))
	}
	var changes []string
	for _, c := range k.Changes {
		if len(changes) == 5 {
			changes = append(changes, fmt.Sprintf("and %d more", len(k.Changes)-5))
			break
		}
		changes = append(changes, fmt.Sprintf("%s %s → %s", c.Kind, names(c.A), names(c.B)))
	}
	if len(changes) > 0 {
		fmt.Fprintf(w, "  * kernels: %s\n", strings.Join(changes, "; "))
	} else if k.NoChange {
		fmt.Fprintln(w, "  * the same kernels, no time changed by 0.05 µs or more")
	} else {
		fmt.Fprintln(w, "  * the same kernels in the layer (none appear, vanish, fuse or split)")
	}
	fmt.Fprintf(w, "  * %s\n", lr.Explanation)
	if lr.Waterfall != nil {
		fmt.Fprintf(w, "  * why TPOT moved: %s\n", lr.Waterfall.Lead())
	}
}

func names(ns []string) string {
	if len(ns) == 0 {
		return "∅"
	}
	if len(ns) > 3 {
		return strings.Join(ns[:3], "+") + fmt.Sprintf("+%d more", len(ns)-3)
	}
	return strings.Join(ns, "+")
}

func pctStr(p *diff.Pair) string {
	if p.Pct == nil {
		return "new"
	}
	return signed1(*p.Pct) + "%"
}

func signed1(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if s == "-0.0" {
		s = "0.0"
	}
	if v > 0 && s != "0.0" {
		s = "+" + s
	}
	return s
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func table(w io.Writer, head []string, rows [][]string) {
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
	for _, r := range rows {
		for i := range r {
			r[i] = strings.ReplaceAll(r[i], "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
	fmt.Fprintln(w)
}

// palette colours the pairs, in order.
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// energySection writes "Energy" when the pairs' GPUs were sampled: the
// throughput per GPU against the output tokens per joule of every level,
// to pick the level that serves most per joule beside the one that
// serves most per second.
func energySection(b *bytes.Buffer, dir string, pts []Point) error {
	var with []Point
	for _, pt := range pts {
		if pt.measured() && pt.TokPerJ > 0 {
			with = append(with, pt)
		}
	}
	if len(with) == 0 {
		return nil
	}
	b.WriteString("## Energy\n\n")
	svg, err := scatterChart("Throughput per GPU against energy", "output tokens per joule (the server's GPUs)", perGPUAxis, with, nil,
		func(pt Point) float64 { return pt.TokPerJ }, perGPU)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, EnergyChart), svg); err != nil {
		return err
	}
	fmt.Fprintf(b, "![Throughput per GPU against tokens per joule](%s)\n\n", EnergyChart)
	best := slices.MaxFunc(with, func(a, b Point) int { return cmp.Compare(a.TokPerJ, b.TokPerJ) })
	fmt.Fprintf(b, "Most output tokens per joule: %s (%s tok/J at %s W, %s out tok/s/GPU). Each level's GPUs were sampled over its requests (its run's readme has the power, clocks and energy per layer role).\n\n",
		best.Label(), f2(best.TokPerJ), f1(best.MeanW), f1(best.PerGPU))
	return nil
}

// costSection writes "Cost" when the pairs were priced (--gpu-price): the
// frontier drawn against the cost per million output tokens, which at one
// price per GPU-hour is the throughput frontier seen from the bill.
func costSection(b *bytes.Buffer, dir string, pts, front []Point) error {
	var with []Point
	for _, pt := range pts {
		if pt.measured() && pt.CostPerMOut > 0 {
			with = append(with, pt)
		}
	}
	if len(with) == 0 {
		return nil
	}
	var priced []Point
	for _, pt := range front {
		if pt.CostPerMOut > 0 {
			priced = append(priced, pt)
		}
	}
	b.WriteString("## Cost\n\n")
	svg, err := scatterChart("Cost against speed per user", "output tokens/s per user (1000 / TPOT p50)", "US dollars per million output tokens", with, priced,
		perUser, func(pt Point) float64 { return pt.CostPerMOut })
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, CostChart), svg); err != nil {
		return err
	}
	fmt.Fprintf(b, "![Cost per million output tokens against speed per user](%s)\n\n", CostChart)
	b.WriteString("Each level's GPU-hours (the server's GPUs × the level's duration) at the pair's price per GPU-hour, over its output tokens; the dashed line joins the frontier's levels.\n\n")
	var rows [][]string
	for _, pt := range priced {
		rows = append(rows, []string{pt.Pair, strconv.Itoa(pt.Conc), f1(pt.PerUser), strconv.FormatFloat(pt.CostPerMOut, 'f', 4, 64)})
	}
	table(b, []string{"pair", "conc", "tok/s/user", "$ / M output tokens"}, rows)
	return nil
}

// paretoChart draws every measured level (a colour per pair, labelled
// pair@conc) with the frontier as a line through its points.
func paretoChart(pts, front []Point) ([]byte, error) {
	return scatterChart("Throughput per GPU against speed per user", "output tokens/s per user (1000 / TPOT p50)", perGPUAxis, pts, front,
		perUser, perGPU)
}

const perGPUAxis = "output tokens/s per GPU"

func perUser(pt Point) float64 { return pt.PerUser }
func perGPU(pt Point) float64  { return pt.PerGPU }

// scatterChart draws y against x of every measured level (a colour per
// pair, labelled pair@conc), with front as a line through its points when
// given.
func scatterChart(title, xLabel, yLabel string, pts, front []Point, x, y func(Point) float64) ([]byte, error) {
	p := &svgchart.Panel{
		Title: title,
		X:     svgchart.Axis{Label: xLabel, Min: math.Inf(1), Max: math.Inf(-1)},
		Y:     svgchart.Axis{Label: yLabel, Min: math.Inf(1), Max: math.Inf(-1)},
		// Above and right of the frontier no point lies: the legend goes there.
		Legend: true, LegendAt: svgchart.TopRight,
	}
	frontier := svgchart.Series{Name: "frontier", Colour: "#3c3c3c", Dashed: true, NoMarks: true}
	for _, pt := range front {
		frontier.Pts = append(frontier.Pts, [2]float64{x(pt), y(pt)})
	}
	if front != nil {
		p.Series = append(p.Series, frontier)
	}
	var pairs []string
	for _, pt := range pts {
		if pt.measured() && !slices.Contains(pairs, pt.Pair) {
			pairs = append(pairs, pt.Pair)
		}
	}
	var all [][2]float64
	var labels []string
	for i, name := range pairs {
		sc := svgchart.Series{Name: name, Colour: palette[i%len(palette)], NoLine: true, Radius: 4}
		for _, pt := range pts {
			if pt.Pair == name && pt.measured() {
				xy := [2]float64{x(pt), y(pt)}
				sc.Pts = append(sc.Pts, xy)
				all = append(all, xy)
				labels = append(labels, pt.Label())
			}
		}
		if i := slices.IndexFunc(pts, func(pt Point) bool { return pt.Pair == name }); i >= 0 && pts[i].oneBench {
			sc.Name = pts[i].Server
		}
		p.Series = append(p.Series, sc)
	}
	for _, xy := range append(all, frontier.Pts...) {
		p.X.Min, p.X.Max = min(p.X.Min, xy[0]), max(p.X.Max, xy[0])
		p.Y.Min, p.Y.Max = min(p.Y.Min, xy[1]), max(p.Y.Max, xy[1])
	}
	if !(p.X.Max > p.X.Min) {
		p.X.Min, p.X.Max = p.X.Min-1, p.X.Max+1
	}
	if !(p.Y.Max > p.Y.Min) {
		p.Y.Min, p.Y.Max = p.Y.Min-1, p.Y.Max+1
	}
	p.Notes = placeLabels(all, labels)
	// Room for the labels right of the rightmost points, and for the
	// markers at the low ends.
	dx, dy := p.X.Max-p.X.Min, p.Y.Max-p.Y.Min
	p.X.Min, p.X.Max = p.X.Min-dx*0.04, p.X.Max+dx*0.25
	p.Y.Min, p.Y.Max = p.Y.Min-dy*0.05, p.Y.Max+dy*0.1
	p.X.Ticks, p.Y.Ticks = svgchart.PlainTicks(p.X.Min, p.X.Max), svgchart.PlainTicks(p.Y.Min, p.Y.Max)
	return svgchart.Panels(20*svgchart.CM, 13*svgchart.CM, p), nil
}

// placeLabels puts each label beside its point: right and above it, else
// the first of right-below, left-above and left-below that overlaps no
// label placed before (sizes reckoned for a 20 × 13 cm chart).
func placeLabels(xys [][2]float64, labels []string) []svgchart.Note {
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, xy := range xys {
		xmin, xmax = min(xmin, xy[0]), max(xmax, xy[0])
		ymin, ymax = min(ymin, xy[1]), max(ymax, xy[1])
	}
	norm := func(v, lo, hi float64) float64 {
		if hi > lo {
			return (v - lo) / (hi - lo)
		}
		return 0
	}
	const plotW, plotH = 480.0, 300.0 // points of the data area, roughly
	type box struct{ x0, y0, x1, y1 float64 }
	var placed []box
	overlaps := func(b box) bool {
		for _, o := range placed {
			if b.x0 < o.x1 && o.x0 < b.x1 && b.y0 < o.y1 && o.y0 < b.y1 {
				return true
			}
		}
		return false
	}
	var notes []svgchart.Note
	for i, xy := range xys {
		x, y := norm(xy[0], xmin, xmax), norm(xy[1], ymin, ymax)
		w, h := float64(len(labels[i]))*4.6/plotW, 10/plotH
		gap, lift := 5/plotW, 3/plotH
		sides := []struct {
			left, below bool
		}{{false, false}, {false, true}, {true, false}, {true, true}}
		var b box
		side := sides[0]
		for _, sd := range sides {
			x0, y0 := x+gap, y+lift
			if sd.left {
				x0 = x - gap - w
			}
			if sd.below {
				y0 = y - lift - h
			}
			b = box{x0, y0, x0 + w, y0 + h}
			side = sd
			if !overlaps(b) {
				break
			}
		}
		placed = append(placed, b)
		notes = append(notes, svgchart.Note{X: xy[0], Y: xy[1], Text: labels[i], Size: 8, Left: side.left, Below: side.below})
	}
	return notes
}
