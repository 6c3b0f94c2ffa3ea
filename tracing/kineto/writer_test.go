package kineto

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/profile-model/profile-model/internal/units"
)

// microsToNS parses Kineto's "<µs>.<3 decimals>" text exactly.
func microsToNS(t *testing.T, n json.Number) int64 {
	t.Helper()
	s := string(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, ok := strings.Cut(s, ".")
	if !ok || len(frac) != 3 {
		t.Fatalf("timestamp %q does not have exactly three decimals", n)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	f, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	v := w*1000 + f
	if neg {
		v = -v
	}
	return v
}

type testTrace struct {
	SchemaVersion int              `json:"schemaVersion"`
	Devices       []map[string]any `json:"deviceProperties"`
	Base          int64            `json:"baseTimeNanoseconds"`
	TraceName     string           `json:"traceName"`
	Unit          string           `json:"displayTimeUnit"`
	Roctracer     json.Number      `json:"roctracer_version"`
	Distributed   map[string]any   `json:"distributedInfo"`
	Events        []struct {
		Ph   string          `json:"ph"`
		Cat  string          `json:"cat"`
		Name string          `json:"name"`
		PID  json.RawMessage `json:"pid"`
		TID  json.RawMessage `json:"tid"`
		TS   json.Number     `json:"ts"`
		Dur  json.Number     `json:"dur"`
		ID   int64           `json:"id"`
		BP   string          `json:"bp"`
		S    string          `json:"s"`
		Args map[string]any  `json:"args"`
	} `json:"traceEvents"`
}

func writeTrace(t *testing.T, opts WriterOptions, evs []Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		if err := w.WriteEvent(&evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Events() != int64(len(evs)) {
		t.Fatalf("Events() = %d, want %d", w.Events(), len(evs))
	}
	return buf.Bytes()
}

func decodeTrace(t *testing.T, data []byte) *testTrace {
	t.Helper()
	var tr testTrace
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&tr); err != nil {
		t.Fatalf("output is not valid JSON: %v\n%s", err, data)
	}
	return &tr
}

func TestWriterExactTimestamps(t *testing.T) {
	t.Parallel()
	const base = 1775078550000000000
	// 19-digit absolute times whose nanoseconds a float64 cannot hold.
	times := []int64{base + 4909914216204635123, base + 1, base, base - 1500, base + 999, base + 4909914216204000000}
	for _, metaFirst := range []bool{false, true} {
		var evs []Event
		for i, ts := range times {
			evs = append(evs, Event{Ph: 'X', Cat: "kernel", Name: "k" + strconv.Itoa(i), PID: 2, TID: 0, TS: ts, Dur: units.Duration(i*1001 + 7)})
		}
		data := writeTrace(t, WriterOptions{BaseTimeNS: base, MetaFirst: metaFirst, TraceName: "t", Devices: []DeviceProperties{MI355X(0)}, RoctracerVersion: "4.1", WorldSize: 1}, evs)
		tr := decodeTrace(t, data)
		if tr.Base != base || tr.TraceName != "t" || tr.Unit != "ms" || tr.SchemaVersion != 1 {
			t.Errorf("metaFirst=%v: header/footer = base %d name %q unit %q schema %d", metaFirst, tr.Base, tr.TraceName, tr.Unit, tr.SchemaVersion)
		}
		if len(tr.Devices) != 1 || tr.Devices[0]["name"] != "AMD Instinct MI355X" || tr.Roctracer.String() != "4.1" || tr.Distributed["world_size"] == nil {
			t.Errorf("metaFirst=%v: device/ROCm header = %v %v %v", metaFirst, tr.Devices, tr.Roctracer, tr.Distributed)
		}
		if len(tr.Events) != len(times) {
			t.Fatalf("events = %d, want %d", len(tr.Events), len(times))
		}
		for i, e := range tr.Events {
			if got := microsToNS(t, e.TS) + base; got != times[i] {
				t.Errorf("event %d: ts %s → %d ns, want %d", i, e.TS, got, times[i])
			}
			if got := microsToNS(t, e.Dur); got != int64(i*1001+7) {
				t.Errorf("event %d: dur %s → %d ns, want %d", i, e.Dur, got, i*1001+7)
			}
		}
		idx := bytes.Index(data, []byte(`"baseTimeNanoseconds"`))
		ev := bytes.Index(data, []byte(`"traceEvents"`))
		if metaFirst != (idx < ev) {
			t.Errorf("metaFirst=%v: baseTimeNanoseconds at %d, traceEvents at %d", metaFirst, idx, ev)
		}
	}
}

func TestWriterEscapingAndKinds(t *testing.T) {
	t.Parallel()
	names := []string{
		`void at::native::f<"quoted">(\back\slash)`,
		"tab\tnewline\nreturn\rbell\x07nul\x00",
		"ünïcødé → 漢字 😀",
		"bad utf8 \xff\xfe end",
		"",
	}
	var evs []Event
	for i, n := range names {
		evs = append(evs, Event{Ph: 'X', Cat: "kernel", Name: n, PID: 2, TS: int64(i) * 1000, Dur: 1000, Args: []Arg{
			IntArg("correlation", int64(i)), StrArg("kind", n), IntsArg("grid", []int64{1, 2, 3}), NullArg("Python parent id"),
		}})
	}
	evs = append(evs,
		Event{Ph: 's', Cat: "ac2g", Name: "ac2g", ID: 77, PID: 2451, TID: 2451, TS: 5000},
		Event{Ph: 'f', Cat: "ac2g", Name: "ac2g", ID: 77, PID: 2, TID: 0, TS: 6000, BP: "e"},
		Event{Ph: 'M', Name: "process_name", PID: 2, TS: 0, Args: []Arg{StrArg("name", "python3")}},
		Event{Ph: 'i', Name: "Record Window End", Scope: "g", PIDName: "Traces", TIDName: "Trace PyTorch Profiler", TS: 7000},
		Event{Ph: 'X', Cat: "Trace", Name: "PyTorch Profiler (0)", PIDName: "Spans", TIDName: "PyTorch Profiler", TS: 0, Dur: 7000},
		Event{Ph: 'i', Name: "Record Window End", Scope: "g", StrIDs: true, TS: 8000},
	)
	tr := decodeTrace(t, writeTrace(t, WriterOptions{}, evs))
	for i, n := range names {
		want := string([]rune(n)) // each invalid byte becomes U+FFFD, as encoding/json does
		if tr.Events[i].Name != want || tr.Events[i].Args["kind"] != want {
			t.Errorf("name %d = %q (arg %q), want %q", i, tr.Events[i].Name, tr.Events[i].Args["kind"], want)
		}
		a := tr.Events[i].Args
		if g, ok := a["grid"].([]any); !ok || len(g) != 3 || a["Python parent id"] != nil {
			t.Errorf("args %d = %v", i, a)
		}
	}
	s, f := tr.Events[len(names)], tr.Events[len(names)+1]
	if s.Ph != "s" || s.ID != 77 || f.Ph != "f" || f.BP != "e" || f.ID != 77 {
		t.Errorf("flow events = %+v %+v", s, f)
	}
	m := tr.Events[len(names)+2]
	if m.Ph != "M" || m.Args["name"] != "python3" {
		t.Errorf("metadata event = %+v", m)
	}
	in := tr.Events[len(names)+3]
	if in.Ph != "i" || in.S != "g" || string(in.PID) != `"Traces"` || string(in.TID) != `"Trace PyTorch Profiler"` {
		t.Errorf("instant event = %+v (pid %s tid %s)", in, in.PID, in.TID)
	}
	if we := tr.Events[len(names)+5]; string(we.PID) != `""` || string(we.TID) != `""` {
		t.Errorf("empty string ids written as pid %s tid %s", we.PID, we.TID)
	}
	sp := tr.Events[len(names)+4]
	if string(sp.PID) != `"Spans"` || microsToNS(t, sp.Dur) != 7000 {
		t.Errorf("span event = %+v", sp)
	}
}

func TestWriterGzip(t *testing.T) {
	t.Parallel()
	evs := []Event{{Ph: 'X', Cat: "kernel", Name: "k", PID: 2, TS: 123456789, Dur: 4321}}
	data := writeTrace(t, WriterOptions{Gzip: true}, evs)
	if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		t.Fatalf("gzip output does not start with the gzip magic: % x", data[:min(len(data), 4)])
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	tr := decodeTrace(t, plain)
	if len(tr.Events) != 1 || microsToNS(t, tr.Events[0].TS) != 123456789 {
		t.Errorf("gzip round trip: %+v", tr.Events)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n -= len(p); f.n < 0 {
		return 0, io.ErrShortWrite
	}
	return len(p), nil
}

func TestWriterReportsWriteErrors(t *testing.T) {
	t.Parallel()
	w, err := NewWriter(&failWriter{n: 4096}, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := Event{Ph: 'X', Cat: "kernel", Name: strings.Repeat("k", 1000), TS: 1, Dur: 1}
	for range 2000 {
		if err = w.WriteEvent(&ev); err != nil {
			break
		}
	}
	if err == nil {
		err = w.Close()
	}
	if err == nil {
		t.Fatal("writing 2 MB to a writer that accepts 4 KB reported no error")
	}
}

// BenchmarkWriter measures the writer alone on kernel-like events with the
// long template names of real ROCm kernels (b.SetBytes: uncompressed output).
func BenchmarkWriter(b *testing.B) {
	name := "ck::kernel_moe_gemm<ck::GridwiseMoeGemmBlockScale<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, ck::Tuple<ck::tensor_layout::gemm::RowMajor>, ck::f8_fnuz_t, float>::Argument)"
	args := []Arg{IntArg("device", 2), IntArg("stream", 0), IntArg("correlation", 123456), StrArg("kind", "Dispatch Task")}
	for _, gz := range []bool{false, true} {
		b.Run("gzip="+strconv.FormatBool(gz), func(b *testing.B) {
			var cw countWriter
			w, err := NewWriter(&cw, WriterOptions{Gzip: gz, BaseTimeNS: 1775078550000000000})
			if err != nil {
				b.Fatal(err)
			}
			ev := Event{Ph: 'X', Cat: "kernel", Name: name, PID: 2, Args: args}
			var one, none countWriter
			pw, _ := NewWriter(&one, WriterOptions{})
			_ = pw.WriteEvent(&ev)
			_ = pw.Close()
			pw, _ = NewWriter(&none, WriterOptions{})
			_ = pw.Close()
			b.SetBytes(one.n - none.n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ev.TS = 1775078550000000000 + 4909914216204635 + int64(i)*7000
				ev.Dur = 5123
				if err := w.WriteEvent(&ev); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// FuzzAppendJSONString: any string is written as valid JSON that decodes to
// the string with each invalid UTF-8 byte replaced by U+FFFD.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", `q"b\s`, "\x00\x1f\x7f", "é漢😀", "\xff\xfe", "a\u2028b", strings.Repeat("ck::Sequence<16, 16, 1>", 10)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var w Writer
		for range 2 { // the second pass may come from the escape cache
			b := w.appendStr(nil, s)
			var got string
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("%q written as %q: %v", s, b, err)
			}
			if want := string([]rune(s)); got != want {
				t.Fatalf("%q decodes to %q, want %q", s, got, want)
			}
		}
	})
}
