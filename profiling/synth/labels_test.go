package synth_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/kernelmodel"
	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
	"github.com/profile-model/profile-model/tracing/kineto"
)

// TestLabelsReadBack: the recorder writes labels as ATOM's run_labels.py
// does (current) or as early-2026 releases did (legacy); either way the
// trace reads back the same kinds and batches, mixed steps stay out of the
// decode batch size, and padding is reported as a share of graph rows.
func TestLabelsReadBack(t *testing.T) {
	t.Parallel()
	m := kernelmodel.Default()
	m.Layers = 2
	rng := rand.New(rand.NewPCG(1, 2))
	steps := []synth.Step{
		{Kind: tracing.StepPrefill, BS: 2, Tokens: 2000, ContextTokens: 2000, Contexts: []int{1000, 1000}},
		{Kind: tracing.StepDecode, BS: 2, Tokens: 2, ContextTokens: 2002},
		{Kind: tracing.StepMixed, BS: 3, PrefillSeqs: 1, Tokens: 1002, ContextTokens: 3004},
		{Kind: tracing.StepDecode, BS: 3, PaddedBS: 4, Tokens: 3, ContextTokens: 3006},
		{Kind: tracing.StepDecode, BS: 3, PaddedBS: 4, Tokens: 3, ContextTokens: 3009},
		{Kind: tracing.StepDecode, BS: 6, EagerOverflow: true, Tokens: 6, ContextTokens: 6000},
	}
	wantLabels := map[bool][]string{
		false: {
			"prefill[bs=2 tok=2000 ctx=[1000, 1000]]",
			"decode[bs=2 tok=2 d=2]",
			"decode[bs=3 tok=1002 p=1 d=2]",
			"decode[bs=3/4 tok=3 d=3]",
			"decode[bs=3/4 tok=3 d=3]",
			"eager_decode[bs=6 tok=6 ctx=[1000, 1000, 1000]...+3]",
		},
		true: {
			"prefill[bs=2 tok=2000 p=2 d=0]",
			"decode[bs=2 tok=2 p=0 d=2]",
			"decode[bs=3 tok=1002 p=1 d=2]",
			"decode[bs=3/4 tok=3 p=0 d=3]",
			"decode[bs=3/4 tok=3 p=0 d=3]",
			"eager_decode[bs=6 tok=6 p=0 d=6]",
		},
	}
	for _, legacy := range []bool{false, true} {
		rec := synth.NewRecorder(synth.RecorderOptions{Model: "m", PythonPerStep: -1, LegacyLabels: legacy})
		at := int64(1_700_000_000_000_000_000)
		rec.Start(at)
		for _, s := range steps {
			at += 1_000_000
			s.Start = at
			if s.Kind == tracing.StepDecode {
				s.Kernels = m.DecodeStep(max(s.BS, s.PaddedBS), s.ContextTokens, rng)
			} else {
				s.Kernels = m.PrefillStep(s.BS, s.Tokens, rng)
			}
			rec.Record(s)
			at += int64(kernelmodel.StepTime(s.Kernels))
		}
		rec.Stop(at + 1_000_000)
		var buf bytes.Buffer
		_, err := rec.WriteTrace(context.Background(), &buf, kineto.WriterOptions{})
		require.NoError(t, err)
		tr, err := tracing.Read(context.Background(), &buf, "labels", tracing.Options{})
		require.NoError(t, err)
		var labels []string
		var kinds []tracing.StepKind
		for _, st := range tr.Steps {
			labels = append(labels, st.Label)
			kinds = append(kinds, st.Kind)
		}
		if d := cmp.Diff(wantLabels[legacy], labels); d != "" {
			t.Fatalf("legacy=%v labels -want +got\n%s", legacy, d)
		}
		require.Equal(t, []tracing.StepKind{tracing.StepPrefill, tracing.StepDecode, tracing.StepMixed,
			tracing.StepDecode, tracing.StepDecode, tracing.StepDecode}, kinds)
		sum := tr.Summarize()
		require.Equal(t, 1, sum.Steps["mixed"])
		require.Equal(t, map[string]int{"2": 1, "3": 2, "6": 1}, sum.DecodeBSHist, "the mixed step's batch is not a decode batch")
		require.Equal(t, 2, sum.PaddedSteps)
		// Graph decode rows: 2 + 4 + 4 = 10, of which 2 were padding.
		require.InDelta(t, 20.0, sum.PaddingPct, 1e-9)
	}
}
