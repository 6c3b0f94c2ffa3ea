package results

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/diag"
)

func sampleLevel(details bool) *Level {
	g := 1.5
	l := &Level{
		SchemaVersion: SchemaVersion, Date: "20261201-101010", Backend: "openai", ModelID: "org/m",
		NumPrompts: 32, RequestRate: math.Inf(1), Burstiness: 1, MaxConcurrency: 8,
		DurationS: 12.5, Completed: 31, TotalInputTokens: 31 * 1000, TotalOutputTokens: 31 * 50,
		RequestThroughput: 2.48, RequestGoodput: &g, OutputThroughput: 124, TotalTokenThroughput: 2604,
		TTFT:   Stats{Mean: 80, Median: 79, Std: 3, Pcts: []Pct{{50, 79}, {90, 84}, {99, 90.5}}},
		TPOT:   Stats{Mean: 20, Median: 19.5, Std: 1, Pcts: []Pct{{50, 19.5}, {99, 23}}},
		ITL:    Stats{Mean: 20, Median: 19, Std: 2, Pcts: []Pct{{50, 19}, {99, 30}}},
		E2EL:   Stats{Mean: 1100, Median: 1090, Std: 20, Pcts: []Pct{{50, 1090}, {99.9, 1200}}},
		Status: StatusFailed, Failed: 1, Failures: []Count{{"timeout", 1}}, FirstErrors: []string{"timed out"},
		BaseURL: "http://127.0.0.1:8000", Endpoint: "/v1/completions", RandomInputLen: 1024, RandomOutputLen: 50,
		RandomRangeRatio: 0.8, NumPromptsMul: 4, NumWarmups: 1, Seed: 7, IgnoreEOS: true,
		Shaping: Shaping{Method: "tokenizer", Tokenizer: "tok.json", Verified: true, AddedByServer: 1},
		Profile: true, TraceFiles: []string{"t/rank_0/a.pt.trace.json.gz"}, DecodeBS: 8,
		Warnings: []diag.Warning{diag.New(diag.Coverage, "GPU kernels cover 1.0 s of a 2.0 s profile window (50%)")},
	}
	if details {
		l.Details = &Details{InputLens: []int{1000}, TargetInputLens: []int{1000}, OutputLens: []int{50},
			TTFTs: []float64{0.08}, ITLs: [][]float64{{0.02, 0.021}}, GeneratedTexts: []string{"hi"}, Errors: []string{""}}
	}
	return l
}

func TestLevelRoundTrip(t *testing.T) {
	t.Parallel()
	for _, details := range []bool{false, true} {
		l := sampleLevel(details)
		var b bytes.Buffer
		require.NoError(t, l.Write(&b))
		back, err := parseLevel(b.Bytes())
		require.NoError(t, err)
		if d := cmp.Diff(l, back); d != "" {
			t.Fatalf("details=%v: round trip differs (-wrote +read):\n%s", details, d)
		}
		// Writing what was read gives the same bytes.
		var b2 bytes.Buffer
		require.NoError(t, back.Write(&b2))
		require.Equal(t, b.String(), b2.String())
	}
}

func TestLevelKeyOrder(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, sampleLevel(false).Write(&b))
	s := b.String()
	// vLLM's keys in vLLM's order, then the additions.
	order := []string{`"schema_version"`, `"date"`, `"backend"`, `"model_id"`, `"num_prompts"`, `"request_rate": "inf"`,
		`"max_concurrency"`, `"duration"`, `"completed"`, `"request_throughput"`, `"request_goodput": 1.5`,
		`"output_throughput"`, `"mean_ttft_ms"`, `"median_ttft_ms"`, `"std_ttft_ms"`, `"p50_ttft_ms"`, `"p99_ttft_ms"`,
		`"mean_tpot_ms"`, `"p99.9_e2el_ms"`, `"status"`, `"failures"`, `"prompt_shaping"`, `"prompt_tokenizer"`, `"decode_bs"`, `"warnings"`}
	last := -1
	for _, k := range order {
		i := strings.Index(s, k)
		require.Greater(t, i, last, "%s out of order in\n%s", k, s)
		last = i
	}
	require.NotContains(t, s, "prompt_tokens_per_word", "calibration keys only without a tokenizer")
}

func TestParseLevelOldAndForeign(t *testing.T) {
	t.Parallel()
	// A file written before schema_version and typed warnings.
	old := `{"date":"20260101-000000","model_id":"m","max_concurrency":4,"request_rate":2.5,"p99_ttft_ms":9,"mean_ttft_ms":5,"warnings":["x"],"decode_bs":4}`
	l, err := parseLevel([]byte(old))
	require.NoError(t, err)
	require.Equal(t, 0, l.SchemaVersion)
	require.Equal(t, 2.5, l.RequestRate)
	require.Equal(t, []diag.Warning{{Message: "x"}}, l.Warnings)
	v, ok := l.TTFT.At(99)
	require.True(t, ok)
	require.Equal(t, 9.0, v)

	_, err = parseLevel([]byte(`{"schema_version": 99}`))
	require.ErrorContains(t, err, "newer than this tool reads")
	_, err = parseLevel([]byte(`{"completed": "many"}`))
	require.ErrorContains(t, err, `key "completed"`)
	_, err = parseLevel([]byte(`[]`))
	require.ErrorContains(t, err, "JSON object expected")
}

func TestSummaryRoundTrip(t *testing.T) {
	t.Parallel()
	rows := []SummaryRow{SummaryRowOf(sampleLevel(false)), {Conc: 16, Completed: 64, ReqS: 3.25}}
	data := FormatSummary(rows)
	require.True(t, strings.HasPrefix(string(data), strings.Join(SummaryHeader, ",")+"\n"))
	require.Contains(t, string(data), "\n16,,64,0,0,3.25,0.00,0.00,0.00,0.00,0.00,0.00,0.00,0.00,,,,,,,\n", "unknown decode_bs and server columns are empty cells")
	back, err := readSummary(bytes.NewReader(data))
	require.NoError(t, err)
	want := rows
	want[0].ReqS, want[0].TTFTP99MS, want[0].TPOTP50MS = 2.48, 90.5, 19.5 // two decimals survive exactly here
	require.Equal(t, want, back)

	_, err = readSummary(strings.NewReader("conc,completed\n1,2\n"))
	require.ErrorContains(t, err, `no "failed" column`)
	bad := strings.Join(SummaryHeader, ",") + "\n8,ok,x,0,0,1,1,1,1,1,1,1,1,1,\n"
	_, err = readSummary(strings.NewReader(bad))
	require.ErrorContains(t, err, "line 2: not a number in [completed]")
}

func TestBenchRoundTrip(t *testing.T) {
	t.Parallel()
	rs := []BenchResult{BenchResultOf(sampleLevel(false), 1024, 50)}
	require.Equal(t, "Sweep/model=org_m/isl=1024/osl=50/conc=8", rs[0].Name)
	var b bytes.Buffer
	require.NoError(t, WriteBench(&b, rs))
	require.Contains(t, b.String(), "BenchmarkSweep/model=org_m/isl=1024/osl=50/conc=8 ")
	require.Contains(t, b.String(), "Unit out-tok/s better=higher")
	back, err := ReadBench(&b, "bench.txt")
	require.NoError(t, err)
	require.Equal(t, rs, back)
}

func ExampleRun() {
	run := Run("runs/MiniMax-M2.5-20261201T101010Z")
	files := InDir(run.Level(8), 8)
	fmt.Println(run.LevelResult(8))
	fmt.Println(files.Layer)
	fmt.Println(files.Kernels)
	// Output:
	// runs/MiniMax-M2.5-20261201T101010Z/conc8.json
	// runs/MiniMax-M2.5-20261201T101010Z/levels/conc8/conc8_layer.csv
	// runs/MiniMax-M2.5-20261201T101010Z/levels/conc8/conc8_kernels.csv
}

// A sweep's bench.txt is Go benchmark format: one line per level, named by
// BenchName, which benchstat compares and ReadBench reads back.
func ExampleReadBench() {
	rs := []BenchResult{{
		Name:    BenchName("MiniMaxAI/MiniMax-M2.5", 1024, 50, 8),
		Iters:   32,
		Metrics: []Metric{{Value: 41.5, Unit: "ttft-p50-ms"}, {Value: 21.25, Unit: CategoryUnit("MoE expert GEMM") + "-us/layer"}},
	}}
	var b bytes.Buffer
	if err := WriteBench(&b, rs); err != nil {
		fmt.Println(err)
		return
	}
	back, err := ReadBench(&b, "bench.txt")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range back {
		fmt.Println(r.Name, r.Iters)
		for _, m := range r.Metrics {
			fmt.Println(" ", m.Value, m.Unit)
		}
	}
	// Output:
	// Sweep/model=MiniMaxAI_MiniMax-M2.5/isl=1024/osl=50/conc=8 32
	//   41.5 ttft-p50-ms
	//   21.25 moe-expert-gemm-us/layer
}
