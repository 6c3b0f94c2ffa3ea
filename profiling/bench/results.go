package bench

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"golang.org/x/perf/benchfmt"

	"github.com/profile-model/profile-model/internal/atomicfile"
)

// object is a JSON object that keeps its keys in insertion order, so the
// result file reads like vLLM's.
type object []member

type member struct {
	key string
	val any
}

func (o *object) add(k string, v any) { *o = append(*o, member{k, v}) }

// MarshalJSON serves encoding/json users.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := o.MarshalJSONTo(jsontext.NewEncoder(&b)); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func (o object) MarshalJSONTo(enc *jsontext.Encoder) error {
	if err := enc.WriteToken(jsontext.BeginObject); err != nil {
		return err
	}
	for _, m := range o {
		if err := enc.WriteToken(jsontext.String(m.key)); err != nil {
			return err
		}
		if err := json.MarshalEncode(enc, m.val); err != nil {
			return fmt.Errorf("key %s: %w", m.key, err)
		}
	}
	return enc.WriteToken(jsontext.EndObject)
}

// levelJSON builds the result document of a level: vLLM's keys first, then
// this tool's additions (status, failures, run parameters, traces).
func levelJSON(cfg *SweepConfig, model string, s Shaper, lv *LevelResult) object {
	m := &lv.Metrics
	var o object
	o.add("date", lv.Start.UTC().Format("20060102-150405"))
	o.add("backend", "openai")
	o.add("model_id", model)
	o.add("tokenizer_id", nil)
	o.add("num_prompts", lv.NumPrompts)
	if cfg.RequestRate > 0 && !math.IsInf(cfg.RequestRate, 1) {
		o.add("request_rate", cfg.RequestRate)
	} else {
		o.add("request_rate", "inf")
	}
	burst := cfg.Burstiness
	if burst <= 0 {
		burst = 1
	}
	o.add("burstiness", burst)
	o.add("max_concurrency", lv.Conc)
	o.add("duration", m.Duration.Seconds())
	o.add("completed", m.Completed)
	o.add("total_input_tokens", m.TotalInput)
	o.add("total_output_tokens", m.TotalOutput)
	o.add("request_throughput", m.RequestThroughput)
	if cfg.SLO.set() {
		o.add("request_goodput", m.RequestGoodput)
	} else {
		o.add("request_goodput", nil)
	}
	o.add("output_throughput", m.OutputThroughput)
	o.add("total_token_throughput", m.TotalTokenThroughput)
	if cfg.Details {
		var ttfts []float64
		var itls [][]float64
		var errs []string
		var inLens, reqLens, outLens []int
		var texts []string
		for i := range lv.Outputs {
			out := &lv.Outputs[i]
			inLens = append(inLens, out.PromptTokens)
			reqLens = append(reqLens, out.PromptLen)
			texts = append(texts, out.Text)
			outLens = append(outLens, out.OutputTokens)
			ttfts = append(ttfts, out.TTFT.Seconds())
			g := make([]float64, len(out.ITL))
			for j, d := range out.ITL {
				g[j] = d.Seconds()
			}
			itls = append(itls, g)
			errs = append(errs, out.Error)
		}
		o.add("input_lens", inLens)
		o.add("target_input_lens", reqLens)
		o.add("output_lens", outLens)
		o.add("ttfts", ttfts)
		o.add("itls", itls)
		o.add("generated_texts", texts)
		o.add("errors", errs)
	}
	for _, x := range []struct {
		name string
		s    Stats
	}{{"ttft", m.TTFT}, {"tpot", m.TPOT}, {"itl", m.ITL}, {"e2el", m.E2EL}} {
		o.add("mean_"+x.name+"_ms", x.s.Mean)
		o.add("median_"+x.name+"_ms", x.s.Median)
		o.add("std_"+x.name+"_ms", x.s.Std)
		for _, p := range x.s.Pcts {
			o.add("p"+PctName(p.P)+"_"+x.name+"_ms", p.Value)
		}
	}
	// This tool's additions.
	o.add("status", lv.Status)
	o.add("failed", m.Failed)
	o.add("not_sent", m.NotSent)
	failures := object{}
	for _, k := range FailureKinds {
		if n := m.Failures[k]; n > 0 {
			failures.add(string(k), n)
		}
	}
	o.add("failures", failures)
	var firstErrs []string
	for i := range lv.Outputs {
		if e := lv.Outputs[i].Error; e != "" && len(firstErrs) < 5 {
			firstErrs = append(firstErrs, e)
		}
	}
	o.add("first_errors", firstErrs)
	o.add("base_url", cfg.URL)
	o.add("endpoint", cfg.Endpoint)
	o.add("random_input_len", cfg.ISL)
	o.add("random_output_len", cfg.OSL)
	o.add("random_range_ratio", cfg.RangeRatio)
	o.add("num_prompts_mul", cfg.NumPromptsMul)
	o.add("num_warmups", cfg.Warmups)
	o.add("seed", cfg.Seed)
	o.add("ignore_eos", true)
	o.add("temperature", 0.0)
	o.add("prompt_shaping", s.Method())
	if s.Counter != nil {
		o.add("prompt_tokenizer", s.Tokenizer)
		o.add("prompt_tokenizer_verified", s.Verified)
		o.add("prompt_tokens_added_by_server", s.Offset)
	} else {
		o.add("prompt_tokens_per_word", s.PerWord)
		o.add("prompt_calibrated", s.Calibrated)
	}
	o.add("output_lens_counted", m.OutputCounted)
	o.add("input_lens_requested", m.PromptRequested)
	o.add("profile", cfg.Profile)
	o.add("trace_files", lv.TraceFiles)
	o.add("decode_bs", lv.DecodeBS)
	o.add("warnings", lv.Warnings)
	return o
}

func writeLevel(cfg *SweepConfig, res *SweepResult, lv *LevelResult) error {
	doc := levelJSON(cfg, res.Model, res.Shaper, lv)
	data, err := json.Marshal(doc, jsontext.WithIndent("  "))
	if err != nil {
		return fmt.Errorf("encoding the result of concurrency %d: %w", lv.Conc, err)
	}
	lv.ResultFile = filepath.Join(res.RunDir, fmt.Sprintf("conc%d.json", lv.Conc))
	return atomicfile.Write(lv.ResultFile, append(data, '\n'))
}

// SummaryHeader is the sweep summary CSV's header.
var SummaryHeader = []string{"conc", "completed", "failed", "req_s", "out_tok_s", "total_tok_s",
	"ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "itl_p50_ms", "e2el_p50_ms", "decode_bs"}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func pct(s Stats, p float64) float64 {
	v, _ := s.At(p)
	return v
}

// writeSummary rewrites summary.csv and bench.txt with every level so far,
// so an interrupted run keeps the completed levels.
func writeSummary(cfg *SweepConfig, res *SweepResult) error {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(SummaryHeader)
	for _, lv := range res.Levels {
		m := &lv.Metrics
		bs := ""
		if lv.DecodeBS > 0 {
			bs = strconv.Itoa(lv.DecodeBS)
		}
		_ = w.Write([]string{strconv.Itoa(lv.Conc), strconv.Itoa(m.Completed), strconv.Itoa(m.Failed + m.NotSent),
			f2(m.RequestThroughput), f2(m.OutputThroughput), f2(m.TotalTokenThroughput),
			f2(pct(m.TTFT, 50)), f2(pct(m.TTFT, 99)), f2(pct(m.TPOT, 50)), f2(pct(m.TPOT, 99)),
			f2(pct(m.ITL, 50)), f2(pct(m.E2EL, 50)), bs})
	}
	w.Flush()
	if err := atomicfile.Write(res.SummaryCSV, b.Bytes()); err != nil {
		return err
	}
	return atomicfile.WriteFunc(res.BenchFile, func(w io.Writer) error {
		return WriteBenchmarks(w, cfg, res)
	})
}

// BenchName is the Go benchmark name of a level, without the "Benchmark"
// prefix: Sweep/model=M/isl=1024/osl=50/conc=8. Characters that would break
// the name ("/" and spaces in model ids) become "_".
func BenchName(model string, isl, osl, conc int) string {
	clean := strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == '\t' || r == '\n' {
			return '_'
		}
		return r
	}, model)
	return fmt.Sprintf("Sweep/model=%s/isl=%d/osl=%d/conc=%d", clean, isl, osl, conc)
}

// WriteBenchmarks writes the completed levels (failed ones are left out:
// their numbers are not comparable) as Go benchmark results, with unit
// metadata so benchstat knows which direction is better.
func WriteBenchmarks(w io.Writer, cfg *SweepConfig, res *SweepResult) error {
	bw := benchfmt.NewWriter(w)
	for _, u := range []string{"req/s", "out-tok/s", "total-tok/s"} {
		if err := bw.Write(&benchfmt.UnitMetadata{UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: u, Key: "better"}, OrigUnit: u, Value: "higher"}); err != nil {
			return err
		}
	}
	for _, lv := range res.Levels {
		if lv.Status != StatusOK {
			continue
		}
		m := &lv.Metrics
		r := &benchfmt.Result{
			Name:  benchfmt.Name(BenchName(res.Model, cfg.ISL, cfg.OSL, lv.Conc)),
			Iters: max(m.Completed, 1),
		}
		add := func(v float64, unit string) { r.Values = append(r.Values, benchfmt.Value{Value: v, Unit: unit}) }
		add(pct(m.TTFT, 50), "ttft-p50-ms")
		add(pct(m.TTFT, 99), "ttft-p99-ms")
		add(pct(m.TPOT, 50), "tpot-p50-ms")
		add(pct(m.TPOT, 99), "tpot-p99-ms")
		add(pct(m.ITL, 50), "itl-p50-ms")
		add(pct(m.E2EL, 50), "e2el-p50-ms")
		add(m.RequestThroughput, "req/s")
		add(m.OutputThroughput, "out-tok/s")
		add(m.TotalTokenThroughput, "total-tok/s")
		if lv.DecodeBS > 0 {
			add(float64(lv.DecodeBS), "decode-bs")
		}
		if err := bw.Write(r); err != nil {
			return err
		}
	}
	return nil
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
		s           Stats
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
				line("P"+PctName(p.P)+" "+x.name+" (ms):", p.Value)
			}
		}
	}
	fmt.Fprintln(w, strings.Repeat("=", 50))
	if lv.Status != StatusOK {
		fmt.Fprintf(w, "status: %s\n", lv.Status)
	}
	for _, t := range lv.TraceFiles {
		fmt.Fprintf(w, "trace: %s\n", t)
	}
	for _, warn := range lv.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	if lv.ResultFile != "" {
		fmt.Fprintf(w, "result: %s\n", lv.ResultFile)
	}
}
