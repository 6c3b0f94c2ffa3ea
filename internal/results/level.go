package results

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/profile-model/profile-model/internal/diag"
)

// SchemaVersion is the version of the level result document this package
// writes. Readers accept documents without one (written before it existed).
const SchemaVersion = 1

// Level statuses, in the level result's "status" and summary.csv's
// status column.
const (
	StatusOK = "ok" // every request succeeded; the traces, when profiled, are complete
	// StatusTraceIncomplete: every request succeeded, but the level's
	// trace lost events (the profiler buffer dropped some, or the file
	// was cut): the client's figures stand, the trace's tables are partial.
	StatusTraceIncomplete = "trace_incomplete"
	StatusFailed          = "failed"      // some requests failed or were not sent, or the traces could not be had
	StatusInterrupted     = "interrupted" // the run was cancelled (Ctrl-C) during the level or its export
)

// Stats is one latency metric of a level in milliseconds: mean, median,
// population standard deviation and percentiles.
type Stats struct {
	Mean, Median, Std float64
	Pcts              []Pct
}

// Pct is one percentile of a metric.
type Pct struct {
	P, Value float64
}

// At returns percentile p, and false when it was not computed.
func (s Stats) At(p float64) (float64, bool) {
	for _, x := range s.Pcts {
		if x.P == p {
			return x.Value, true
		}
	}
	return 0, false
}

// PctName spells percentile p as vLLM does in its keys: 99 → "99", 99.9 → "99.9".
func PctName(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) }

// Count is a named count in a fixed order (failures by kind).
type Count struct {
	Name string
	N    int
}

// Details are the per-request figures of a level (bench --details), one
// entry per request in send order.
type Details struct {
	InputLens       []int       // usage.prompt_tokens (else requested)
	TargetInputLens []int       // requested prompt lengths
	OutputLens      []int       // usage.completion_tokens (else counted)
	ReasoningLens   []int       // of OutputLens, the reasoning tokens
	TTFTs           []float64   // seconds
	ITLs            [][]float64 // seconds
	GeneratedTexts  []string
	Errors          []string
}

// Shaping says how prompts were built to their lengths.
type Shaping struct {
	Method string // tokenizer, calibrated or assumed
	// With a tokenizer:
	Tokenizer     string
	Verified      bool
	AddedByServer int
	// Without one:
	PerWord    float64
	Calibrated bool
}

// Level is the result document of one concurrency level, conc{N}.json:
// vLLM's benchmark_serving keys first (so tools that read those files read
// these), then this tool's additions.
type Level struct {
	SchemaVersion  int
	Date           string // UTC, 20060102-150405
	Backend        string
	ModelID        string
	NumPrompts     int
	RequestRate    float64 // +Inf: all at once
	Burstiness     float64
	MaxConcurrency int

	DurationS            float64
	Completed            int
	TotalInputTokens     int
	TotalOutputTokens    int
	RequestThroughput    float64
	RequestGoodput       *float64 // nil when no SLO was set
	OutputThroughput     float64
	TotalTokenThroughput float64
	Details              *Details // nil unless requested

	TTFT, TPOT, ITL, E2EL Stats // ms

	Status      string
	Failed      int
	NotSent     int
	Failures    []Count // by kind, only kinds that occurred
	FirstErrors []string

	BaseURL          string
	Endpoint         string
	RandomInputLen   int
	RandomOutputLen  int
	RandomRangeRatio float64
	// RandomRangeRule is how the ratio was read: "sglang", [⌊L·r⌋, L], or
	// "vllm", [⌊L·(1−r)⌋, ⌈L·(1+r)⌉]; "" in files written before it was
	// recorded (sglang).
	RandomRangeRule string
	NumPromptsMul   int
	NumWarmups      int
	Seed            uint64
	IgnoreEOS       bool
	Temperature     float64
	Shaping         Shaping

	OutputLensCounted  int // requests whose output length was counted, not from usage
	InputLensRequested int // requests whose input length is the requested one

	// Output tokens streamed as reasoning (a thinking model's), the mean
	// tokens per frame, and how a frame's tokens were counted (one per
	// frame, by the tokenizer, or the usage total spread evenly).
	ReasoningTokens      int
	TokensPerFrame       float64
	TokensPerFrameMethod string
	// Requests sent again because the server had closed their kept-alive
	// connection while it was idle (not failures).
	RequestsResent int
	// Server is what the server's /metrics said over the level; nil when
	// it was not read.
	Server *ServerMetrics
	// Window is the part of the level the trace covers; nil unless profiled.
	Window *ProfileWindow
	// Telemetry is the GPUs' power, clocks and memory over the measured
	// requests, WarmupTelemetry over the warm-up before them; nil when not
	// sampled.
	Telemetry, WarmupTelemetry *Telemetry
	// Client is how busy the benchmark client was over the level; nil
	// when not measured.
	Client *ClientLoad

	Profile    bool
	TraceFiles []string
	DecodeBS   int
	Warnings   []diag.Warning
}

// object is a JSON object that keeps its keys in insertion order.
type object []member

type member struct {
	key string
	val any
}

func (o *object) add(k string, v any) { *o = append(*o, member{k, v}) }

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

var metricNames = []string{"ttft", "tpot", "itl", "e2el"}

func (l *Level) stats() []*Stats { return []*Stats{&l.TTFT, &l.TPOT, &l.ITL, &l.E2EL} }

func (l *Level) document() object {
	var o object
	o.add("schema_version", SchemaVersion)
	o.add("date", l.Date)
	o.add("backend", l.Backend)
	o.add("model_id", l.ModelID)
	o.add("tokenizer_id", nil)
	o.add("num_prompts", l.NumPrompts)
	if l.RequestRate > 0 && !math.IsInf(l.RequestRate, 1) {
		o.add("request_rate", l.RequestRate)
	} else {
		o.add("request_rate", "inf")
	}
	o.add("burstiness", l.Burstiness)
	o.add("max_concurrency", l.MaxConcurrency)
	o.add("duration", l.DurationS)
	o.add("completed", l.Completed)
	o.add("total_input_tokens", l.TotalInputTokens)
	o.add("total_output_tokens", l.TotalOutputTokens)
	o.add("request_throughput", l.RequestThroughput)
	o.add("request_goodput", l.RequestGoodput)
	o.add("output_throughput", l.OutputThroughput)
	o.add("total_token_throughput", l.TotalTokenThroughput)
	if d := l.Details; d != nil {
		o.add("input_lens", d.InputLens)
		o.add("target_input_lens", d.TargetInputLens)
		o.add("output_lens", d.OutputLens)
		if d.ReasoningLens != nil {
			o.add("reasoning_lens", d.ReasoningLens)
		}
		o.add("ttfts", d.TTFTs)
		o.add("itls", d.ITLs)
		o.add("generated_texts", d.GeneratedTexts)
		o.add("errors", d.Errors)
	}
	for i, s := range l.stats() {
		name := metricNames[i]
		o.add("mean_"+name+"_ms", s.Mean)
		o.add("median_"+name+"_ms", s.Median)
		o.add("std_"+name+"_ms", s.Std)
		for _, p := range s.Pcts {
			o.add("p"+PctName(p.P)+"_"+name+"_ms", p.Value)
		}
	}
	o.add("status", l.Status)
	o.add("failed", l.Failed)
	o.add("not_sent", l.NotSent)
	failures := object{}
	for _, c := range l.Failures {
		failures.add(c.Name, c.N)
	}
	o.add("failures", failures)
	o.add("first_errors", l.FirstErrors)
	o.add("base_url", l.BaseURL)
	o.add("endpoint", l.Endpoint)
	o.add("random_input_len", l.RandomInputLen)
	o.add("random_output_len", l.RandomOutputLen)
	o.add("random_range_ratio", l.RandomRangeRatio)
	o.add("random_range_rule", l.RandomRangeRule)
	o.add("num_prompts_mul", l.NumPromptsMul)
	o.add("num_warmups", l.NumWarmups)
	o.add("seed", l.Seed)
	o.add("ignore_eos", l.IgnoreEOS)
	o.add("temperature", l.Temperature)
	o.add("prompt_shaping", l.Shaping.Method)
	if l.Shaping.Tokenizer != "" {
		o.add("prompt_tokenizer", l.Shaping.Tokenizer)
		o.add("prompt_tokenizer_verified", l.Shaping.Verified)
		o.add("prompt_tokens_added_by_server", l.Shaping.AddedByServer)
	} else {
		o.add("prompt_tokens_per_word", l.Shaping.PerWord)
		o.add("prompt_calibrated", l.Shaping.Calibrated)
	}
	o.add("output_lens_counted", l.OutputLensCounted)
	o.add("input_lens_requested", l.InputLensRequested)
	o.add("reasoning_tokens", l.ReasoningTokens)
	o.add("tokens_per_frame", l.TokensPerFrame)
	o.add("tokens_per_frame_method", l.TokensPerFrameMethod)
	o.add("requests_resent", l.RequestsResent)
	if l.Server != nil {
		o.add("server_metrics", l.Server.document())
	}
	if l.Window != nil {
		o.add("profile_window", l.Window.document())
	}
	if l.Telemetry != nil {
		o.add("gpu_telemetry", l.Telemetry)
	}
	if l.WarmupTelemetry != nil {
		o.add("warmup_gpu_telemetry", l.WarmupTelemetry)
	}
	if l.Client != nil {
		o.add("client_load", l.Client)
	}
	o.add("profile", l.Profile)
	o.add("trace_files", l.TraceFiles)
	o.add("decode_bs", l.DecodeBS)
	o.add("warnings", l.Warnings)
	return o
}

// Write writes l as an indented JSON document with a final newline.
func (l *Level) Write(w io.Writer) error {
	data, err := json.Marshal(l.document(), jsontext.WithIndent("  "))
	if err != nil {
		return fmt.Errorf("encoding the result of concurrency %d: %w", l.MaxConcurrency, err)
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// LoadLevel reads a level result file.
func LoadLevel(path string) (*Level, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	l, err := parseLevel(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}

// parseLevel parses a level result document. Unknown keys are ignored, so
// files from newer releases and vLLM's own result files read too.
func parseLevel(data []byte) (*Level, error) {
	raw := map[string]jsontext.Value{}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("not a level result (JSON object expected): %w", err)
	}
	l := &Level{}
	var errs []string
	get := func(key string, dst any) {
		v, ok := raw[key]
		if !ok || string(v) == "null" {
			return
		}
		if err := json.Unmarshal(v, dst); err != nil {
			errs = append(errs, fmt.Sprintf("key %q: %v", key, err))
		}
	}
	get("schema_version", &l.SchemaVersion)
	if l.SchemaVersion > SchemaVersion {
		return nil, fmt.Errorf("schema_version %d is newer than this tool reads (%d): update profile-model", l.SchemaVersion, SchemaVersion)
	}
	get("date", &l.Date)
	get("backend", &l.Backend)
	get("model_id", &l.ModelID)
	get("num_prompts", &l.NumPrompts)
	if v, ok := raw["request_rate"]; ok {
		var s string
		if json.Unmarshal(v, &s) == nil {
			l.RequestRate = math.Inf(1)
		} else {
			get("request_rate", &l.RequestRate)
		}
	}
	get("burstiness", &l.Burstiness)
	get("max_concurrency", &l.MaxConcurrency)
	get("duration", &l.DurationS)
	get("completed", &l.Completed)
	get("total_input_tokens", &l.TotalInputTokens)
	get("total_output_tokens", &l.TotalOutputTokens)
	get("request_throughput", &l.RequestThroughput)
	get("request_goodput", &l.RequestGoodput)
	get("output_throughput", &l.OutputThroughput)
	get("total_token_throughput", &l.TotalTokenThroughput)
	if _, ok := raw["ttfts"]; ok {
		d := &Details{}
		get("input_lens", &d.InputLens)
		get("target_input_lens", &d.TargetInputLens)
		get("output_lens", &d.OutputLens)
		get("reasoning_lens", &d.ReasoningLens)
		get("ttfts", &d.TTFTs)
		get("itls", &d.ITLs)
		get("generated_texts", &d.GeneratedTexts)
		get("errors", &d.Errors)
		l.Details = d
	}
	// Percentile keys are p<P>_<metric>_ms, in the order the file has them.
	pcts := map[string][]Pct{}
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.ReadToken(); err == nil && tok.Kind() == '{' {
		for dec.PeekKind() != '}' {
			k, err := dec.ReadToken()
			if err != nil {
				break
			}
			key := k.String()
			if err := dec.SkipValue(); err != nil {
				break
			}
			if !strings.HasPrefix(key, "p") || !strings.HasSuffix(key, "_ms") {
				continue
			}
			mid := strings.TrimSuffix(strings.TrimPrefix(key, "p"), "_ms")
			num, metric, ok := strings.Cut(mid, "_")
			if !ok || !slices.Contains(metricNames, metric) {
				continue
			}
			p, err := strconv.ParseFloat(num, 64)
			if err != nil {
				continue
			}
			var v float64
			get(key, &v)
			pcts[metric] = append(pcts[metric], Pct{P: p, Value: v})
		}
	}
	for i, s := range l.stats() {
		name := metricNames[i]
		get("mean_"+name+"_ms", &s.Mean)
		get("median_"+name+"_ms", &s.Median)
		get("std_"+name+"_ms", &s.Std)
		s.Pcts = pcts[name]
	}
	get("status", &l.Status)
	get("failed", &l.Failed)
	get("not_sent", &l.NotSent)
	if v, ok := raw["failures"]; ok {
		dec := jsontext.NewDecoder(bytes.NewReader(v))
		if tok, err := dec.ReadToken(); err == nil && tok.Kind() == '{' {
			for dec.PeekKind() != '}' {
				k, err := dec.ReadToken()
				if err != nil {
					break
				}
				name := k.String()
				var n int
				if err := json.UnmarshalDecode(dec, &n); err != nil {
					errs = append(errs, fmt.Sprintf("failures.%s: %v", name, err))
					break
				}
				l.Failures = append(l.Failures, Count{name, n})
			}
		}
	}
	get("first_errors", &l.FirstErrors)
	get("base_url", &l.BaseURL)
	get("endpoint", &l.Endpoint)
	get("random_input_len", &l.RandomInputLen)
	get("random_output_len", &l.RandomOutputLen)
	get("random_range_ratio", &l.RandomRangeRatio)
	get("random_range_rule", &l.RandomRangeRule)
	get("num_prompts_mul", &l.NumPromptsMul)
	get("num_warmups", &l.NumWarmups)
	get("seed", &l.Seed)
	get("ignore_eos", &l.IgnoreEOS)
	get("temperature", &l.Temperature)
	get("prompt_shaping", &l.Shaping.Method)
	get("prompt_tokenizer", &l.Shaping.Tokenizer)
	get("prompt_tokenizer_verified", &l.Shaping.Verified)
	get("prompt_tokens_added_by_server", &l.Shaping.AddedByServer)
	get("prompt_tokens_per_word", &l.Shaping.PerWord)
	get("prompt_calibrated", &l.Shaping.Calibrated)
	get("output_lens_counted", &l.OutputLensCounted)
	get("input_lens_requested", &l.InputLensRequested)
	get("reasoning_tokens", &l.ReasoningTokens)
	get("tokens_per_frame", &l.TokensPerFrame)
	get("tokens_per_frame_method", &l.TokensPerFrameMethod)
	get("requests_resent", &l.RequestsResent)
	if v, ok := raw["server_metrics"]; ok && string(v) != "null" {
		m, err := parseServerMetrics(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("key \"server_metrics\": %v", err))
		}
		l.Server = m
	}
	if v, ok := raw["profile_window"]; ok && string(v) != "null" {
		var w profileWindowJSON
		get("profile_window", &w)
		pw := ProfileWindow(w)
		l.Window = &pw
	}
	for key, dst := range map[string]**Telemetry{"gpu_telemetry": &l.Telemetry, "warmup_gpu_telemetry": &l.WarmupTelemetry} {
		if v, ok := raw[key]; ok && string(v) != "null" {
			*dst = &Telemetry{}
			get(key, *dst)
		}
	}
	if _, ok := raw["client_load"]; ok {
		l.Client = &ClientLoad{}
		get("client_load", l.Client)
	}
	get("profile", &l.Profile)
	get("trace_files", &l.TraceFiles)
	get("decode_bs", &l.DecodeBS)
	if v, ok := raw["warnings"]; ok && string(v) != "null" {
		// Files written before warnings had codes hold plain strings.
		var old []string
		if json.Unmarshal(v, &old) == nil {
			for _, m := range old {
				l.Warnings = append(l.Warnings, diag.Warning{Message: m})
			}
		} else {
			get("warnings", &l.Warnings)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("bad level result: %s", strings.Join(errs, "; "))
	}
	return l, nil
}
