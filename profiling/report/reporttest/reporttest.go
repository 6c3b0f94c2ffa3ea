// Package reporttest makes run directories for tests of the report: three
// concurrency levels whose traces come from the synthetic ATOM trace
// generator and whose level results are derived from those traces, as a
// profiling run would leave them.
package reporttest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/profiling/kernelmodel"
	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
	"github.com/profile-model/profile-model/tracing/kineto"
)

// Levels are the concurrencies of a made run. 32 runs other MoE sorting
// kernels than 4 (one kernel split into two) and other GEMM instances.
var Levels = []int{4, 16, 32}

// MakeRun fills dir with a run directory: run.json, the model's config
// (copied from modelConfig into config.json, when not empty), conc{N}.json, summary.csv,
// the traces under traces/rank_0/, and levels/conc{N}/ with the analysis
// CSVs and analysis.json. Client latencies are derived from each trace's
// step times (TPOT and level duration 1% above the trace's), so that the
// report's reconciliation has something true to close.
func MakeRun(t testing.TB, dir, modelConfig string) {
	t.Helper()
	ctx := context.Background()
	run := results.Run(dir)
	var rows []results.SummaryRow
	for i, conc := range Levels {
		trace := filepath.Join(run.Traces(), "rank_0", fmt.Sprintf("MiniMax-M2.5_ts_20260314_0926%02d_000.pt.trace.json", 10+i))
		must(t, os.MkdirAll(filepath.Dir(trace), 0o755))
		f, err := os.Create(trace)
		must(t, err)
		_, err = record(conc).WriteTrace(ctx, f, kineto.WriterOptions{})
		must(t, err)
		must(t, f.Close())
		r, err := analysis.Load(ctx, trace, analysis.Options{})
		must(t, err)
		levelDir := run.Level(conc)
		must(t, os.MkdirAll(levelDir, 0o755))
		_, err = r.Write(results.InDir(levelDir, r.DecodeBS()))
		must(t, err)
		lf := analysis.NewLevelFile(r)
		must(t, lf.Write(filepath.Join(levelDir, analysis.LevelFileName)))
		l := level(conc, lf, trace)
		out, err := os.Create(run.LevelResult(conc))
		must(t, err)
		must(t, l.Write(out))
		must(t, out.Close())
		rows = append(rows, results.SummaryRowOf(l))
	}
	must(t, os.WriteFile(run.Summary(), results.FormatSummary(rows), 0o644))
	level := 3
	info := &results.RunInfo{
		SchemaVersion: results.RunInfoSchemaVersion, Tool: "profile-model test", Status: "ok",
		Start: "2026-03-14T09:26:00Z", End: "2026-03-14T09:27:30Z",
		Engine: results.EngineInfo{Kind: "sim", Model: "MiniMaxAI/MiniMax-M2.5", TP: 1, KVCacheDType: "fp8", MaxNumSeqs: 64,
			Level: &level, ExtraArgs: []string{"--block-size", "16"},
			Command: "KINETO_BUFFER_SIZE_MB=256 OMP_NUM_THREADS=1 profile-model serve-sim --model MiniMaxAI/MiniMax-M2.5 --server-port 8000 --torch-profiler-dir traces",
			Env:     []string{"KINETO_BUFFER_SIZE_MB=256", "OMP_NUM_THREADS=1"}},
		Sweep: results.SweepInfo{Endpoint: "/v1/completions", ISL: 1024, OSL: 50, RangeRatio: 0.8, Concurrencies: Levels, NumPromptsMul: 4, Seed: 7},
	}
	for _, conc := range Levels {
		info.Levels = append(info.Levels, results.LevelInfo{Conc: conc, Status: results.StatusOK, DecodeBS: conc,
			Result: fmt.Sprintf("conc%d.json", conc), Dir: fmt.Sprintf("levels/conc%d", conc), Device: "AMD Instinct MI355X"})
	}
	if modelConfig != "" {
		data, err := os.ReadFile(modelConfig)
		must(t, err)
		must(t, os.WriteFile(run.ModelConfig(), data, 0o644))
		info.ModelConfig = filepath.Base(run.ModelConfig())
	}
	f, err := os.Create(run.RunInfo())
	must(t, err)
	must(t, info.Write(f))
	must(t, f.Close())
}

// record runs a closed-loop level through the synthetic kernel model, as
// the simulated engine schedules it: the first prefill of every sequence,
// decode steps at the full batch with a one-sequence prefill every sixth
// step (a finished request's successor), then the drain.
func record(conc int) *synth.Recorder {
	m := kernelmodel.Default()
	rng := rand.New(rand.NewPCG(uint64(conc), 0x5eed))
	rec := synth.NewRecorder(synth.RecorderOptions{Model: "MiniMaxAI/MiniMax-M2.5", PythonPerStep: -1})
	clock := time.Date(2026, 3, 14, 9, 26, 0, 0, time.UTC).Add(time.Duration(conc) * time.Second).UnixNano()
	rec.Start(clock)
	step := func(kind tracing.StepKind, bs, tokens, ctxTokens int) {
		var runs []kernelmodel.KernelRun
		if kind == tracing.StepPrefill {
			runs = m.PrefillStep(bs, tokens, rng)
		} else {
			runs = m.DecodeStep(bs, ctxTokens, rng)
		}
		rec.Record(synth.Step{Kind: kind, BS: bs, Tokens: tokens, ContextTokens: ctxTokens, Start: clock, Kernels: runs})
		clock += int64(kernelmodel.StepTime(runs)) + 150_000
	}
	step(tracing.StepPrefill, conc, conc*1000, 0)
	seqCtx := 1000
	for d := range 24 {
		if d > 0 && d%6 == 0 {
			step(tracing.StepPrefill, 1, 1000, 0)
		}
		step(tracing.StepDecode, conc, conc, conc*seqCtx)
		seqCtx++
	}
	for bs := conc - 1; bs >= max(conc-3, 1); bs-- {
		step(tracing.StepDecode, bs, bs, bs*seqCtx)
	}
	rec.Stop(clock)
	return rec
}

// level is the client's result of a level whose trace analysis is lf.
func level(conc int, lf *analysis.LevelFile, trace string) *results.Level {
	st := lf.StepTime
	tpot := st.TokenUS / 1000 * 1.01
	// The requests and tokens the trace holds: the first wave, one more
	// per one-sequence prefill, a token per sequence per decode step.
	n := conc + lf.StepTime.PrefillSteps
	out := 0
	for bs, steps := range lf.Summary.DecodeBSHist {
		b, _ := strconv.Atoi(bs)
		out += b * steps
	}
	in := n * 922
	ttft := 30 + float64(conc)
	dur := lf.Summary.Coverage.GPUSpanS * 1.01 // the client's clock, like its TPOT, 1% behind
	stats := func(mean float64) results.Stats {
		return results.Stats{Mean: mean, Median: mean * 0.99, Std: mean * 0.05,
			Pcts: []results.Pct{{P: 50, Value: mean * 0.99}, {P: 99, Value: mean * 1.2}}}
	}
	l := &results.Level{
		SchemaVersion: results.SchemaVersion, Date: "20260314-092600", Backend: "openai", ModelID: "MiniMaxAI/MiniMax-M2.5",
		NumPrompts: conc * 4, RequestRate: math.Inf(1), Burstiness: 1, MaxConcurrency: conc,
		DurationS: dur, Completed: n, TotalInputTokens: in, TotalOutputTokens: out,
		RequestThroughput: float64(n) / dur, OutputThroughput: float64(out) / dur, TotalTokenThroughput: float64(in+out) / dur,
		TTFT: stats(ttft), TPOT: stats(tpot), ITL: stats(tpot), E2EL: stats(ttft + 44*tpot),
		Status: results.StatusOK, RandomInputLen: 1024, RandomOutputLen: 50, RandomRangeRatio: 0.8, NumPromptsMul: 4,
		NumWarmups: 1, Seed: 7, IgnoreEOS: true, Shaping: results.Shaping{Method: "calibrated", PerWord: 1.3, Calibrated: true},
		Profile: true, TraceFiles: []string{trace}, DecodeBS: lf.DecodeBS(),
	}
	if conc == Levels[len(Levels)-1] {
		l.Completed--
		l.Failed = 1
		l.Status = results.StatusFailed
		l.Failures = []results.Count{{Name: "http_5xx", N: 1}}
		l.Warnings = []diag.Warning{diag.New(diag.Failures, fmt.Sprintf("1 of %d requests failed (http_5xx: 1)", n))}
	}
	return l
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
