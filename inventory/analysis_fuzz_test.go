package inventory_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
)

// FuzzAnalysis: on any trace the reader accepts, the layer tables (both
// modes, decode and prefill) and the inventory never panic; the inventory
// counts every kernel once under its name; the decode-step kernel list
// equals a plain map-and-sort one; and no result depends on how the names
// are numbered (the analyses compare name indices, never order them).
func FuzzAnalysis(f *testing.F) {
	// Small seeds (tens of KB): the fuzzer minimises every new input it
	// finds, which takes minutes on inputs of hundreds of KB.
	for _, o := range []synth.GenerateOptions{
		{Layers: 2, DecodeSteps: 2, BS: 1, Seed: 1, PythonPerStep: -1},
		{Layers: 2, DecodeSteps: 2, BS: 2, Seed: 2, PythonPerStep: -1, Alternate: true, TwoStreams: true},
	} {
		var buf bytes.Buffer
		if _, err := synth.Generate(context.Background(), &buf, o); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add([]byte(`{"traceEvents": [
	 {"ph": "X", "cat": "user_annotation", "name": "decode[bs=2 tok=2]", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
	 {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"stream": 7}},
	 {"ph": "X", "cat": "kernel", "name": "pa_bf16", "pid": 0, "tid": 7, "ts": 4, "dur": 2, "args": {"stream": 7}},
	 {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 8, "ts": 5, "dur": 2, "args": {"stream": 8}},
	 {"ph": "X", "cat": "gpu_memcpy", "name": "a", "pid": 0, "tid": 7, "ts": 8, "dur": 1, "args": {"stream": 7}},
	 {"ph": "X", "cat": "kernel", "name": "pa_bf16", "pid": 0, "tid": 7, "ts": 10, "dur": 2, "args": {"stream": 7}}]}`))
	// Two decode steps of three layers (a, pa, b), a side-stream kernel in
	// one, an irregular layer in the other, and a prefill step.
	var b strings.Builder
	b.WriteString(`{"traceEvents": [`)
	ts := 0
	ev := func(cat, name string, stream, dur int) {
		fmt.Fprintf(&b, `{"ph": "X", "cat": %q, "name": %q, "pid": 0, "tid": %d, "ts": %d, "dur": %d, "args": {"stream": %d}},`, cat, name, stream, ts, dur, stream)
		ts += dur + 1
	}
	for step, label := range []string{"prefill[bs=1 tok=9]", "decode[bs=2 tok=2]", "decode[bs=2 tok=2]"} {
		start := ts
		fmt.Fprintf(&b, `{"ph": "X", "cat": "user_annotation", "name": %q, "pid": 1, "tid": 1, "ts": %d, "dur": 60},`, label, start)
		for l := range 3 {
			ev("kernel", "a", 7, 2)
			if step == 0 {
				ev("kernel", "fmha_fwd", 7, 3)
			} else if step == 2 && l == 1 {
				ev("kernel", "odd", 7, 2)
			} else {
				ev("kernel", "pa_bf16", 7, 2)
			}
			if step == 1 && l == 0 {
				ev("kernel", "side", 8, 1)
			}
			ev("kernel", "b", 7, 2)
		}
		ts = start + 61
	}
	b.WriteString(`{"ph": "i", "s": "g", "name": "end", "pid": 1, "tid": 1, "ts": 999}]}`)
	f.Add([]byte(b.String()))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		tr, err := tracing.Read(ctx, bytes.NewReader(data), "fuzz", tracing.Options{Ops: true})
		if err != nil {
			return
		}
		for i := range tr.Kernels {
			require.Less(t, int(tr.Kernels[i].NameID), len(tr.Names))
		}
		analyse := func(tr *tracing.Trace) []any {
			cl := inventory.NewClassifier(tr, nil)
			opt := inventory.LayerOptions{Mode: inventory.ModeRobust, Classes: cl}
			decode, err := inventory.DecodeLayers(ctx, tr, opt)
			require.NoError(t, err)
			prefill, err := inventory.PrefillLayers(ctx, tr, opt)
			require.NoError(t, err)
			cl.Learn(decode, prefill)
			inv, err := inventory.BuildInventory(ctx, tr, cl, decode)
			require.NoError(t, err)
			opt.Mode = inventory.ModeCompat
			compat, cerr := inventory.DecodeLayers(ctx, tr, opt)
			if cerr != nil {
				return []any{decode, prefill, inv, cerr.Error()}
			}
			return []any{decode, prefill, inv, compat}
		}
		got := analyse(tr)

		// Every kernel once, under its name.
		inv := got[2].(*inventory.Inventory)
		want := map[string]int{}
		for i := range tr.Kernels {
			want[tr.KernelName(i)]++
		}
		counted := map[string]int{}
		for _, r := range inv.Kernels.All() {
			counted[r.Kernel] += r.Count
		}
		require.Equal(t, want, counted)

		// The decode-step kernels against a plain reference.
		var ref []int32
		seen := map[int32]bool{}
		for _, st := range tr.Steps {
			if st.Kind != tracing.StepDecode {
				continue
			}
			for _, k := range st.Kernels {
				if !seen[k] && tr.Kernels[k].Kind == tracing.KindKernel {
					seen[k] = true
					ref = append(ref, k)
				}
			}
		}
		slices.Sort(ref)
		ks, _ := inventory.StepKernels(tr, []tracing.StepKind{tracing.StepDecode})
		require.Equal(t, len(ref), len(ks))
		if len(ref) > 0 {
			require.Equal(t, ref, ks)
		}

		// The same trace with its names numbered backwards.
		re := *tr
		n := len(tr.Names)
		re.Names = make([]string, n)
		for i, name := range tr.Names {
			re.Names[n-1-i] = name
		}
		re.Kernels = slices.Clone(tr.Kernels)
		for i := range re.Kernels {
			re.Kernels[i].NameID = int32(n-1) - re.Kernels[i].NameID
		}
		if again := analyse(&re); !gocmp.Equal(got, again) { // KernelList.Equal compares rows, not name indices
			t.Fatalf("the analysis depends on the numbering of names (-as read +renumbered):\n%s", gocmp.Diff(got, again))
		}
	})
}
