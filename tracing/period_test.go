package tracing_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
)

// Piecewise graphs with no annotation and no Python frames: the steps come
// from the period of the launch sequence, kernel for kernel the steps the
// engine's step function (vLLM's execute_model in the Python frames of the
// same run) gives, prefills in the middle included. Where the GPU idles as
// long between graph pieces as between steps, the gaps alone give other
// steps; where it does not, the gaps agree.
func TestStepsFromLaunchPeriod(t *testing.T) {
	t.Parallel()
	type tc struct {
		layers, decode, prefill int
		tp, equal               bool
	}
	var cases []tc
	for _, layers := range []int{4, 16} {
		for _, tp := range []bool{false, true} {
			for _, equal := range []bool{false, true} {
				cases = append(cases, tc{layers, 12, 3, tp, equal})
			}
		}
	}
	cases = append(cases,
		tc{62, 12, 3, false, false}, tc{62, 12, 3, true, true},
		// More launches than the period and its rotation are sought in
		// (2×8192): chosen on the first part, they hold for the rest.
		tc{2, 2200, 30, false, true})
	for _, c := range cases {
		t.Run(fmt.Sprintf("layers=%d decode=%d tp=%v equal-gaps=%v", c.layers, c.decode, c.tp, c.equal), func(t *testing.T) {
			t.Parallel()
			opts := synth.GenerateOptions{
				Layers: c.layers, DecodeSteps: c.decode, PrefillSteps: c.prefill, BS: 8, Seed: uint64(c.layers),
				Piecewise: true, PiecewiseEqualGaps: c.equal, TPAllReduce: c.tp, PythonPerStep: 3, // the step function and two frames inside
			}
			framedPath, truth := writeSynth(t, "framed.json", opts)
			opts.PythonPerStep = -1
			barePath, _ := writeSynth(t, "bare.json", opts)
			framed, err := tracing.Load(context.Background(), framedPath, tracing.Options{})
			require.NoError(t, err)
			bare, err := tracing.Load(context.Background(), barePath, tracing.Options{})
			require.NoError(t, err)
			require.Equal(t, truth.Steps, stepsByKind(framed))
			require.Equal(t, truth.Steps, stepsByKind(bare))
			require.Equal(t, map[string]int{tracing.SourceLaunchPeriod: len(bare.Steps)}, bare.Summarize().StepSources)
			want := stepKernels(framed)
			require.Equal(t, want, stepKernels(bare), "the same steps, kernel for kernel, as the step function's")

			if c.decode > 100 {
				return // the gaps were tried on the short traces
			}
			if !tracing.StepsByGaps(bare) {
				require.True(t, c.equal, "gaps find the steps when the GPU idles longer between steps")
				return
			}
			if c.equal {
				require.NotEqual(t, want, stepKernels(bare), "gaps alone cannot tell the steps apart")
			} else {
				require.Equal(t, want, stepKernels(bare), "gaps agree where they can decide")
			}
		})
	}
}

// stepKernels names each step by its kind and its kernels' starts and names.
func stepKernels(tr *tracing.Trace) []string {
	var out []string
	for _, st := range tr.Steps {
		var b strings.Builder
		b.WriteString(string(st.Kind))
		for _, k := range st.Kernels {
			kr := &tr.Kernels[k]
			fmt.Fprintf(&b, " %d:%s", kr.Start, tr.NameOf(kr))
		}
		out = append(out, b.String())
	}
	return out
}
