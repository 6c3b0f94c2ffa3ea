package results

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/perf/benchfmt"
)

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

// CategoryUnit is the benchmark unit prefix of a kernel category: the
// category in lower case, every run of other characters a single "-"
// ("Dense GEMM (FP8/FP4)" → "dense-gemm-fp8-fp4"), so that units have no
// spaces. The sweep benchmarks and diff's benchmark files both name their
// per-category units with it (adding -us/layer, -us/step), so benchstat
// matches them.
func CategoryUnit(category string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(category) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	return b.String()
}

// Metric is one value of a benchmark result with its unit (ttft-p50-ms,
// out-tok/s, layer-us, ...).
type Metric struct {
	Value float64
	Unit  string
}

// BenchResult is one line of a benchmark file.
type BenchResult struct {
	Name    string // without the "Benchmark" prefix
	Iters   int
	Metrics []Metric
}

// higherIsBetter lists the units where a larger value is better (throughput);
// benchstat reads this from the file's unit metadata. Every other unit
// (latencies, times) is better lower, benchstat's default.
var higherIsBetter = []string{"req/s", "out-tok/s", "total-tok/s", UnitTokPerJ}

// The benchmark units of a level's GPU telemetry, benchstat's spelling:
// summed mean and peak power, joules per output token and per request,
// output tokens per joule (better higher), seconds at a clock limit.
const (
	UnitPowerMean = "W-mean"
	UnitPowerPeak = "W-peak"
	UnitJPerToken = "J/token"
	UnitJPerReq   = "J/req"
	UnitTokPerJ   = "tok/J"
	UnitThrottleS = "throttle-s"
)

// BenchResultOf is the benchmark line of a completed level.
func BenchResultOf(l *Level, isl, osl int) BenchResult {
	p := func(s Stats, q float64) float64 { v, _ := s.At(q); return v }
	r := BenchResult{Name: BenchName(l.ModelID, isl, osl, l.MaxConcurrency), Iters: max(l.Completed, 1)}
	add := func(v float64, unit string) { r.Metrics = append(r.Metrics, Metric{v, unit}) }
	add(p(l.TTFT, 50), "ttft-p50-ms")
	add(p(l.TTFT, 99), "ttft-p99-ms")
	add(p(l.TPOT, 50), "tpot-p50-ms")
	add(p(l.TPOT, 99), "tpot-p99-ms")
	add(p(l.ITL, 50), "itl-p50-ms")
	add(p(l.E2EL, 50), "e2el-p50-ms")
	add(l.RequestThroughput, "req/s")
	add(l.OutputThroughput, "out-tok/s")
	add(l.TotalTokenThroughput, "total-tok/s")
	if l.DecodeBS > 0 {
		add(float64(l.DecodeBS), "decode-bs")
	}
	if e, ok := EnergyOf(l); ok {
		add(e.MeanW, UnitPowerMean)
		add(e.PeakW, UnitPowerPeak)
		if e.OutTokens > 0 {
			add(e.JPerOutToken, UnitJPerToken)
			add(e.OutTokensPerJ, UnitTokPerJ)
		}
		if l.Completed > 0 {
			add(e.JPerRequest, UnitJPerReq)
		}
		add(e.ThrottleS, UnitThrottleS)
	}
	return r
}

// WriteBench writes results in the Go benchmark format, with unit metadata
// so benchstat knows which direction is better.
func WriteBench(w io.Writer, rs []BenchResult) error {
	bw := benchfmt.NewWriter(w)
	for _, u := range higherIsBetter {
		// tok/J's line only in files that have it: files without
		// telemetry stay as they were.
		if u == UnitTokPerJ && !hasUnit(rs, u) {
			continue
		}
		if err := bw.Write(&benchfmt.UnitMetadata{UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: u, Key: "better"}, OrigUnit: u, Value: "higher"}); err != nil {
			return err
		}
	}
	for _, r := range rs {
		br := &benchfmt.Result{Name: benchfmt.Name(r.Name), Iters: r.Iters}
		for _, m := range r.Metrics {
			br.Values = append(br.Values, benchfmt.Value{Value: m.Value, Unit: m.Unit})
		}
		if err := bw.Write(br); err != nil {
			return err
		}
	}
	return nil
}

func hasUnit(rs []BenchResult, unit string) bool {
	for _, r := range rs {
		for _, m := range r.Metrics {
			if m.Unit == unit {
				return true
			}
		}
	}
	return false
}

// WriteBenchNotes writes notes as comment lines ("# ..."), which benchfmt
// and benchstat skip: what a reader of the file should know that is not a
// result, such as the levels left out of it.
func WriteBenchNotes(w io.Writer, notes []string) error {
	for _, n := range notes {
		n = strings.Join(strings.Fields(n), " ") // one line
		if _, err := fmt.Fprintf(w, "# %s\n", n); err != nil {
			return err
		}
	}
	return nil
}

// LoadBench reads a benchmark file.
func LoadBench(path string) ([]BenchResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadBench(f, path)
}

// ReadBench reads the results of a Go benchmark file (configuration lines
// and unit metadata are skipped); name is used in error messages.
func ReadBench(r io.Reader, name string) ([]BenchResult, error) {
	br := benchfmt.NewReader(r, name)
	var out []BenchResult
	for br.Scan() {
		switch rec := br.Result().(type) {
		case *benchfmt.SyntaxError:
			return nil, rec
		case *benchfmt.Result:
			res := BenchResult{Name: strings.TrimPrefix(string(rec.Name), "Benchmark"), Iters: rec.Iters}
			for _, v := range rec.Values {
				unit, val := v.OrigUnit, v.OrigValue
				if unit == "" {
					unit, val = v.Unit, v.Value
				}
				res.Metrics = append(res.Metrics, Metric{Value: val, Unit: unit})
			}
			out = append(out, res)
		}
	}
	if err := br.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
