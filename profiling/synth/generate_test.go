package synth

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/profile-model/profile-model/profiling/kernelmodel"
	"github.com/profile-model/profile-model/tracing"
	"github.com/profile-model/profile-model/tracing/kineto"
)

type rawEvent struct {
	Ph   string          `json:"ph"`
	Cat  string          `json:"cat"`
	Name string          `json:"name"`
	PID  json.RawMessage `json:"pid"`
	TID  json.RawMessage `json:"tid"`
	TS   json.Number     `json:"ts"`
	Dur  json.Number     `json:"dur"`
	ID   int64           `json:"id"`
	Args map[string]any  `json:"args"`
}

type rawTrace struct {
	TraceEvents []rawEvent `json:"traceEvents"`
	Base        int64      `json:"baseTimeNanoseconds"`
	Devices     []struct {
		Name string `json:"name"`
	} `json:"deviceProperties"`
}

// parseMicros turns Kineto's "123.456" µs text into integer ns.
func parseMicros(t *testing.T, n json.Number) int64 {
	t.Helper()
	s := string(n)
	whole, frac, _ := strings.Cut(s, ".")
	var ns int64
	for _, c := range whole {
		ns = ns*10 + int64(c-'0')
	}
	for len(frac) < 3 {
		frac += "0"
	}
	var f int64
	for _, c := range frac[:3] {
		f = f*10 + int64(c-'0')
	}
	return ns*1000 + f
}

func generate(t *testing.T, opts GenerateOptions) (*rawTrace, *Truth, []byte) {
	t.Helper()
	var buf bytes.Buffer
	truth, err := Generate(context.Background(), &buf, opts)
	if err != nil {
		t.Fatal(err)
	}
	var tr rawTrace
	dec := json.NewDecoder(bytes.NewReader(buf.Bytes()))
	dec.UseNumber()
	if err := dec.Decode(&tr); err != nil {
		t.Fatalf("generated trace is not valid JSON: %v", err)
	}
	return &tr, truth, buf.Bytes()
}

func TestGenerateDecodeStructure(t *testing.T) {
	t.Parallel()
	opts := GenerateOptions{Layers: 4, DecodeSteps: 20, PrefillSteps: 2, BS: 8, Seed: 1, PythonPerStep: 50}
	tr, truth, _ := generate(t, opts)
	if len(tr.Devices) != 1 || !strings.Contains(tr.Devices[0].Name, "MI355X") {
		t.Errorf("devices = %+v, want one MI355X", tr.Devices)
	}
	var graphLaunches, replayed, annotations, gpuAnn, python, samplers int
	graphCorr := map[json.Number]bool{}
	for _, e := range tr.TraceEvents {
		switch {
		case e.Cat == "cuda_runtime" && e.Name == "hipGraphLaunch":
			graphLaunches++
			graphCorr[e.Args["correlation"].(json.Number)] = true
		case e.Cat == "user_annotation":
			annotations++
		case e.Cat == "gpu_user_annotation":
			gpuAnn++
		case e.Cat == "python_function":
			python++
		}
	}
	for _, e := range tr.TraceEvents {
		if e.Cat != "kernel" {
			continue
		}
		c := e.Args["correlation"].(json.Number)
		if graphCorr[c] {
			replayed++
			if e.Args["kind"] != "Dispatch Task" || e.Args["External id"] != nil {
				t.Fatalf("replayed kernel %q has args %v, want kind Dispatch Task and no External id", e.Name, e.Args)
			}
		} else if e.Args["kind"] != "Dispatch Kernel" {
			t.Fatalf("eager kernel %q has kind %v", e.Name, e.Args["kind"])
		}
		if strings.Contains(e.Name, "mix_sample") {
			samplers++
			if graphCorr[c] {
				t.Errorf("sampler shares a graph launch's correlation")
			}
		}
	}
	if graphLaunches != 20 {
		t.Errorf("graph launches = %d, want one per decode step (20)", graphLaunches)
	}
	// A decode step replays embedding + layers×19 + final norm + lm_head.
	if want := 20 * (1 + 4*19 + 2); replayed != want {
		t.Errorf("replayed kernels = %d, want %d", replayed, want)
	}
	if annotations != 22 || gpuAnn != 22 {
		t.Errorf("annotations cpu=%d gpu=%d, want 22 each", annotations, gpuAnn)
	}
	if samplers != 22 {
		t.Errorf("sampler kernels = %d, want one per step (22)", samplers)
	}
	if python != 22*50 {
		t.Errorf("python_function events = %d, want %d", python, 22*50)
	}
	if truth.Steps["decode"] != 20 || truth.Steps["prefill"] != 2 {
		t.Errorf("truth steps = %v", truth.Steps)
	}
	if truth.DecodeBS != 8 || truth.DecodeBSHist[8] != 19 || truth.DecodeBSHist[7] != 1 {
		t.Errorf("truth decode bs = %d hist %v, want 8 with {8:19, 7:1}", truth.DecodeBS, truth.DecodeBSHist)
	}
	if len(truth.KernelsPerLayer) != 1 || truth.KernelsPerLayer[0] != 19 || truth.Layers != 4 {
		t.Errorf("truth layers = %d × %v, want 4 × [19]", truth.Layers, truth.KernelsPerLayer)
	}
}

// TestTruthMatchesWrittenDurations recomputes the per-position statistics
// from the kernels in the file and compares them with the truth.
func TestTruthMatchesWrittenDurations(t *testing.T) {
	t.Parallel()
	tr, truth, _ := generate(t, GenerateOptions{Layers: 3, DecodeSteps: 30, BS: 16, Seed: 7, PythonPerStep: -1})
	// Decode kernels by step: replayed kernels in start order, grouped by graph.
	graphCorr := map[json.Number]bool{}
	for _, e := range tr.TraceEvents {
		if e.Name == "hipGraphLaunch" {
			graphCorr[e.Args["correlation"].(json.Number)] = true
		}
	}
	type kern struct {
		corr json.Number
		name string
		ts   int64
		dur  int64
	}
	var ks []kern
	for _, e := range tr.TraceEvents {
		if e.Cat == "kernel" && graphCorr[e.Args["correlation"].(json.Number)] {
			ks = append(ks, kern{e.Args["correlation"].(json.Number), e.Name, parseMicros(t, e.TS), parseMicros(t, e.Dur)})
		}
	}
	per := len(truth.Positions)
	sums := make([]float64, per)
	counts := make([]int, per)
	for i := 0; i < len(ks); {
		j := i
		for j < len(ks) && ks[j].corr == ks[i].corr {
			j++
		}
		step := ks[i+1 : j-2] // drop embedding, final norm and lm_head
		for k, kk := range step {
			sums[k%per] += float64(kk.dur) / 1000
			counts[k%per]++
		}
		i = j
	}
	for p, tp := range truth.Positions {
		if counts[p] != tp.Count {
			t.Errorf("pos %d: %d kernels in the file, truth says %d", p, counts[p], tp.Count)
		}
		if math.Abs(sums[p]/float64(counts[p])-tp.MeanUS) > 1e-9 {
			t.Errorf("pos %d: mean %.6f in the file, truth %.6f", p, sums[p]/float64(counts[p]), tp.MeanUS)
		}
	}
}

func TestGPUWindowDropsWholeSteps(t *testing.T) {
	t.Parallel()
	// A decode step of 62 layers at bs 8 lasts about 15 ms; keep ~0.1 s.
	tr, truth, _ := generate(t, GenerateOptions{DecodeSteps: 30, BS: 8, Seed: 3, PythonPerStep: -1, GPUWindow: 100 * time.Millisecond})
	if truth.DecodeStepsWithoutKernels == 0 || truth.DecodeStepsWithoutKernels >= 30 {
		t.Fatalf("decode steps without kernels = %d, want some but not all of 30", truth.DecodeStepsWithoutKernels)
	}
	var gpuAnn, cpuAnn int
	for _, e := range tr.TraceEvents {
		switch e.Cat {
		case "gpu_user_annotation":
			gpuAnn++
		case "user_annotation":
			cpuAnn++
		}
	}
	if cpuAnn != 30 || gpuAnn != 30-truth.StepsWithoutKernels {
		t.Errorf("annotations cpu=%d gpu=%d, want 30 and %d", cpuAnn, gpuAnn, 30-truth.StepsWithoutKernels)
	}
	if truth.GPUSpanS >= truth.WindowS {
		t.Errorf("gpu span %.3f s not shorter than the window %.3f s", truth.GPUSpanS, truth.WindowS)
	}
}

// BenchmarkGenerate measures trace generation (model, layout and writer) on
// the default 62-layer model; b.SetBytes is the uncompressed JSON size.
func BenchmarkGenerate(b *testing.B) {
	for _, gz := range []bool{false, true} {
		b.Run(map[bool]string{false: "json", true: "gzip"}[gz], func(b *testing.B) {
			opts := GenerateOptions{DecodeSteps: 20, PrefillSteps: 1, BS: 8, Seed: 1, Gzip: gz}
			var size int64
			for i := 0; i < b.N; i++ {
				truth, err := Generate(context.Background(), io.Discard, opts)
				if err != nil {
					b.Fatal(err)
				}
				size = truth.JSONBytes
			}
			b.SetBytes(size)
		})
	}
}

// TestGPUSectionInStartOrder: like Kineto, GPU activities are written in
// start order, also when a second stream overlaps the first.
func TestGPUSectionInStartOrder(t *testing.T) {
	t.Parallel()
	tr, truth, _ := generate(t, GenerateOptions{Layers: 3, DecodeSteps: 5, PrefillSteps: 1, BS: 8, Seed: 2, TwoStreams: true, PythonPerStep: -1})
	var last int64
	var side, overlaps int
	var prevEnd int64
	for _, e := range tr.TraceEvents {
		if e.Cat != "kernel" {
			continue
		}
		ts := parseMicros(t, e.TS)
		if ts < last {
			t.Fatalf("kernel %q at %d ns written after one at %d ns", e.Name, ts, last)
		}
		if string(e.TID) == "1" {
			side++
			if ts < prevEnd {
				overlaps++
			}
		} else {
			prevEnd = ts + parseMicros(t, e.Dur)
		}
		last = ts
	}
	if side == 0 || overlaps == 0 {
		t.Errorf("side-stream kernels = %d, overlapping the main stream = %d; want both > 0", side, overlaps)
	}
	sideTruth := 0
	for _, p := range truth.Positions {
		if p.Stream == 1 {
			sideTruth++
		}
	}
	if sideTruth != 2 {
		t.Errorf("truth has %d side-stream positions, want 2", sideTruth)
	}
}

// TestTruthCountsTheCommonLayerShape: steps whose batch size picks other
// kernels (MoE sorting in one or two phases) have layers of another length;
// the truth's positions count only layers of the most common length, as
// `layers --mode compat` does.
func TestTruthCountsTheCommonLayerShape(t *testing.T) {
	t.Parallel()
	m := kernelmodel.Default()
	m.Layers = 3
	rng := rand.New(rand.NewPCG(1, 1))
	rec := NewRecorder(RecorderOptions{PythonPerStep: -1})
	at := defaultStart.UnixNano()
	for i, bs := range []int{32, 32, 16, 32, 16, 32} {
		runs := m.DecodeStep(bs, 0, rng)
		rec.Record(Step{Kind: tracing.StepDecode, BS: bs, Tokens: bs, Start: at + int64(i)*int64(50*time.Millisecond), Kernels: runs})
	}
	truth, err := rec.WriteTrace(context.Background(), io.Discard, kineto.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(truth.KernelsPerLayer) != 1 || truth.KernelsPerLayer[0] != 20 {
		t.Fatalf("kernels per layer = %v, want [20] (bs 32's layer)", truth.KernelsPerLayer)
	}
	for _, p := range truth.Positions {
		if p.Count != 4*3 {
			t.Errorf("pos %d (%s): %d layers, want the 12 of the bs-32 steps", p.Pos, p.ShortName, p.Count)
		}
	}
	if len(truth.Positions) != 20 || truth.Positions[7].ShortName != "MoE_sort_P0" {
		t.Errorf("positions = %d, pos 7 = %s; want 20 with the two-phase sort", len(truth.Positions), truth.Positions[7].ShortName)
	}
	if truth.DecodeBSHist[32] != 4 || truth.DecodeBSHist[16] != 2 {
		t.Errorf("decode bs hist = %v", truth.DecodeBSHist)
	}
}

// TestGenerateIsReproducible: the same options give the same bytes (golden
// tests in other packages rely on it); another seed gives other durations.
func TestGenerateIsReproducible(t *testing.T) {
	t.Parallel()
	opts := GenerateOptions{Layers: 2, DecodeSteps: 6, PrefillSteps: 1, BS: 4, Seed: 11, PythonPerStep: 30, GPUWindow: 20 * time.Millisecond}
	_, _, a := generate(t, opts)
	_, _, b := generate(t, opts)
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with the same options wrote different traces")
	}
	opts.Seed = 12
	_, _, c := generate(t, opts)
	if bytes.Equal(a, c) {
		t.Fatal("another seed wrote the same trace")
	}
}

// TestEmptyProfile: a profile started and stopped with no step in between
// (no requests) still writes a valid trace.
func TestEmptyProfile(t *testing.T) {
	t.Parallel()
	for _, started := range []bool{false, true} {
		rec := NewRecorder(RecorderOptions{})
		if started {
			rec.Start(defaultStart.UnixNano())
			rec.Stop(defaultStart.Add(2 * time.Second).UnixNano())
		}
		var buf bytes.Buffer
		truth, err := rec.WriteTrace(context.Background(), &buf, kineto.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var tr rawTrace
		if err := json.Unmarshal(buf.Bytes(), &tr); err != nil {
			t.Fatalf("started=%v: not valid JSON: %v", started, err)
		}
		if truth.Kernels != 0 || len(truth.Steps) != 0 || tr.Base <= 0 {
			t.Errorf("started=%v: truth kernels %d steps %v, base %d", started, truth.Kernels, truth.Steps, tr.Base)
		}
	}
}
