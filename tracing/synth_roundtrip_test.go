package tracing_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
)

// writeSynth generates a trace into a temporary file and returns its path
// and truth.
func writeSynth(t *testing.T, name string, opts synth.GenerateOptions) (string, *synth.Truth) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	opts.Gzip = strings.HasSuffix(name, ".gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	truth, err := synth.Generate(context.Background(), f, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, truth
}

func stepsByKind(tr *tracing.Trace) map[string]int {
	m := map[string]int{}
	for _, s := range tr.Steps {
		m[string(s.Kind)]++
	}
	return m
}

func equalHist(a, b map[int]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestSynthRoundTrip: Load on generated ATOM-style traces gives the steps by
// kind, decode batch size and histogram, kernels and graph replays of the
// generator's truth.
func TestSynthRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		file   string
		opts   synth.GenerateOptions
		graphs bool
	}{
		{"plain bs8", "a.json", synth.GenerateOptions{Layers: 6, DecodeSteps: 40, PrefillSteps: 3, BS: 8, Seed: 1, PythonPerStep: 200}, true},
		{"gzip bs32", "b.pt.trace.json.gz", synth.GenerateOptions{Layers: 4, DecodeSteps: 25, PrefillSteps: 2, BS: 32, Seed: 2}, true},
		{"eager decode labelled prefill", "c.json.gz", synth.GenerateOptions{Layers: 3, DecodeSteps: 12, PrefillSteps: 2, BS: 4, Seed: 3, EagerDecode: true, PythonPerStep: -1}, false},
		{"two streams, metadata first", "d.json", synth.GenerateOptions{Layers: 3, DecodeSteps: 10, PrefillSteps: 1, BS: 16, Seed: 4, TwoStreams: true, PythonPerStep: 10, MetaFirst: true}, true},
		{"alternating layers, renamed anchor", "e.json", synth.GenerateOptions{Layers: 4, DecodeSteps: 10, BS: 8, Seed: 5, Alternate: true, RenameAnchor: "aiter::paged_attention_v2_gqa8", PythonPerStep: 10}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path, truth := writeSynth(t, c.file, c.opts)
			tr, err := tracing.Load(context.Background(), path, tracing.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := stepsByKind(tr)
			if got["decode"] != truth.Steps["decode"] || got["prefill"] != truth.Steps["prefill"] || len(got) != len(truth.Steps) {
				t.Errorf("steps by kind = %v, truth %v", got, truth.Steps)
			}
			if tr.DecodeBS != truth.DecodeBS || !equalHist(tr.DecodeBSHist, truth.DecodeBSHist) {
				t.Errorf("decode bs = %d %v, truth %d %v", tr.DecodeBS, tr.DecodeBSHist, truth.DecodeBS, truth.DecodeBSHist)
			}
			if tr.Events != truth.Events {
				t.Errorf("events = %d, truth %d", tr.Events, truth.Events)
			}
			kernels := 0
			var sumNS int64
			for _, k := range tr.Kernels {
				if k.Kind == tracing.KindKernel {
					kernels++
					sumNS += k.Dur
				}
			}
			if kernels != truth.Kernels || math.Abs(float64(sumNS)/1000-truth.KernelTime) > 1e-6*truth.KernelTime {
				t.Errorf("kernels = %d (%.3f µs), truth %d (%.3f µs)", kernels, float64(sumNS)/1000, truth.Kernels, truth.KernelTime)
			}
			if !strings.Contains(tr.Device, "MI355X") {
				t.Errorf("device = %q, want the MI355X of the header", tr.Device)
			}
			if c.graphs {
				if len(tr.Graphs) != truth.Steps["decode"] {
					t.Errorf("graph launches = %d, want one per decode step (%d)", len(tr.Graphs), truth.Steps["decode"])
				}
				for gi, g := range tr.Graphs {
					for _, k := range g.Kernels {
						if !tr.Kernels[k].Replayed {
							t.Fatalf("graph %d: kernel %q not marked replayed", gi, tr.KernelName(int(k)))
						}
					}
				}
			} else if len(tr.Graphs) != 0 {
				t.Errorf("eager run has %d graph launches", len(tr.Graphs))
			}
			// The sampler runs outside the decode annotation: no step owns it.
			for _, k := range tr.Kernels {
				if strings.Contains(tr.NameOf(&k), "mix_sample") && k.Step >= 0 {
					t.Fatalf("sampler kernel at %d ns is inside step %d (%s)", k.Start, k.Step, tr.Steps[k.Step].Label)
				}
			}
			if len(tr.Warnings) != 0 {
				t.Errorf("warnings on a complete trace: %q", tr.Warnings)
			}
		})
	}
}

// TestSynthRoundTripBufferDrop: with GPU events dropped outside the last
// window, the coverage warning names the missing span and the number of
// decode steps without kernels, as the truth counts them.
func TestSynthRoundTripBufferDrop(t *testing.T) {
	t.Parallel()
	opts := synth.GenerateOptions{Layers: 62, DecodeSteps: 40, PrefillSteps: 2, BS: 8, Seed: 9, PythonPerStep: 20, GPUWindow: 150 * time.Millisecond}
	path, truth := writeSynth(t, "drop.json.gz", opts)
	if truth.DecodeStepsWithoutKernels == 0 || truth.DecodeStepsWithoutKernels == truth.Steps["decode"] {
		t.Fatalf("generator dropped %d of %d decode steps; the test needs some but not all", truth.DecodeStepsWithoutKernels, truth.Steps["decode"])
	}
	tr, err := tracing.Load(context.Background(), path, tracing.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := stepsByKind(tr); got["decode"] != truth.Steps["decode"] || got["prefill"] != truth.Steps["prefill"] {
		t.Errorf("steps by kind = %v, truth %v", got, truth.Steps)
	}
	if tr.DecodeBS != truth.DecodeBS || !equalHist(tr.DecodeBSHist, truth.DecodeBSHist) {
		t.Errorf("decode bs = %d %v, truth %d %v", tr.DecodeBS, tr.DecodeBSHist, truth.DecodeBS, truth.DecodeBSHist)
	}
	if tr.Coverage.DecodeWithout != truth.DecodeStepsWithoutKernels {
		t.Errorf("coverage: %d decode steps without kernels, truth %d", tr.Coverage.DecodeWithout, truth.DecodeStepsWithoutKernels)
	}
	want := fmt.Sprintf("%d of %d decode steps have no kernels", truth.DecodeStepsWithoutKernels, truth.Steps["decode"])
	var warning string
	for _, w := range tr.Warnings {
		if w.Code == diag.Coverage {
			warning = w.Message
		}
	}
	if !strings.Contains(warning, want) {
		t.Fatalf("coverage warning %q does not say %q", warning, want)
	}
	// The span in seconds or milliseconds, as the warning chooses.
	spans := []string{
		fmt.Sprintf("cover %.1f s of a %.1f s profile window", truth.GPUSpanS, truth.WindowS),
		fmt.Sprintf("cover %.1f ms of a %.1f ms profile window", truth.GPUSpanS*1e3, truth.WindowS*1e3),
	}
	if !strings.Contains(warning, spans[0]) && !strings.Contains(warning, spans[1]) {
		t.Errorf("coverage warning %q does not name the span (%q or %q)", warning, spans[0], spans[1])
	}
	if !strings.Contains(warning, "none in the first") {
		t.Errorf("coverage warning %q does not say where the kernels are missing", warning)
	}
}

// TestSynthATOMLayout: the recorder writes where and how ATOM does, and the
// file loads.
func TestSynthATOMLayout(t *testing.T) {
	t.Parallel()
	rec, err := synth.NewRecording(context.Background(), synth.GenerateOptions{Layers: 2, DecodeSteps: 5, PrefillSteps: 1, BS: 4, Seed: 1, PythonPerStep: 5, ModelName: "/models/MiniMaxAI/MiniMax-M2.5"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	at := time.Date(2026, 4, 2, 13, 4, 5, 678_000_000, time.UTC)
	path, truth, err := rec.WriteATOM(context.Background(), dir, at)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "rank_0", "MiniMax-M2.5_ts_20260402_130405_678.pt.trace.json.gz")
	if path != want {
		t.Errorf("path = %s, want %s", path, want)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "rank_0"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != filepath.Base(want) {
		t.Errorf("rank_0 holds %v, want only the .json.gz (the .json removed)", entries)
	}
	tr, err := tracing.Load(context.Background(), path, tracing.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := stepsByKind(tr); got["decode"] != truth.Steps["decode"] || got["prefill"] != truth.Steps["prefill"] {
		t.Errorf("steps by kind = %v, truth %v", got, truth.Steps)
	}
}

// TestSynthRoundTripExactCut: a buffer cut inside a step leaves that step
// with only its later kernels; Load still finds every step, and counts the
// decode steps without kernels as the generator does.
func TestSynthRoundTripExactCut(t *testing.T) {
	t.Parallel()
	opts := synth.GenerateOptions{Layers: 62, DecodeSteps: 30, PrefillSteps: 1, BS: 16, Seed: 21, PythonPerStep: 5, GPUWindow: 107 * time.Millisecond, GPUWindowExact: true}
	path, truth := writeSynth(t, "exact.json", opts)
	if truth.PartialSteps != 1 || truth.DecodeStepsWithoutKernels == 0 {
		t.Fatalf("generator: %d partial steps, %d decode steps without kernels; the test needs 1 and some", truth.PartialSteps, truth.DecodeStepsWithoutKernels)
	}
	tr, err := tracing.Load(context.Background(), path, tracing.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := stepsByKind(tr); got["decode"] != truth.Steps["decode"] || got["prefill"] != truth.Steps["prefill"] {
		t.Errorf("steps by kind = %v, truth %v", got, truth.Steps)
	}
	if tr.DecodeBS != truth.DecodeBS || !equalHist(tr.DecodeBSHist, truth.DecodeBSHist) {
		t.Errorf("decode bs = %d %v, truth %d %v", tr.DecodeBS, tr.DecodeBSHist, truth.DecodeBS, truth.DecodeBSHist)
	}
	kernels := 0
	for _, k := range tr.Kernels {
		if k.Kind == tracing.KindKernel {
			kernels++
		}
	}
	if kernels != truth.Kernels {
		t.Errorf("kernels = %d, truth %d", kernels, truth.Kernels)
	}
	if tr.Coverage.DecodeWithout != truth.DecodeStepsWithoutKernels {
		t.Errorf("coverage: %d decode steps without kernels, truth %d", tr.Coverage.DecodeWithout, truth.DecodeStepsWithoutKernels)
	}
	want := fmt.Sprintf("%d of %d decode steps have no kernels", truth.DecodeStepsWithoutKernels, truth.Steps["decode"])
	if !slices.ContainsFunc(tr.Warnings, func(w diag.Warning) bool { return w.Code == diag.Coverage && strings.Contains(w.Message, want) }) {
		t.Errorf("warnings %q do not say %q", tr.Warnings, want)
	}
}
