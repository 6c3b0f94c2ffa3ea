package analysis

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/profile-model/profile-model/tracing"
	"github.com/stretchr/testify/require"
)

// -facts names a trace whose facts TestLabelFacts prints, for an expert to
// label by hand (fixtures/labels/public): the kernels that cover -facts-cover
// of its kernel time, each with its share, the CPU op it ran under longest,
// the share of its time in prefill and decode steps, and the device. It
// reads the trace with the tracing package alone: no category is printed,
// so the labels are written before the tool has been run on the trace.
var (
	factsTrace = flag.String("facts", "", "print the label facts of this trace (TestLabelFacts)")
	factsCover = flag.Float64("facts-cover", 0.975, "share of the kernel time TestLabelFacts lists")
)

type kernelFacts struct {
	name                string
	ns, prefill, decode int64
	mixed               int64
	count               int
	op                  string
	opNS                int64
	byOp                map[string]int64
	replayedNS          int64
}

func TestLabelFacts(t *testing.T) {
	if *factsTrace == "" {
		t.Skip("no trace named: go test -run TestLabelFacts ./inventory/analysis -args -facts TRACE")
	}
	tr, err := tracing.Load(context.Background(), *factsTrace, tracing.Options{Ops: true})
	require.NoError(t, err)
	byName := map[int32]*kernelFacts{}
	var all int64
	for i := range tr.Kernels {
		k := &tr.Kernels[i]
		if k.Kind != tracing.KindKernel {
			continue
		}
		f := byName[k.NameID]
		if f == nil {
			f = &kernelFacts{name: tr.Names[k.NameID], byOp: map[string]int64{}}
			byName[k.NameID] = f
		}
		f.ns += k.Dur
		f.count++
		all += k.Dur
		if k.Replayed {
			f.replayedNS += k.Dur
		}
		if k.Step >= 0 && int(k.Step) < len(tr.Steps) {
			switch tr.Steps[k.Step].Kind {
			case tracing.StepPrefill:
				f.prefill += k.Dur
			case tracing.StepMixed:
				f.mixed += k.Dur
			case tracing.StepDecode:
				f.decode += k.Dur
			}
		}
		if op := tr.LaunchOp(i); op != "" {
			f.byOp[op] += max(k.Dur, 1)
		}
	}
	rows := make([]*kernelFacts, 0, len(byName))
	for _, f := range byName {
		for op, ns := range f.byOp {
			if ns > f.opNS || (ns == f.opNS && op < f.op) {
				f.op, f.opNS = op, ns
			}
		}
		rows = append(rows, f)
	}
	slices.SortFunc(rows, func(a, b *kernelFacts) int { return cmp.Or(cmp.Compare(b.ns, a.ns), cmp.Compare(a.name, b.name)) })
	steps := map[tracing.StepKind]int{}
	for _, s := range tr.Steps {
		steps[s.Kind]++
	}
	var out strings.Builder
	fmt.Fprintf(&out, "# device: %s\n# vendor: %s\n# kernel time: %.1f µs in %d distinct kernels; steps: %v\n",
		tr.Device, tr.Vendor, float64(all)/1e3, len(rows), steps)
	fmt.Fprintln(&out, "kernel,pct,launch_op,prefill_pct,decode_pct,mixed_pct,count,replayed_pct")
	var cum int64
	for _, f := range rows {
		if all > 0 && float64(cum) >= *factsCover*float64(all) {
			break
		}
		cum += f.ns
		fmt.Fprintf(&out, "%q,%.2f,%q,%.0f,%.0f,%.0f,%d,%.0f\n", labelKey(f.name), 100*float64(f.ns)/float64(all), f.op,
			100*float64(f.prefill)/float64(f.ns), 100*float64(f.decode)/float64(f.ns), 100*float64(f.mixed)/float64(f.ns), f.count, 100*float64(f.replayedNS)/float64(f.ns))
		if labelKey(f.name) != f.name {
			// The whole name, for the expert to read; not a row.
			fmt.Fprintf(&out, "#   full: %.600s\n", f.name)
		}
	}
	fmt.Fprintf(&out, "# listed: %.2f%% of the kernel time\n", 100*float64(cum)/float64(all))
	_, err = os.Stdout.WriteString(out.String())
	require.NoError(t, err)
}
