package results

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
)

// SummaryHeader is the sweep summary CSV's header.
var SummaryHeader = []string{"conc", "status", "completed", "failed", "not_sent", "req_s", "out_tok_s", "total_tok_s",
	"ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "itl_p50_ms", "e2el_p50_ms", "decode_bs",
	// From the server's /metrics (empty when not read): peaks of running
	// and waiting requests and KV-cache use, growth of preemptions,
	// generated tokens and prefix-cached prompt tokens.
	"srv_running_peak", "srv_waiting_peak", "srv_kv_usage_peak", "srv_preemptions", "srv_generated_tokens", "srv_prefix_cached_tokens"}

// optionalColumns may be missing from a summary (written before they were).
var optionalColumns = map[string]bool{
	"srv_running_peak": true, "srv_waiting_peak": true, "srv_kv_usage_peak": true,
	"srv_preemptions": true, "srv_generated_tokens": true, "srv_prefix_cached_tokens": true,
	"status": true, "not_sent": true,
}

// SummaryRow is one level of summary.csv. Status, Failed and NotSent are
// the level result's status, failed and not_sent. DecodeBS is 0 when
// unknown (an empty cell).
type SummaryRow struct {
	Conc                     int
	Status                   string
	Completed, Failed        int
	NotSent                  int
	ReqS, OutTokS, TotalTokS float64
	TTFTP50MS, TTFTP99MS     float64
	TPOTP50MS, TPOTP99MS     float64
	ITLP50MS, E2ELP50MS      float64
	DecodeBS                 int
	// Server holds the srv_* columns in header order, NaN where empty;
	// nil when the server's metrics were not read.
	Server []float64
	// GPU holds the gpu_* columns (TelemetryHeader) in order; nil when the
	// level's GPUs were not sampled.
	GPU []float64
}

// TelemetryHeader are the columns summary.csv appends, after every other,
// when a level's GPUs were sampled: the GPUs' summed mean and peak power,
// their energy over the measured requests, joules per output token and per
// request, output tokens per joule, the longest time at a clock limit, the
// peak used memory of a GPU against its capacity, and the graphics clock's
// mean and lowest reading.
var TelemetryHeader = []string{"gpu_power_mean_w", "gpu_power_peak_w", "gpu_energy_j", "gpu_j_per_out_tok", "gpu_j_per_req",
	"gpu_out_tok_per_j", "gpu_throttle_s", "gpu_mem_used_mib", "gpu_mem_total_mib", "gpu_sm_clock_mean_mhz", "gpu_sm_clock_min_mhz"}

// telemetryValues are a level's gpu_* columns; nil without telemetry.
func telemetryValues(l *Level) []float64 {
	e, ok := EnergyOf(l)
	if !ok {
		return nil
	}
	return []float64{e.MeanW, e.PeakW, e.J, e.JPerOutToken, e.JPerRequest, e.OutTokensPerJ, e.ThrottleS,
		e.MemUsedMiB, e.MemTotalMiB, e.SMClockMeanMHz, e.SMClockMinMHz}
}

// SummaryRowOf is the summary row of a level result.
func SummaryRowOf(l *Level) SummaryRow {
	p := func(s Stats, q float64) float64 { v, _ := s.At(q); return v }
	return SummaryRow{
		Conc: l.MaxConcurrency, Status: l.Status, Completed: l.Completed, Failed: l.Failed, NotSent: l.NotSent,
		ReqS: l.RequestThroughput, OutTokS: l.OutputThroughput, TotalTokS: l.TotalTokenThroughput,
		TTFTP50MS: p(l.TTFT, 50), TTFTP99MS: p(l.TTFT, 99), TPOTP50MS: p(l.TPOT, 50), TPOTP99MS: p(l.TPOT, 99),
		ITLP50MS: p(l.ITL, 50), E2ELP50MS: p(l.E2EL, 50), DecodeBS: l.DecodeBS,
		Server: serverValues(l.Server), GPU: telemetryValues(l),
	}
}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// writeSummary writes summary.csv: the header, then one row per level with
// two decimals.
func writeSummary(w io.Writer, rows []SummaryRow) error {
	cw := csv.NewWriter(w)
	// The gpu_* columns only when a level has them: a run without
	// telemetry keeps the summary it always had.
	gpu := slices.ContainsFunc(rows, func(r SummaryRow) bool { return r.GPU != nil })
	head := SummaryHeader
	if gpu {
		head = slices.Concat(SummaryHeader, TelemetryHeader)
	}
	_ = cw.Write(head)
	for _, r := range rows {
		bs := ""
		if r.DecodeBS > 0 {
			bs = strconv.Itoa(r.DecodeBS)
		}
		rec := []string{strconv.Itoa(r.Conc), r.Status, strconv.Itoa(r.Completed), strconv.Itoa(r.Failed), strconv.Itoa(r.NotSent),
			f2(r.ReqS), f2(r.OutTokS), f2(r.TotalTokS), f2(r.TTFTP50MS), f2(r.TTFTP99MS),
			f2(r.TPOTP50MS), f2(r.TPOTP99MS), f2(r.ITLP50MS), f2(r.E2ELP50MS), bs}
		for k := range serverColumns {
			cell := ""
			if k < len(r.Server) && !math.IsNaN(r.Server[k]) {
				cell = strconv.FormatFloat(r.Server[k], 'f', -1, 64)
			}
			rec = append(rec, cell)
		}
		if gpu {
			for k := range TelemetryHeader {
				cell := ""
				if k < len(r.GPU) && !math.IsNaN(r.GPU[k]) {
					cell = strconv.FormatFloat(r.GPU[k], 'f', 4, 64)
				}
				rec = append(rec, cell)
			}
		}
		_ = cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}

// FormatSummary is writeSummary to a byte slice.
func FormatSummary(rows []SummaryRow) []byte {
	var b bytes.Buffer
	_ = writeSummary(&b, rows)
	return b.Bytes()
}

// LoadSummary reads a summary.csv file.
func LoadSummary(path string) ([]SummaryRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := readSummary(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}

// readSummary reads summary.csv. Columns are found by name, so a file with
// more columns (from a newer release) reads too, and one without status and
// not_sent (from an older one, whose failed counted unsent requests too).
func readSummary(r io.Reader) ([]SummaryRow, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = false
	cr.FieldsPerRecord = -1 // trailing optional cells may be left off
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("reading the summary header: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for _, h := range SummaryHeader {
		if _, ok := col[h]; !ok && !optionalColumns[h] {
			return nil, fmt.Errorf("summary header has no %q column (got %v)", h, head)
		}
	}
	var rows []SummaryRow
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, err
		}
		var row SummaryRow
		var bad []string
		cell := func(name string) string {
			if j := col[name]; j < len(rec) {
				return rec[j]
			}
			return ""
		}
		i := func(name string, dst *int) {
			if _, ok := col[name]; !ok {
				return // an optional column
			}
			s := cell(name)
			if s == "" && name == "decode_bs" {
				return
			}
			v, err := strconv.Atoi(s)
			if err != nil {
				bad = append(bad, name)
			}
			*dst = v
		}
		f := func(name string, dst *float64) {
			v, err := strconv.ParseFloat(cell(name), 64)
			if err != nil {
				bad = append(bad, name)
			}
			*dst = v
		}
		i("conc", &row.Conc)
		if _, ok := col["status"]; ok {
			row.Status = cell("status")
		}
		i("completed", &row.Completed)
		i("failed", &row.Failed)
		i("not_sent", &row.NotSent)
		f("req_s", &row.ReqS)
		f("out_tok_s", &row.OutTokS)
		f("total_tok_s", &row.TotalTokS)
		f("ttft_p50_ms", &row.TTFTP50MS)
		f("ttft_p99_ms", &row.TTFTP99MS)
		f("tpot_p50_ms", &row.TPOTP50MS)
		f("tpot_p99_ms", &row.TPOTP99MS)
		f("itl_p50_ms", &row.ITLP50MS)
		f("e2el_p50_ms", &row.E2ELP50MS)
		i("decode_bs", &row.DecodeBS)
		for k, c := range serverColumns {
			if _, ok := col[c.name]; !ok || cell(c.name) == "" {
				continue
			}
			if row.Server == nil {
				row.Server = nanRow()
			}
			f(c.name, &row.Server[k])
		}
		for k, name := range TelemetryHeader {
			if _, ok := col[name]; !ok || cell(name) == "" {
				continue
			}
			if row.GPU == nil {
				row.GPU = make([]float64, len(TelemetryHeader))
				for j := range row.GPU {
					row.GPU[j] = math.NaN()
				}
			}
			f(name, &row.GPU[k])
		}
		if len(bad) > 0 {
			return nil, fmt.Errorf("line %d: not a number in %v", line, slices.Compact(bad))
		}
		rows = append(rows, row)
	}
}
