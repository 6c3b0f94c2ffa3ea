//go:build gpu

package profiling

import (
	"testing"

	"github.com/profile-model/profile-model/profiling/engine"
)

// gpuTag: this build runs the sweeps of real engines too.
const gpuTag = true

// TestGPUSweeps runs every sweep declared on a real engine (ATOM, vLLM,
// SGLang) through Run and checks each level against its goldens. A sweep
// this machine cannot run skips, naming what is missing (engine
// executable, GPU, model weights), or fails when PROFILE_MODEL_REQUIRE_GPU=1.
// The engines' executables may be given by PROFILE_MODEL_ATOM_EXE,
// PROFILE_MODEL_VLLM_EXE and PROFILE_MODEL_SGLANG_EXE.
func TestGPUSweeps(t *testing.T) {
	for _, s := range loadSweeps(t, *sweepsDir) {
		if s.Kind() == engine.Sim {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			o := sweepOptions(t, s, nil)
			realSweepReady(t, s, o)
			res := runSweep(t, s, o)
			checkDevice(t, s, res)
			checkGoldens(t, s, res)
		})
	}
}

// checkDevice skips a real sweep whose trace names another GPU than the
// one its goldens were recorded on.
func checkDevice(t testing.TB, s *Sweep, res *Result) {
	t.Helper()
	for _, li := range res.Info.Levels {
		if s.GPU != "" && li.Device != s.GPU {
			skipGPU(t, "sweep %s: its goldens were recorded on %s; this runner's trace names %q", s.Name, s.GPU, li.Device)
		}
	}
}
