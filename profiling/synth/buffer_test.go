package synth

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/profiling/kernelmodel"
	"github.com/profile-model/profile-model/tracing"
	"github.com/profile-model/profile-model/tracing/kineto"
)

// TestBufferDropsOldestGPUEvents: a bounded buffer keeps the GPU events of
// the latest steps that fit and drops the older ones, keeping every step's
// CPU side; the trace then reads back with a coverage warning.
func TestBufferDropsOldestGPUEvents(t *testing.T) {
	t.Parallel()
	m := kernelmodel.Default()
	m.Layers = 4
	rng := rand.New(rand.NewPCG(1, 2))
	perStep := int64(len(m.DecodeStep(8, 0, rng)) + 1)
	const keep, steps = 10, 40
	rec := NewRecorder(RecorderOptions{PythonPerStep: -1, BufferBytes: keep * perStep * gpuRecordBytes})
	at := defaultStart.UnixNano()
	rec.Start(at)
	prefill := m.PrefillStep(8, 800, rng)
	rec.Record(Step{Kind: tracing.StepPrefill, BS: 8, Tokens: 800, Start: at + int64(time.Millisecond), Kernels: prefill})
	for i := range steps {
		rec.Record(Step{Kind: tracing.StepDecode, BS: 8, Tokens: 8, Start: at + int64(i+2)*int64(20*time.Millisecond), Kernels: m.DecodeStep(8, 0, rng)})
	}
	rec.Stop(at + int64(steps+3)*int64(20*time.Millisecond))
	dropped, recs := rec.Dropped()
	require.Equal(t, steps+1-keep, dropped, "the prefill and the oldest decodes lose their GPU events")
	require.Equal(t, int64(len(prefill)+1)+int64(dropped-1)*perStep, recs, "a kernel and a GPU annotation per step")

	var buf bytes.Buffer
	truth, err := rec.WriteTrace(context.Background(), &buf, kineto.WriterOptions{})
	require.NoError(t, err)
	require.Equal(t, dropped, truth.StepsWithoutKernels)
	require.Equal(t, keep, truth.Steps[string(tracing.StepDecode)]-truth.DecodeStepsWithoutKernels)

	tr, err := tracing.Read(context.Background(), &buf, "buffer", tracing.Options{})
	require.NoError(t, err)
	require.Len(t, tr.Steps, steps+1, "every step keeps its CPU annotation")
	withKernels := 0
	for _, st := range tr.Steps {
		if len(st.Kernels) > 0 {
			withKernels++
			require.Equal(t, tracing.StepDecode, st.Kind)
		}
	}
	require.Equal(t, keep, withKernels)
	var codes []diag.Code
	for _, w := range tr.Warnings {
		codes = append(codes, w.Code)
	}
	require.Contains(t, codes, diag.Coverage)
}

// TestBufferUnboundedByDefault: without BufferBytes nothing is dropped.
func TestBufferUnboundedByDefault(t *testing.T) {
	t.Parallel()
	m := kernelmodel.Default()
	m.Layers = 2
	rng := rand.New(rand.NewPCG(3, 4))
	rec := NewRecorder(RecorderOptions{PythonPerStep: -1})
	at := defaultStart.UnixNano()
	for i := range 20 {
		rec.Record(Step{Kind: tracing.StepDecode, BS: 4, Tokens: 4, Start: at + int64(i)*int64(10*time.Millisecond), Kernels: m.DecodeStep(4, 0, rng)})
	}
	steps, recs := rec.Dropped()
	require.Zero(t, steps)
	require.Zero(t, recs)
}
