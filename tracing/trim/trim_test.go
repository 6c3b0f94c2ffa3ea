package trim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
	"github.com/profile-model/profile-model/tracing/trim"
)

// generate writes a small ATOM-style trace.
func generate(t *testing.T, opts synth.GenerateOptions) []byte {
	t.Helper()
	if opts.BS == 0 {
		opts.BS = 8
	}
	if opts.Layers == 0 {
		opts.Layers = 4
	}
	if opts.PythonPerStep == 0 {
		opts.PythonPerStep = 40
	}
	var buf bytes.Buffer
	_, err := synth.Generate(context.Background(), &buf, opts)
	require.NoError(t, err)
	return buf.Bytes()
}

func read(t *testing.T, data []byte) *tracing.Trace {
	t.Helper()
	tr, err := tracing.Read(context.Background(), bytes.NewReader(data), "trace", tracing.Options{})
	require.NoError(t, err)
	return tr
}

func doTrim(t *testing.T, data []byte, opts trim.Options) ([]byte, *trim.Result) {
	t.Helper()
	var out bytes.Buffer
	res, err := trim.Trim(context.Background(), bytes.NewReader(data), &out, opts)
	require.NoError(t, err)
	require.NoError(t, checkChromeTrace(out.Bytes()), "the trimmed trace breaks the trace-event format")
	return out.Bytes(), res
}

// stepView is what inspect and layers read of a step.
type stepView struct {
	Kind    tracing.StepKind
	Label   string
	BS      int
	Start   int64
	End     int64
	Kernels []kernelView
}

type kernelView struct {
	Name        string
	Start, Dur  int64
	Correlation int64
	Stream      int32
	Replayed    bool
}

func viewSteps(tr *tracing.Trace, idx []int) []stepView {
	var out []stepView
	for _, i := range idx {
		st := tr.Steps[i]
		v := stepView{Kind: st.Kind, Label: st.Label, BS: st.BS, Start: st.Start, End: st.End}
		for _, k := range st.Kernels {
			kk := tr.Kernels[k]
			v.Kernels = append(v.Kernels, kernelView{tr.NameOf(&kk), kk.Start, kk.Dur, kk.Correlation, kk.Stream, kk.Replayed})
		}
		out = append(out, v)
	}
	return out
}

func indexes(steps []trim.Step) []int {
	var idx []int
	for _, s := range steps {
		idx = append(idx, s.Index)
	}
	return idx
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// The trimmed trace, read by the analysis, has exactly the chosen steps,
// each with the kernels, times and labels it has in the source.
func TestTrimKeepsChosenStepsExactly(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		synth synth.GenerateOptions
		opts  trim.Options
		kinds map[string]int
	}{
		{"decode 2 from the middle", synth.GenerateOptions{DecodeSteps: 30, PrefillSteps: 2}, trim.Options{Decode: 2}, map[string]int{"decode": 2}},
		{"decode 5, two streams", synth.GenerateOptions{DecodeSteps: 20, PrefillSteps: 1, TwoStreams: true}, trim.Options{Decode: 5}, map[string]int{"decode": 5}},
		{"eager decode (prefill-labelled)", synth.GenerateOptions{DecodeSteps: 12, EagerDecode: true}, trim.Options{Decode: 3}, map[string]int{"decode": 3}},
		{"metadata before traceEvents", synth.GenerateOptions{DecodeSteps: 10, MetaFirst: true}, trim.Options{Decode: 2}, map[string]int{"decode": 2}},
		{"steps 0:3 with the first prefill", synth.GenerateOptions{DecodeSteps: 10, PrefillSteps: 1}, trim.Options{Steps: &trim.StepRange{From: 0, To: 3}}, map[string]int{"prefill": 1, "decode": 2}},
		{"the last steps", synth.GenerateOptions{DecodeSteps: 10}, trim.Options{Steps: &trim.StepRange{From: 8, To: 10}}, map[string]int{"decode": 2}},
		{"every step", synth.GenerateOptions{DecodeSteps: 6, PrefillSteps: 1}, trim.Options{Steps: &trim.StepRange{From: 0, To: 7}}, map[string]int{"decode": 6, "prefill": 1}},
		{"steps that lost their GPU events", synth.GenerateOptions{DecodeSteps: 20, GPUWindow: 10 * time.Millisecond}, trim.Options{Steps: &trim.StepRange{From: 0, To: 2}}, map[string]int{"decode": 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			src := generate(t, c.synth)
			out, res := doTrim(t, src, c.opts)
			full, cut := read(t, src), read(t, out)
			require.Equal(t, c.kinds, cut.Summarize().Steps)
			want := viewSteps(full, indexes(res.Steps))
			got := viewSteps(cut, seq(len(cut.Steps)))
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("steps differ from the source's (-source +trimmed):\n%s", d)
			}
			require.Equal(t, len(full.Steps), len(res.TraceSteps), "steps numbered as inspect numbers them")
			if len(res.Steps) < len(res.TraceSteps)/2 {
				require.Less(t, len(out), len(src)/2)
			}
		})
	}
}

// --decode picks the steady middle: consecutive decode steps at the most
// frequent batch size, around the middle of the profile.
func TestDecodeFromTheSteadyMiddle(t *testing.T) {
	t.Parallel()
	// 40 decode steps, the last 2 at BS-1 (drain), prefills at 0 and 20.
	src := generate(t, synth.GenerateOptions{DecodeSteps: 40, PrefillSteps: 2, BS: 8})
	_, res := doTrim(t, src, trim.Options{Decode: 4})
	require.Len(t, res.Steps, 4)
	all := res.TraceSteps
	mid := (all[0].StartNS + all[len(all)-1].EndNS) / 2
	first, last := res.Steps[0], res.Steps[3]
	require.Equal(t, first.Index+3, last.Index, "consecutive")
	for _, s := range res.Steps {
		require.Equal(t, tracing.StepDecode, s.Kind)
		require.Equal(t, 8, s.BS)
	}
	// No other window of four steady decode steps is nearer the middle.
	dist := func(a, b trim.Step) int64 { return abs((a.StartNS+b.EndNS)/2 - mid) }
	for i := 0; i+3 < len(all); i++ {
		ok := true
		for _, s := range all[i : i+4] {
			ok = ok && s.Kind == tracing.StepDecode && s.BS == 8
		}
		if ok {
			require.LessOrEqual(t, dist(first, last), dist(all[i], all[i+3]), "steps %d:%d are nearer the middle", i, i+4)
		}
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// Everything of the trace's header and every M event is kept as it was.
func TestTrimKeepsMetadata(t *testing.T) {
	t.Parallel()
	src := generate(t, synth.GenerateOptions{DecodeSteps: 8})
	out, _ := doTrim(t, src, trim.Options{Decode: 1})
	top := func(data []byte) (map[string]json.RawMessage, []json.RawMessage) {
		var doc map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(data, &doc))
		var evs []map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(doc["traceEvents"], &evs))
		var meta []json.RawMessage
		for _, e := range evs {
			if string(e["ph"]) == `"M"` {
				b, _ := json.Marshal(e)
				meta = append(meta, b)
			}
		}
		delete(doc, "traceEvents")
		return doc, meta
	}
	srcTop, srcMeta := top(src)
	outTop, outMeta := top(out)
	require.Equal(t, srcTop, outTop)
	require.Contains(t, srcTop, "baseTimeNanoseconds")
	require.Contains(t, srcTop, "deviceProperties")
	require.NotEmpty(t, srcMeta)
	require.Equal(t, srcMeta, outMeta)
	require.Equal(t, read(t, src).Device, read(t, out).Device)
}

// A time window keeps what overlaps it, and the launches (graph launches
// included) of the GPU work it keeps.
func TestTrimWindow(t *testing.T) {
	t.Parallel()
	src := generate(t, synth.GenerateOptions{DecodeSteps: 12})
	full := read(t, src)
	// The GPU span of step 5, on the trace's clock as written.
	st := full.Steps[5]
	w := trim.Window{StartNS: st.Start - full.BaseNS, EndNS: st.End - full.BaseNS}
	out, res := doTrim(t, src, trim.Options{Window: &w})
	require.Empty(t, res.Steps)
	cut := read(t, out)
	var want []string
	for i := range full.Kernels {
		k := &full.Kernels[i]
		if k.Start < st.End && k.End() >= st.Start {
			want = append(want, full.NameOf(k))
		}
	}
	var got []string
	for i := range cut.Kernels {
		got = append(got, cut.KernelName(i))
	}
	require.Equal(t, want, got)
	require.Len(t, cut.Graphs, 1, "the graph launch of the replayed kernels, made before the window, is kept")
	g := int32(-1)
	for _, k := range st.Kernels {
		g = max(g, full.Kernels[k].Graph)
	}
	require.GreaterOrEqual(t, g, int32(0), "step 5 replays a graph")
	require.Len(t, cut.Graphs[0].Kernels, len(full.Graphs[g].Kernels))
}

func TestTrimErrors(t *testing.T) {
	t.Parallel()
	src := generate(t, synth.GenerateOptions{DecodeSteps: 6, PrefillSteps: 1})
	noSteps := []byte(`{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 2, "args": {"correlation": 1}}]}`)
	cases := []struct {
		name string
		data []byte
		opts trim.Options
		want []string
	}{
		{"steps past the end", src, trim.Options{Steps: &trim.StepRange{From: 5, To: 9}}, []string{"no steps 5:9", "7 steps (6 decode, 1 prefill), numbered 0 to 6"}},
		{"more decode steps than there are", src, trim.Options{Decode: 7}, []string{"7 decode steps asked for", "6 decode, 1 prefill"}},
		{"no step annotations", noSteps, trim.Options{Decode: 1}, []string{"no step annotations", "--window"}},
		{"nothing chosen", src, trim.Options{}, []string{"exactly one"}},
		{"two choices", src, trim.Options{Decode: 1, Window: &trim.Window{StartNS: 0, EndNS: 1}}, []string{"exactly one"}},
		{"not a trace", []byte(`[1, 2]`), trim.Options{Decode: 1}, []string{"byte 0", "JSON object"}},
		{"no traceEvents", []byte(`{"schemaVersion": 1}`), trim.Options{Decode: 1}, []string{"no traceEvents"}},
		{"a broken event", []byte(`{"traceEvents": [{"ph": "X", "ts": 1, }]}`), trim.Options{Decode: 1}, []string{"traceEvents[0]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := trim.Trim(context.Background(), bytes.NewReader(c.data), &bytes.Buffer{}, c.opts)
			require.Error(t, err)
			for _, w := range c.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

// A trace cut short (a killed export) gives a valid trimmed trace of what
// was read, and a warning.
func TestTrimTruncatedInput(t *testing.T) {
	t.Parallel()
	src := generate(t, synth.GenerateOptions{DecodeSteps: 10})
	// Cut inside the GPU kernels, after the step annotations.
	cutAt := bytes.Index(src, []byte(`"cat": "kernel"`)) + 5000
	out, res := doTrim(t, src[:cutAt], trim.Options{Steps: &trim.StepRange{From: 0, To: 1}})
	require.NotEmpty(t, res.Warnings)
	require.Contains(t, res.Warnings[0], "trace is truncated: input ends at byte")
	require.NotEmpty(t, read(t, out).Kernels)
}

// Reading one byte at a time (every event cut by a buffer boundary), and
// holding events in a temporary file instead of memory, change nothing.
func TestTrimSameOutputWhateverTheBuffering(t *testing.T) {
	t.Parallel()
	src := generate(t, synth.GenerateOptions{DecodeSteps: 12, PrefillSteps: 1})
	opts := trim.Options{Decode: 3}
	want, _ := doTrim(t, src, opts)
	var slow bytes.Buffer
	_, err := trim.Trim(context.Background(), iotest.OneByteReader(bytes.NewReader(src)), &slow, opts)
	require.NoError(t, err)
	require.Equal(t, string(want), slow.String())
	small := opts
	small.MemoryLimit, small.TempDir = 512, t.TempDir()
	var spilled bytes.Buffer
	_, err = trim.Trim(context.Background(), bytes.NewReader(src), &spilled, small)
	require.NoError(t, err)
	require.Equal(t, string(want), spilled.String())
	left, err := os.ReadDir(small.TempDir)
	require.NoError(t, err)
	require.Empty(t, left, "temporary files are removed")
}

func TestFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.json")
	require.NoError(t, os.WriteFile(in, generate(t, synth.GenerateOptions{DecodeSteps: 6}), 0o644))
	out := filepath.Join(dir, "out.json.gz")
	_, err := trim.File(context.Background(), in, out, false, trim.Options{Decode: 2})
	require.NoError(t, err)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, []byte{0x1f, 0x8b}, data[:2], "gzip when OUT ends in .gz")
	require.NoError(t, checkChromeTrace(data))

	_, err = trim.File(context.Background(), in, out, false, trim.Options{Decode: 2})
	require.ErrorIs(t, err, trim.ErrExists)
	require.Contains(t, err.Error(), "--force")
	_, err = trim.File(context.Background(), in, out, true, trim.Options{Decode: 1})
	require.NoError(t, err)

	// A failed trim leaves nothing behind.
	bad := filepath.Join(dir, "bad.json")
	_, err = trim.File(context.Background(), in, bad, false, trim.Options{Decode: 99})
	require.Error(t, err)
	_, statErr := os.Stat(bad)
	require.True(t, os.IsNotExist(statErr))
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		require.False(t, strings.Contains(e.Name(), ".tmp-"), "temporary file %s left", e.Name())
	}
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	r, err := trim.ParseStepRange("3:5")
	require.NoError(t, err)
	require.Equal(t, trim.StepRange{From: 3, To: 5}, r)
	for _, bad := range []string{"5:3", "3", "a:b", "-1:2", "2:2"} {
		_, err := trim.ParseStepRange(bad)
		require.Error(t, err, bad)
	}
	w, err := trim.ParseWindow("4912351267938.777:4912351285335.5")
	require.NoError(t, err)
	require.Equal(t, trim.Window{StartNS: 4912351267938777, EndNS: 4912351285335500}, w)
	for _, bad := range []string{"2:1", "1", "x:2", "1:1"} {
		_, err := trim.ParseWindow(bad)
		require.Error(t, err, bad)
	}
}

// The format check catches what viewers reject.
func TestCheckChromeTraceCatches(t *testing.T) {
	t.Parallel()
	ok := `{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 5, "dur": 2}`
	cases := []struct{ name, events, want string }{
		{"valid", ok, ""},
		{"negative dur", `{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 5, "dur": -2}`, "dur"},
		{"no ts", `{"ph": "X", "name": "a", "pid": 1, "tid": 1, "dur": 2}`, "ts"},
		{"no name", `{"ph": "X", "pid": 1, "tid": 1, "ts": 5, "dur": 2}`, "name"},
		{"flow start alone", ok + `, {"ph": "s", "id": 3, "name": "f", "cat": "c", "pid": 1, "tid": 1, "ts": 5}`, "both"},
		{"dangling flow", ok + `, {"ph": "s", "id": 3, "name": "f", "cat": "c", "pid": 1, "tid": 1, "ts": 5}, {"ph": "f", "id": 3, "name": "f", "cat": "c", "pid": 2, "tid": 1, "ts": 9, "bp": "e"}`, "binds to no slice"},
		{"bad M", `{"ph": "M", "name": "process_name", "pid": 1, "args": {}}`, "args.name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := checkChromeTrace([]byte(`{"traceEvents": [` + c.events + `]}`))
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, c.want)
		})
	}
}

// Steps whose GPU events the profiler dropped are kept, and a warning says
// so; a time window, which cuts GPU work by time, does not warn.
func TestTrimWarnsOfLostGPUEvents(t *testing.T) {
	t.Parallel()
	src := generate(t, synth.GenerateOptions{DecodeSteps: 20, GPUWindow: 10 * time.Millisecond})
	require.Empty(t, read(t, src).Steps[0].Kernels, "the profiler buffer dropped the first steps' GPU events")
	_, res := doTrim(t, src, trim.Options{Steps: &trim.StepRange{From: 0, To: 2}})
	require.Len(t, res.Warnings, 1)
	require.Contains(t, res.Warnings[0], "GPU launches of the chosen steps have no GPU event")
	kept, res := doTrim(t, src, trim.Options{Steps: &trim.StepRange{From: 18, To: 20}})
	require.Empty(t, res.Warnings)
	require.NotEmpty(t, read(t, kept).Kernels)
	full := read(t, src)
	w := trim.Window{StartNS: full.Steps[18].Start - full.BaseNS, EndNS: full.Steps[18].Start - full.BaseNS + 1000}
	_, res = doTrim(t, src, trim.Options{Window: &w})
	require.Empty(t, res.Warnings)
}
