package analysis

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/tracing"
)

// WriteSummaryText writes an inspect summary for people.
func WriteSummaryText(w io.Writer, s tracing.Summary) error {
	dev := s.Device
	if dev == "" {
		dev = "(not given)"
	}
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("trace        %s\n", s.Path)
	p("device       %s\n", dev)
	p("format       %s\n", s.Era)
	switch s.TraceKind {
	case tracing.KindCapture:
		p("trace kind   graph capture: kernels recorded into graphs, not run (no steps, layers or timings of serving)\n")
	case tracing.KindGPUOnly:
		p("trace kind   GPU only: no CPU ops or annotations (inventory and categories only; no steps or layers)\n")
	}
	p("events       %d\n", s.Events)
	cats := slices.Collect(maps.Keys(s.EventsByCategory))
	slices.SortFunc(cats, func(a, b string) int {
		return cmp.Or(cmp.Compare(s.EventsByCategory[b], s.EventsByCategory[a]), cmp.Compare(a, b))
	})
	for _, c := range cats {
		name := c
		if name == "" {
			name = "(no cat)"
		}
		p("  %-22s %d\n", name, s.EventsByCategory[c])
	}
	p("kernels      %d (%d distinct), %s µs in total\n", s.Kernels, s.DistinctKernels, s.KernelTime)
	p("copies       %d memcpy, %d memset\n", s.Memcpys, s.Memsets)
	p("graphs       %d graph launches replaying %d kernels\n", s.GraphLaunches, s.KernelsReplayed)
	kinds := slices.Sorted(maps.Keys(s.Steps))
	p("steps        ")
	if len(kinds) == 0 {
		p("none found")
	}
	for i, k := range kinds {
		if i > 0 {
			p(", ")
		}
		p("%d %s", s.Steps[k], k)
	}
	for i, src := range slices.Sorted(maps.Keys(s.StepSources)) {
		if i == 0 {
			p(" (from ")
		} else {
			p(", ")
		}
		if len(s.StepSources) > 1 {
			p("%d ", s.StepSources[src])
		}
		p("%s", src)
		if i == len(s.StepSources)-1 {
			p(")")
		}
	}
	p("\n")
	if s.DecodeBS > 0 {
		bss := slices.Collect(maps.Keys(s.DecodeBSHist))
		slices.SortFunc(bss, func(a, b string) int {
			x, _ := strconv.Atoi(a)
			y, _ := strconv.Atoi(b)
			return cmp.Compare(x, y)
		})
		p("decode bs    %d (histogram:", s.DecodeBS)
		for _, b := range bss {
			p(" %s×%d", b, s.DecodeBSHist[b])
		}
		if n := s.Steps[string(tracing.StepMixed)]; n > 0 {
			p("; %d mixed prefill+decode steps not counted", n)
		}
		p(")\n")
	}
	if s.PaddedSteps > 0 {
		p("padding      %d decode steps replayed a larger graph: %.1f%% of graph rows were padding\n", s.PaddedSteps, s.PaddingPct)
	}
	if s.SpecSteps > 0 || s.Steps[string(tracing.StepDraft)] > 0 {
		p("speculative  %d decode steps verified draft tokens, %d draft steps\n", s.SpecSteps, s.Steps[string(tracing.StepDraft)])
	}
	// The GPU runs behind the CPU, so its span can be longer than the
	// window: what it covers is at most the window (at most 100%).
	c := s.Coverage
	covered := min(c.GPUSpanS, c.WindowS)
	pct := ""
	if c.WindowS > 0 {
		pct = fmt.Sprintf(" (%.0f%%)", 100*covered/c.WindowS)
	}
	p("coverage     GPU kernels cover %.3f s of a %.3f s profile window%s; %d of %d steps without kernels\n",
		covered, c.WindowS, pct, c.StepsWithoutKernels, c.Steps)
	if out := c.BeforeWindowS + c.AfterWindowS; out > 0 {
		// The share above compares spans; GPU time outside the window is
		// not in it, and a reader of "100%" must know.
		p("             %.3f s of the GPU span lies outside the window (%.3f s before its first step, %.3f s after its last): the GPU runs behind the CPU, or kernels ran outside the profiled steps\n",
			out, c.BeforeWindowS, c.AfterWindowS)
	}
	for _, wmsg := range s.Warnings {
		p("warning: %s\n", wmsg.Message)
	}
	return nil
}

// WriteLayersText writes a per-layer table for people: the structure
// found, the positions, irregular layers grouped by how they differ, and the
// warnings.
func WriteLayersText(w io.Writer, lt *inventory.LayerTable) {
	switch lt.Mode {
	case inventory.ModeCompat:
		fmt.Fprintf(w, "compat mode (anchor %q): %d layers of %v kernels over %d decode steps\n", lt.Anchor, lt.Layers, lt.KernelsPerLayer, lt.Steps)
	default:
		fmt.Fprintf(w, "%s steps: %d, %d layers per step, kernels per layer %v (robust mode)\n", strings.ReplaceAll(lt.StepKind, "_", " "), lt.Steps, lt.Layers, lt.KernelsPerLayer)
	}
	if len(lt.Positions) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		multi := len(lt.KernelsPerLayer) > 1
		head := "pos\t"
		if multi {
			head += "kind\t"
		}
		capture := lt.HasCapture()
		labels := lt.Labels()
		nameW, catW, modW := len("position"), len("category"), len("module")
		for i, p := range lt.Positions {
			nameW, catW, modW = max(nameW, len(labels[i])), max(catW, len(p.Category)), max(modW, len(p.Module))
		}
		if capture {
			fmt.Fprintln(tw, head+fmt.Sprintf("avg_us\tstd_us\tmin_us\tmax_us\tpct\tcount\t  %-*s  %-*s  %-*s  %s", nameW, "position", catW, "category", modW, "module", "input_dims"))
		} else {
			fmt.Fprintln(tw, head+fmt.Sprintf("avg_us\tstd_us\tmin_us\tmax_us\tpct\tcount\t  %-*s  %s", nameW, "position", "category"))
		}
		total := map[int]float64{}
		for i, p := range lt.Positions {
			row := fmt.Sprintf("%d\t", p.Pos)
			if multi {
				row += fmt.Sprintf("%d\t", p.LayerKind)
			}
			// The position's role and kernel, its category, then (with a
			// capture trace) where the kernel comes from.
			name := fmt.Sprintf("%-*s  %s", nameW, labels[i], p.Category)
			if capture {
				name = fmt.Sprintf("%-*s  %-*s  %-*s  %s", nameW, labels[i], catW, p.Category, modW, cmp.Or(p.Module, "-"), cmp.Or(p.InputDims, "-"))
			}
			fmt.Fprintf(tw, "%s%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t  %s\n", row, p.AvgUS, p.StdUS, p.MinUS, p.MaxUS, p.Pct, p.Count, strings.TrimRight(name, " "))
			total[p.LayerKind] += p.AvgUS
		}
		tw.Flush()
		for kind := range lt.KernelsPerLayer {
			fmt.Fprintf(w, "layer kind %d: %d kernels, %.1f µs per layer", kind, lt.KernelsPerLayer[kind], total[kind])
			if kind < len(lt.KindNames) && kind < len(lt.KindLayers) {
				fmt.Fprintf(w, " (%s, %d layers per step)", cmp.Or(lt.KindNames[kind], "unnamed"), lt.KindLayers[kind])
			}
			if kind < len(lt.WallUS) {
				// Streams overlap: the positions sum past the GPU time.
				fmt.Fprintf(w, ", %.1f µs on the GPU (overlapping streams counted once)", lt.WallUS[kind])
			}
			fmt.Fprintln(w)
		}
	}
	if len(lt.Prologue)+len(lt.Epilogue) > 0 {
		fmt.Fprintf(w, "prologue: %d kernels, epilogue: %d kernels (first step)\n", len(lt.Prologue), len(lt.Epilogue))
	}
	if n := len(lt.Irregular); n > 0 {
		fmt.Fprintf(w, "irregular layers: %d\n", n)
		// Layers that differ the same way are listed once.
		type group struct {
			what   string
			kind   int
			diffs  []string
			layers []string
		}
		var groups []*group
		byWhat := map[string]*group{}
		for _, irr := range lt.Irregular {
			var ds []string
			for _, d := range irr.Diffs {
				switch d.Op {
				case "extra":
					ds = append(ds, fmt.Sprintf("extra %s (stream %d) before pos %d", d.Kernel, d.Stream, d.Pos))
				case "missing":
					ds = append(ds, fmt.Sprintf("missing pos %d %s", d.Pos, d.Want))
				default:
					if d.WantFull != "" {
						ds = append(ds, fmt.Sprintf("pos %d runs another instance of %s (other template arguments; full names in --json)", d.Pos, d.Want))
						break
					}
					ds = append(ds, fmt.Sprintf("pos %d runs %s instead of %s", d.Pos, d.Kernel, d.Want))
				}
			}
			what := fmt.Sprintf("kind %d: %s", irr.Kind, strings.Join(ds, "; "))
			g := byWhat[what]
			if g == nil {
				g = &group{what: what, kind: irr.Kind, diffs: ds}
				byWhat[what] = g
				groups = append(groups, g)
			}
			g.layers = append(g.layers, fmt.Sprintf("step %d layer %d", irr.Step, irr.Layer))
		}
		for i, g := range groups {
			if i == 20 {
				fmt.Fprintf(w, "  ... and %d more kinds of difference (see --json)\n", len(groups)-i)
				break
			}
			where := strings.Join(g.layers, ", ")
			if len(g.layers) > 3 {
				where = fmt.Sprintf("%s, ... (%d layers)", strings.Join(g.layers[:3], ", "), len(g.layers))
			}
			fmt.Fprintln(w, capDiffs(fmt.Sprintf("  %s: kind %d: ", where, g.kind), g.diffs))
		}
	}
	for _, warn := range lt.Warnings {
		fmt.Fprintf(w, "warning: %s\n", capText(warn.Message))
	}
}

// maxLine is how long a line of text output may grow (a wide terminal's
// two rows) before what it lists is cut, saying how much was left out.
const maxLine = 400

// capDiffs is prefix followed by the differences, "; "-separated, as many
// as fit in maxLine, then how many more there are (--json lists them all).
func capDiffs(prefix string, diffs []string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for i, d := range diffs {
		sep := ""
		if i > 0 {
			sep = "; "
		}
		if i > 0 && b.Len()+len(sep)+len(d) > maxLine-50 { // room for the count
			fmt.Fprintf(&b, "; ... and %d more differences (--json lists them)", len(diffs)-i)
			break
		}
		b.WriteString(sep + d)
	}
	return b.String()
}

// capText cuts a message longer than maxLine, saying so.
func capText(s string) string {
	if len(s) <= maxLine {
		return s
	}
	cut := maxLine
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("... (%d more bytes; --json has the whole message)", len(s)-cut)
}

// WriteKernelsText writes the head of a kernel inventory for people: the
// top kernels by total time (top < 0: all of them) and the category totals.
// more names the file that holds the rest.
func WriteKernelsText(w io.Writer, path string, inv *inventory.Inventory, top int, more string) {
	// One definition for the count and the time: GPU kernels, without
	// copies and memsets (listed in the table, said apart here).
	kernels, copies := 0, 0
	for i := range inv.Kernels.Len() {
		if inv.Kernels.Kind(i) == tracing.KindKernel.String() {
			kernels++
		} else {
			copies++
		}
	}
	copyNote := "no memcpy/memset in the trace"
	if copies > 0 {
		copyNote = fmt.Sprintf("memcpy/memset not included: %d distinct, %s µs", copies, inv.GPUTime-inv.KernelTime)
	}
	fmt.Fprintf(w, "%s: %d distinct kernels, %s µs kernel time (%s), %.2f%% in %s (rules: %s)\n",
		path, kernels, inv.KernelTime, copyNote, inv.OtherPct, inventory.Other, inv.Rules)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "total_us\tpct\tcount\tavg_us\tcategory\tby\tprovider\tshort_name")
	for i, r := range inv.Kernels.All() {
		if i == top {
			break
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%d\t%.1f\t%s\t%s\t%s\t%s\n", r.Total, r.Pct, r.Count, r.AvgUS, r.Category, r.Source, r.Provider, r.ShortName)
	}
	tw.Flush()
	if n := inv.Kernels.Len() - top; n > 0 && top >= 0 {
		fmt.Fprintf(w, "... and %d more in %s\n", n, more)
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "category\ttotal_us\tpct\tper_decode_step_us\tper_layer_us\tproviders")
	for _, c := range inv.ByCategory {
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.1f\t%.1f\t%s\n", c.Category, c.Total, c.Pct, c.DecodeStepUS, c.LayerUS, c.Providers)
	}
	tw.Flush()
	fmt.Fprintf(w, "\ncategorised by:")
	for _, s := range []inventory.Source{inventory.SourceRule, inventory.SourceLaunchOp, inventory.SourceName, inventory.SourcePosition, inventory.SourceNone} {
		if d, ok := inv.BySource[s]; ok {
			pct := 0.0
			if inv.KernelTime > 0 {
				pct = 100 * float64(d) / float64(inv.KernelTime)
			}
			fmt.Fprintf(w, " %s %.2f%%", s, pct)
		}
	}
	fmt.Fprintln(w, " (of kernel time)")
	if len(inv.Uncategorised) > 0 {
		fmt.Fprintln(w, "largest uncategorised kernels (write a rule for them with --rules):")
		for _, r := range inv.Uncategorised {
			fmt.Fprintf(w, "  %s µs %.2f%% %s\n", r.Total, r.Pct, r.ShortName)
		}
	}
}
