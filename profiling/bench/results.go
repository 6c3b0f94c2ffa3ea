package bench

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/results"
)

// levelDoc is the result document of a level.
func levelDoc(cfg *SweepConfig, model string, s shaper, lv *LevelResult) *results.Level {
	m := &lv.Metrics
	burst := cfg.Burstiness
	if burst <= 0 {
		burst = 1
	}
	rate := cfg.RequestRate
	if rate <= 0 {
		rate = math.Inf(1)
	}
	l := &results.Level{
		SchemaVersion: results.SchemaVersion,
		Date:          lv.Start.UTC().Format("20060102-150405"),
		Backend:       "openai", ModelID: model, NumPrompts: lv.NumPrompts,
		RequestRate: rate, Burstiness: burst, MaxConcurrency: lv.Conc,
		DurationS: m.Duration.Seconds(), Completed: m.Completed,
		TotalInputTokens: m.TotalInput, TotalOutputTokens: m.TotalOutput,
		RequestThroughput: m.RequestThroughput, OutputThroughput: m.OutputThroughput,
		TotalTokenThroughput: m.TotalTokenThroughput,
		TTFT:                 m.TTFT, TPOT: m.TPOT, ITL: m.ITL, E2EL: m.E2EL,
		Status: lv.Status, Failed: m.Failed, NotSent: m.NotSent,
		BaseURL: cfg.URL, Endpoint: cfg.Endpoint,
		RandomInputLen: cfg.ISL, RandomOutputLen: cfg.OSL, RandomRangeRatio: cfg.RangeRatio, RandomRangeRule: cfg.RangeRule,
		NumPromptsMul: cfg.NumPromptsMul, NumWarmups: cfg.Warmups, Seed: cfg.Seed,
		IgnoreEOS: true, Temperature: 0,
		Shaping:           results.Shaping{Method: s.Method()},
		OutputLensCounted: m.OutputCounted, InputLensRequested: m.PromptRequested,
		ReasoningTokens: m.ReasoningTokens, TokensPerFrame: m.TokensPerFrame(), TokensPerFrameMethod: string(m.Split),
		RequestsResent: m.Resent, Server: lv.Server, Window: lv.Window, Client: lv.Client,
		Telemetry: lv.Telemetry, WarmupTelemetry: lv.WarmupTelemetry,
		Profile: cfg.Profile, TraceFiles: lv.TraceFiles, DecodeBS: lv.DecodeBS, Warnings: lv.Warnings,
	}
	if cfg.SLO.set() {
		g := m.RequestGoodput
		l.RequestGoodput = &g
	}
	if cfg.Details {
		d := &results.Details{}
		for i := range lv.Outputs {
			out := &lv.Outputs[i]
			d.InputLens = append(d.InputLens, out.PromptTokens)
			d.TargetInputLens = append(d.TargetInputLens, out.PromptLen)
			d.GeneratedTexts = append(d.GeneratedTexts, out.Text)
			d.OutputLens = append(d.OutputLens, out.OutputTokens)
			d.ReasoningLens = append(d.ReasoningLens, out.ReasoningTokens)
			d.TTFTs = append(d.TTFTs, out.TTFT.Seconds())
			g := make([]float64, 0, out.ITL.Len())
			for x := range out.ITL.All() {
				g = append(g, x.Seconds())
			}
			d.ITLs = append(d.ITLs, g)
			d.Errors = append(d.Errors, out.Error)
		}
		l.Details = d
	}
	for _, k := range FailureKinds {
		if n := m.Failures[k]; n > 0 {
			l.Failures = append(l.Failures, results.Count{Name: string(k), N: n})
		}
	}
	for i := range lv.Outputs {
		if e := lv.Outputs[i].Error; e != "" && len(l.FirstErrors) < 5 {
			l.FirstErrors = append(l.FirstErrors, e)
		}
	}
	if s.Counter != nil {
		l.Shaping.Tokenizer, l.Shaping.Verified, l.Shaping.AddedByServer = s.Tokenizer, s.Verified, s.Offset
	} else {
		l.Shaping.PerWord, l.Shaping.Calibrated = s.PerWord, s.Calibrated
	}
	return l
}

func writeLevel(cfg *SweepConfig, res *SweepResult, lv *LevelResult) error {
	doc := levelDoc(cfg, res.Model, res.Shaper, lv)
	lv.ResultFile = results.Run(res.RunDir).LevelResult(lv.Conc)
	return atomicfile.WriteFunc(lv.ResultFile, doc.Write)
}

// writeSummary rewrites summary.csv and bench.txt with every level so far,
// so an interrupted run keeps the completed levels. Failed and interrupted
// levels are left out of bench.txt (their numbers are not comparable), and
// a comment line there says so.
func writeSummary(cfg *SweepConfig, res *SweepResult) error {
	var rows []results.SummaryRow
	var bench []results.BenchResult
	var notes []string
	for _, lv := range res.Levels {
		doc := levelDoc(cfg, res.Model, res.Shaper, lv)
		rows = append(rows, results.SummaryRowOf(doc))
		if n := benchNote(lv); n != "" {
			notes = append(notes, n)
		}
		if inBench(lv.Status) {
			bench = append(bench, results.BenchResultOf(doc, cfg.ISL, cfg.OSL))
		}
	}
	if err := atomicfile.Write(res.SummaryCSV, results.FormatSummary(rows)); err != nil {
		return err
	}
	return atomicfile.WriteFunc(res.BenchFile, func(w io.Writer) error {
		if err := results.WriteBenchNotes(w, notes); err != nil {
			return err
		}
		return results.WriteBench(w, bench)
	})
}

// inBench reports whether a level of the status is a benchmark result:
// its requests all succeeded (a trace that lost events does not change
// the client's figures).
func inBench(status string) bool {
	return status == statusOK || status == statusTraceIncomplete
}

// benchNote is bench.txt's comment on a level that is not a plain result.
func benchNote(lv *LevelResult) string {
	switch {
	case !inBench(lv.Status):
		why := failureSummary(&lv.Metrics)
		if lv.Metrics.Failed == 0 && lv.Metrics.NotSent == 0 && len(lv.Warnings) > 0 {
			why = lv.Warnings[len(lv.Warnings)-1].Message // the requests succeeded: the traces failed
		}
		return fmt.Sprintf("conc=%d left out: %s (%s)", lv.Conc, lv.Status, why)
	case lv.Status == statusTraceIncomplete:
		return fmt.Sprintf("conc=%d: trace_incomplete: its trace lost events; the client's figures are complete", lv.Conc)
	}
	return ""
}

// printLevel writes vLLM's console result block for a level.
func printLevel(w io.Writer, cfg *SweepConfig, model string, lv *LevelResult) {
	m := &lv.Metrics
	line := func(label string, v any) {
		switch v := v.(type) {
		case float64:
			fmt.Fprintf(w, "%-40s %-10.2f\n", label, v)
		default:
			fmt.Fprintf(w, "%-40s %-10v\n", label, v)
		}
	}
	head := func(title string, fill byte) {
		pad := 50 - len(title)
		left := pad / 2
		fmt.Fprintf(w, "%s%s%s\n", strings.Repeat(string(fill), left), title, strings.Repeat(string(fill), pad-left))
	}
	fmt.Fprintf(w, "\nconcurrency %d: %d prompts, isl %d, osl %d, model %s\n", lv.Conc, lv.NumPrompts, cfg.ISL, cfg.OSL, model)
	head(" Serving Benchmark Result ", '=')
	line("Successful requests:", m.Completed)
	if m.Failed > 0 || m.NotSent > 0 {
		line("Failed requests:", m.Failed)
		for _, k := range FailureKinds {
			if n := m.Failures[k]; n > 0 {
				line("  "+string(k)+":", n)
			}
		}
		if m.NotSent > 0 {
			line("Requests not sent:", m.NotSent)
		}
	}
	line("Maximum request concurrency:", lv.Conc)
	line("Benchmark duration (s):", m.Duration.Seconds())
	line("Total input tokens:", m.TotalInput)
	line("Total generated tokens:", m.TotalOutput)
	line("Request throughput (req/s):", m.RequestThroughput)
	if cfg.SLO.set() {
		line("Request goodput (req/s):", m.RequestGoodput)
	}
	line("Output token throughput (tok/s):", m.OutputThroughput)
	line("Total Token throughput (tok/s):", m.TotalTokenThroughput)
	for _, x := range []struct {
		title, name string
		s           results.Stats
	}{
		{"Time to First Token", "TTFT", m.TTFT},
		{"Time per Output Token (excl. 1st token)", "TPOT", m.TPOT},
		{"Inter-token Latency", "ITL", m.ITL},
		{"End-to-end Latency", "E2EL", m.E2EL},
	} {
		head(x.title, '-')
		line("Mean "+x.name+" (ms):", x.s.Mean)
		line("Median "+x.name+" (ms):", x.s.Median)
		for _, p := range x.s.Pcts {
			if p.P != 50 { // printed as the median
				line("P"+results.PctName(p.P)+" "+x.name+" (ms):", p.Value)
			}
		}
	}
	fmt.Fprintln(w, strings.Repeat("=", 50))
	if lv.Status != statusOK {
		fmt.Fprintf(w, "status: %s\n", lv.Status)
	}
	if lv.Server != nil {
		fmt.Fprintf(w, "server metrics: %s\n", lv.Server)
	}
	if win := lv.Window; win != nil {
		// The profiler starts a moment before the level's clock: no "-0.00".
		fmt.Fprintf(w, "profile window: %.2f s to %.2f s of the level (stopped by %s)\n", max(win.StartS, 0), win.StopS, win.StoppedBy)
	}
	if lv.Telemetry != nil {
		printTelemetry(w, levelDoc(cfg, model, shaper{}, lv))
	}
	for _, t := range lv.TraceFiles {
		fmt.Fprintf(w, "trace: %s\n", t)
	}
	for _, warn := range lv.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn.Message)
	}
	if lv.ResultFile != "" {
		fmt.Fprintf(w, "result: %s\n", lv.ResultFile)
	}
}

// printTelemetry writes a level's GPU figures in one line.
func printTelemetry(w io.Writer, l *results.Level) {
	e, ok := results.EnergyOf(l)
	if !ok {
		return
	}
	fmt.Fprintf(w, "GPU (%d, %s): %.1f W mean, %.1f W peak, %.4f J/output token, %.3f output tokens/J", e.NumGPUs, l.Telemetry.Tool, e.MeanW, e.PeakW, e.JPerOutToken, e.OutTokensPerJ)
	for _, t := range e.ThrottleLimits {
		fmt.Fprintf(w, ", %.1f s at the %s", t.Seconds, t.Limit)
	}
	fmt.Fprintln(w)
}
