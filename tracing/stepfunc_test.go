package tracing

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The engine step functions, as Python frames and bare names; a generic
// name counts only in a model runner's file; the fast check on the raw
// event agrees with the full one.
func TestIsStepFunction(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		want bool
	}{
		{"vllm/v1/worker/gpu_worker.py(447): execute_model", true},
		{"vllm/v1/worker/gpu_model_runner.py(2210): execute_model", true},
		{"sglang/srt/managers/scheduler.py(1500): run_batch", true},
		{"sglang/srt/managers/tp_worker.py(230): forward_batch_generation", true},
		{"atom/model_engine/model_runner.py(3327): forward", true},
		{"atom/model_engine/model_runner.py(208): run", true},
		{"atom/model_engine/model_runner.py(900): run_model", true},
		{"atom/models/minimax_m2.py(610): forward", false},
		{"torch/nn/modules/module.py(1786): forward", false},
		{"atom/model_engine/model_runner.py(400): _run", false},
		{"execute_model", true},
		{"my/app.py(3): run_model", false},
		{"vllm/v1/worker/gpu_model_runner.py(1602): _prepare_inputs", false},
		{"torch/nn/modules/module.py(1775): _call_impl", false},
		{"ProfilerStep#3", false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, isStepFunction([]byte(tt.name)), tt.name)
		raw := []byte(`, "name": "` + tt.name + `", "pid": 1}`)
		require.Equal(t, tt.want, stepFunctionNext(raw), "fast check of %s", tt.name)
	}
	require.True(t, stepFunctionNext([]byte(`, "pid": 1, "name": "x"}`)), "another layout takes the general path")
}
