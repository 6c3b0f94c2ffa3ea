package report

import (
	"strings"
	"testing"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory/analysis"
)

// lvl is one level of a made-up run: concurrency, decode batch size in the
// trace, output tok/s, req/s, median TTFT and TPOT (ms).
type lvl struct {
	conc, bs         int
	tokS, reqS       float64
	ttft, tpot       float64
	steps, noKernels int
}

func testView(info results.RunInfo, ls ...lvl) *view {
	r := &run{info: &info}
	for _, l := range ls {
		f := &analysis.LevelFile{SchemaVersion: 1}
		f.Summary.DecodeBS = l.bs
		f.Summary.Coverage.DecodeSteps, f.Summary.Coverage.DecodeWithout = l.steps, l.noKernels
		r.levels = append(r.levels, &level{Conc: l.conc, HaveRow: true, File: f,
			Row: results.SummaryRow{Conc: l.conc, DecodeBS: l.bs, Completed: 10, OutTokS: l.tokS, ReqS: l.reqS, TTFTP50MS: l.ttft, TPOTP50MS: l.tpot}})
	}
	return newView(r)
}

func engine(maxSeqs int, env ...string) results.RunInfo {
	return results.RunInfo{Engine: results.EngineInfo{Kind: "atom", MaxNumSeqs: maxSeqs, Env: env}}
}

// The sweep of the report's complaint: --max-num-seqs 32 with a conc-64
// level whose throughput fell while TTFT rose from 15 to 271 ms.
var cappedSweep = []lvl{
	{16, 16, 5200, 104, 12, 3.0, 100, 0},
	{32, 32, 6200, 124, 15, 5.0, 100, 0},
	{64, 32, 5900, 118, 271, 5.3, 100, 29},
}

// A healthy sweep: the batch follows the concurrency, throughput rises.
var healthySweep = []lvl{
	{16, 16, 3000, 60, 12, 5.3, 100, 0},
	{32, 32, 5200, 104, 14, 6.1, 100, 0},
	{64, 63, 8000, 160, 17, 7.9, 100, 2},
}

func TestObservationBatchCap(t *testing.T) {
	v := testView(engine(32), cappedSweep...)
	got := v.batchCap()
	for _, want := range []string{"capped at 32 by `--max-num-seqs 32`", "conc 64 ran decode batches of 32", "15.00 → 271.00 ms"} {
		if !strings.Contains(got, want) {
			t.Errorf("batch cap observation %q lacks %q", got, want)
		}
	}
	// The cap is the first observation.
	if obs := v.observations(); len(obs) == 0 || obs[0] != got {
		t.Errorf("first observation %q, want the batch cap", obs)
	}
	// Not capped by max-num-seqs (it is above the batch): too few requests.
	v = testView(engine(256), cappedSweep...)
	if got := v.batchCap(); !strings.Contains(got, "--num-prompts-mul") || strings.Contains(got, "capped at") {
		t.Errorf("batch below concurrency without a cap: %q", got)
	}
	if got := testView(engine(64), healthySweep...).batchCap(); got != "" {
		t.Errorf("healthy sweep: batch cap observation %q", got)
	}
}

func TestObservationSaturation(t *testing.T) {
	got := testView(engine(32), cappedSweep...).saturation()
	for _, want := range []string{"Saturated from conc 32 to conc 64", "falls", "6200.0 → 5900.0 tok/s", "124.00 → 118.00 req/s", "median TTFT 18.1× (15.00 → 271.00 ms)"} {
		if !strings.Contains(got, want) {
			t.Errorf("saturation observation %q lacks %q", got, want)
		}
	}
	if got := testView(engine(64), healthySweep...).saturation(); got != "" {
		t.Errorf("healthy sweep: saturation observation %q", got)
	}
}

func TestObservationLostEvents(t *testing.T) {
	got := testView(engine(32, "KINETO_BUFFER_SIZE_MB=256"), cappedSweep...).lostEvents()
	for _, want := range []string{"conc 64 lost the kernels of 29 of its 100 steps (29.0%)", "already set `KINETO_BUFFER_SIZE_MB=256`", "--profile-steps"} {
		if !strings.Contains(got, want) {
			t.Errorf("lost events observation %q lacks %q", got, want)
		}
	}
	// A real engine's run also wrote the Kineto configuration file.
	got = testView(engine(32, "KINETO_BUFFER_SIZE_MB=256", "KINETO_CONFIG=/run/traces/kineto.conf"), cappedSweep...).lostEvents()
	if !strings.Contains(got, "already set `KINETO_BUFFER_SIZE_MB=256` and, for upstream Kineto, the `KINETO_CONFIG` file sized from it") {
		t.Errorf("advice with the Kineto configuration file: %q", got)
	}
	// Without the variable set, the advice is to raise it, and says what
	// upstream Kineto reads instead.
	if got := testView(engine(32), cappedSweep...).lostEvents(); !strings.Contains(got, "Raise `KINETO_BUFFER_SIZE_MB`") || !strings.Contains(got, "`ROCTRACER_MAX_EVENTS`") {
		t.Errorf("advice without the buffer set: %q", got)
	}
	// 2% lost is under the threshold.
	if got := testView(engine(64), healthySweep...).lostEvents(); got != "" {
		t.Errorf("healthy sweep: lost events observation %q", got)
	}
}

func TestAdviseWarning(t *testing.T) {
	v := testView(engine(32, "KINETO_BUFFER_SIZE_MB=256"), cappedSweep...)
	top := v.r.levels[2]
	bs := diag.New(diag.BSMismatch, "decode batch size 32 in the trace is far below the requested concurrency 64: the server never reached that batch (raise --num-prompts-mul so the level lasts longer, or the server's --max-num-seqs)")
	if got := v.adviseWarning(top, bs); !strings.Contains(got, "--max-num-seqs 32 caps it") || strings.Contains(got, "--num-prompts-mul") {
		t.Errorf("batch warning advice: %q", got)
	}
	cov := diag.New(diag.Coverage, "GPU kernels cover 2.0 s of a 3.0 s window; the profiler buffer dropped GPU events: raise KINETO_BUFFER_SIZE_MB (e.g. 256 or more), profile a shorter window, or send fewer prompts; per-step numbers cover only the steps with kernels")
	if got := v.adviseWarning(top, cov); !strings.Contains(got, "already set `KINETO_BUFFER_SIZE_MB=256`") || strings.Contains(got, "e.g. 256 or more") {
		t.Errorf("coverage warning advice: %q", got)
	}
	// Without a cap the batch warning keeps its advice.
	v = testView(engine(0), cappedSweep...)
	if got := v.adviseWarning(v.r.levels[2], bs); got != bs.Message {
		t.Errorf("batch warning without max-num-seqs rewritten: %q", got)
	}
}

func TestLimitWord(t *testing.T) {
	// Prefill 31% of a token against 67% GPU-busy: not prefill.
	if got := limitWord(67, 2, 31, 69); got != "" {
		t.Errorf("prefill 31%% vs busy 67%%: %q", got)
	}
	if got := limitWord(30, 10, 60, 40); !strings.HasPrefix(got, "Prefill interference") {
		t.Errorf("prefill the largest: %q", got)
	}
	if got := limitWord(20, 60, 20, 80); !strings.HasPrefix(got, "Host overhead") {
		t.Errorf("gaps the largest: %q", got)
	}
}
