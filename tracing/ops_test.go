package tracing_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/tracing"
)

// With Options.Ops the loader names the CPU op that launched each eager
// kernel (through its External id); without it no op is kept.
func TestLaunchOps(t *testing.T) {
	t.Parallel()
	path := corpus.Path(t, "traces/minitoy-train-mi250-rocm62.json.gz")
	tr, err := tracing.Load(context.Background(), path, tracing.Options{Ops: true})
	require.NoError(t, err)
	gemm := 0
	for i, k := range tr.Kernels {
		if k.Kind != tracing.KindKernel {
			continue
		}
		op := tr.LaunchOp(i)
		require.NotEmpty(t, op, "kernel %d %s has a launching op", i, tr.NameOf(&k))
		if strings.HasPrefix(tr.NameOf(&k), "Cijk_") {
			gemm++
			// The innermost op: addmm forward, mm inside AddmmBackward0.
			require.Contains(t, []string{"aten::addmm", "aten::mm"}, op, "a Tensile GEMM of a linear layer")
		}
	}
	require.Positive(t, gemm)
	without, err := tracing.Load(context.Background(), path, tracing.Options{})
	require.NoError(t, err)
	require.Empty(t, without.OpNames())
	for i := range without.Kernels {
		require.Equal(t, int32(-1), without.LaunchOpID(i))
	}
	require.Equal(t, tr.Kernels, without.Kernels, "ops change nothing else")
	require.Equal(t, tr.Steps, without.Steps)
}
