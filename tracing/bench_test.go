package tracing_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/inflate"
	"github.com/profile-model/profile-model/tracing"
)

// The benchmarks share one generated trace: 60 decode steps of a 62-layer
// model, about 55 MB of JSON.
const benchSteps, benchLayers, benchBS = 60, 62, 8

var benchData = sync.OnceValues(func() (plain, zipped []byte) {
	var buf bytes.Buffer
	if err := bigTrace(&buf, benchSteps, benchLayers, benchBS); err != nil {
		panic(err)
	}
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.DefaultCompression)
	zw.Write(buf.Bytes())
	zw.Close()
	return buf.Bytes(), z.Bytes()
})

// The generator's truth read back: steps, batch size, kernels per step,
// graph ownership.
func TestBigTraceTruth(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	const steps, layers, bs = 7, 3, 16
	require.NoError(t, bigTrace(&buf, steps, layers, bs))
	tr, err := tracing.Read(context.Background(), &buf, "big", tracing.Options{})
	require.NoError(t, err)
	perStep := layers * len(layerKernels)
	s := tr.Summarize()
	assert.Equal(t, steps*(perStep+1), s.Kernels)
	assert.Equal(t, steps, s.GraphLaunches)
	assert.Equal(t, steps*perStep, s.KernelsReplayed)
	assert.Equal(t, map[string]int{"decode": steps}, s.Steps)
	assert.Equal(t, bs, s.DecodeBS)
	assert.Equal(t, map[string]int{strconv.Itoa(bs): steps}, s.DecodeBSHist)
	assert.Equal(t, int64(steps*(1+pythonPerStep+40+2+2+perStep+1+1+1)), s.Events)
	assert.Equal(t, "AMD Instinct MI355X", s.Device)
	assert.Empty(t, s.Warnings)
	for i, st := range tr.Steps {
		assert.Equal(t, tracing.SourceGPUAnnotation, st.Source)
		// The sampling kernel runs after the graph, outside the GPU annotation.
		assert.Len(t, st.Kernels, perStep, "step %d", i)
	}
}

// reportCPU adds the process's CPU time per operation to a benchmark (on a
// shared machine it varies less than the wall time the benchmark reports):
// call it after the setup, and call the function it returns after the loop.
func reportCPU(b *testing.B) func() {
	start, ok := processCPU()
	return func() {
		if end, ok2 := processCPU(); ok && ok2 && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

func BenchmarkScan(b *testing.B) {
	plain, _ := benchData()
	b.SetBytes(int64(len(plain)))
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		sc := tracing.NewScanner(bytes.NewReader(plain))
		n := 0
		for sc.Scan() {
			n++
		}
		if sc.Err() != nil {
			b.Fatal(sc.Err())
		}
	}
}

// BenchmarkJSONTextTokens is the alternative the scanner was measured
// against: go-json-experiment's jsontext reading every token (no decoding
// of the kept events at all), on the same bytes.
func BenchmarkJSONTextTokens(b *testing.B) {
	plain, _ := benchData()
	b.SetBytes(int64(len(plain)))
	b.ReportAllocs()
	for b.Loop() {
		dec := jsontext.NewDecoder(bytes.NewReader(plain))
		for {
			_, err := dec.ReadToken()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkLoad is the whole Load on the gzip file (SetBytes: uncompressed
// JSON bytes), with and without the read-ahead goroutine.
func BenchmarkLoad(b *testing.B) {
	plain, zipped := benchData()
	for _, c := range []struct {
		name string
		opts tracing.Options
	}{{"readahead", tracing.Options{}}, {"serial", tracing.Options{NoReadAhead: true}}} {
		b.Run("gz/"+c.name, func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := tracing.Read(context.Background(), bytes.NewReader(zipped), "bench", c.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("json", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tracing.Read(context.Background(), bytes.NewReader(plain), "bench", tracing.Options{NoReadAhead: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkGunzip is the physical floor: klauspost gzip decompression of the
// same file to io.Discard (SetBytes: uncompressed bytes, as above).
func BenchmarkGunzip(b *testing.B) {
	plain, zipped := benchData()
	b.SetBytes(int64(len(plain)))
	defer reportCPU(b)()
	for b.Loop() {
		if err := gunzip(bytes.NewReader(zipped)); err != nil {
			b.Fatal(err)
		}
	}
}

func gunzip(r io.Reader) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, zr)
	return err
}

// TestGunzipTime times plain decompression of $PROFILE_MODEL_GUNZIP (a
// large trace made by hand) for comparison with `profile-model inspect`:
// klauspost's reader handing the bytes from its window to io.Discard (the
// floor the speed targets are stated against); with
// PROFILE_MODEL_GUNZIP_BUFFERS=1 reading them into 1 MB buffers instead
// (the copy any reader pays that passes the bytes on to another
// goroutine); with PROFILE_MODEL_GUNZIP_BUFFERS=inflate this project's
// reader (internal/inflate) filling 512 KB buffers, as a trace read does.
func TestGunzipTime(t *testing.T) {
	path := os.Getenv("PROFILE_MODEL_GUNZIP")
	if path == "" {
		t.Skip("set PROFILE_MODEL_GUNZIP=trace.json.gz to time plain decompression of that file")
	}
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	start := time.Now()
	how := "klauspost gzip decompression, to io.Discard"
	readAll := func(r io.Reader, size int) error {
		buf := make([]byte, size)
		for {
			if _, err := io.ReadFull(r, buf); err != nil {
				if err == io.ErrUnexpectedEOF { // the last buffer, part full
					err = io.EOF
				}
				return err
			}
		}
	}
	switch os.Getenv("PROFILE_MODEL_GUNZIP_BUFFERS") {
	case "1":
		how = "klauspost gzip decompression, into 1 MB buffers"
		zr, err := gzip.NewReader(f)
		require.NoError(t, err)
		require.ErrorIs(t, readAll(zr, 1<<20), io.EOF)
	case "inflate":
		how = "internal/inflate, into 512 KB buffers"
		zr, err := inflate.NewReader(f)
		require.NoError(t, err)
		require.ErrorIs(t, readAll(zr, 512<<10), io.EOF)
	default:
		require.NoError(t, gunzip(f))
	}
	t.Logf("%s of %s: %v", how, path, time.Since(start))
}

// BenchmarkLoadFile loads $PROFILE_MODEL_BENCH_TRACE (for example a 1 GB
// trace from `profile-model synth --target-mb 1000`, gzip or not: plain
// JSON times the scan without decompression); SetBytes is the file's
// uncompressed size.
func BenchmarkLoadFile(b *testing.B) {
	path := os.Getenv("PROFILE_MODEL_BENCH_TRACE")
	if path == "" {
		b.Skip("set PROFILE_MODEL_BENCH_TRACE=trace.json.gz to load a large trace")
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	size, err := uncompressedSize(f)
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	// ops: as layers and kernels read it (the CPU ops kept), or as
	// inspect does.
	for _, ops := range []bool{false, true} {
		b.Run(fmt.Sprintf("ops=%v", ops), func(b *testing.B) {
			b.SetBytes(size)
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := tracing.Load(context.Background(), path, tracing.Options{Ops: ops}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGunzipFile is BenchmarkLoadFile's floor: klauspost gzip
// decompression of the same file to io.Discard.
func BenchmarkGunzipFile(b *testing.B) {
	path := os.Getenv("PROFILE_MODEL_BENCH_TRACE")
	if path == "" {
		b.Skip("set PROFILE_MODEL_BENCH_TRACE=trace.json.gz to decompress a large trace")
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	size, err := uncompressedSize(f)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	defer reportCPU(b)()
	for b.Loop() {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			b.Fatal(err)
		}
		if err := gunzip(f); err != nil {
			b.Fatal(err)
		}
	}
}

func uncompressedSize(r io.Reader) (int64, error) {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
		return io.Copy(io.Discard, br)
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return 0, err
	}
	return io.Copy(io.Discard, zr)
}

// sectionJSON repeats one Kineto-layout (indented, as ATOM's profiler
// writes it) event group n times: the sections of a trace differ in cost.
func sectionJSON(group string, n int) []byte {
	var b bytes.Buffer
	b.WriteString("{\"traceEvents\": [\n")
	for range n {
		b.WriteString(group)
	}
	b.WriteString(`  {"ph": "i", "cat": "x", "name": "end"}` + "\n]}")
	return b.Bytes()
}

// BenchmarkScanSection scans the two sections that make up most of an
// ATOM trace: Python frames (all skipped) and GPU kernels each followed
// by its flow end (the kernels kept), eager (grid, block) or replayed from
// a graph (most of a decode trace). Decompression runs at about the
// same speed on both, so the slower section bounds a pipelined Load.
func BenchmarkScanSection(b *testing.B) {
	sections := []struct{ name, group string }{
		{"python", `  {
    "ph": "X", "cat": "python_function", "name": "atom/model_engine/model_runner.py(987): prepare_inputs", "pid": 2451, "tid": 2451,
    "ts": 4912346589181.000, "dur": 15.296,
    "args": {
      "Python parent id": 3, "Python id": 4, "Python thread": 0
    }
  },
`},
		{"kernel+flow", `  {
    "ph": "X", "cat": "kernel", "name": "_ZN5aiter37dynamic_per_group_scaled_quant_kernelIDF16bDB8_Li32EEEvPT0_PfPKT_PKfiliibPKii", "pid": 2, "tid": 0,
    "ts": 4912346589279.000, "dur": 40.306,
    "args": {
      "External id": 1003, "device": 2, "stream": 0, "correlation": 50002, "kind": "Dispatch Kernel", "grid": [320, 1, 1], "block": [256, 1, 1]
    }
  },
  {
    "ph": "f", "id": 50002, "pid": 2, "tid": 0, "ts": 4912346589279.000,
    "cat": "ac2g", "name": "ac2g", "bp": "e"
  },
`},
		{"replayed kernel+flow", `  {
    "ph": "X", "cat": "kernel", "name": "_ZN5aiter45reshape_and_cache_with_per_token_quant_kernelIDF16bDB8_fLb1ELi64EEEvPKT_S4_PT0_S6_PT1_S8_PKliiiiiiii", "pid": 2, "tid": 0,
    "ts": 4912349171073.992, "dur": 5.345,
    "args": {
      "device": 2, "stream": 0, "correlation": 51707, "kind": "Dispatch Task"
    }
  },
  {
    "ph": "f", "id": 51707, "pid": 2, "tid": 0, "ts": 4912349171073.992,
    "cat": "ac2g", "name": "ac2g", "bp": "e"
  },
`},
	}
	for _, sec := range sections {
		data := sectionJSON(sec.group, 50000)
		b.Run(sec.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			defer reportCPU(b)()
			for b.Loop() {
				sc := tracing.NewScanner(bytes.NewReader(data))
				for sc.Scan() {
				}
				if sc.Err() != nil {
					b.Fatal(sc.Err())
				}
			}
		})
	}
}
