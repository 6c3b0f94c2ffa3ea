package inventory_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
)

// benchTrace generates an ATOM-style trace of 60 decode steps (about 74 000
// kernels, 110 MB of JSON) with the built-in model.
func benchTrace(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "trace.json")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := synth.Generate(context.Background(), f, synth.GenerateOptions{DecodeSteps: 60, PrefillSteps: 2, BS: 8, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkLayers compares the layer analysis with loading the same trace
// (what inspect does): the layers command costs Load plus DecodeLayers.
func BenchmarkLayers(b *testing.B) {
	path := benchTrace(b)
	tr, err := tracing.Load(context.Background(), path, tracing.Options{})
	if err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(path)
	b.Run("load", func(b *testing.B) {
		b.SetBytes(fi.Size())
		for b.Loop() {
			if _, err := tracing.Load(context.Background(), path, tracing.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, mode := range []string{inventory.ModeRobust, inventory.ModeCompat} {
		b.Run("decode-layers-"+mode, func(b *testing.B) {
			b.SetBytes(fi.Size())
			for b.Loop() {
				if _, err := inventory.DecodeLayers(context.Background(), tr, inventory.LayerOptions{Mode: mode}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(tr.Kernels))*float64(b.N)/b.Elapsed().Seconds(), "kernels/s")
		})
	}
	b.Run("inventory", func(b *testing.B) {
		b.SetBytes(fi.Size())
		for b.Loop() {
			if _, err := inventory.BuildInventory(context.Background(), tr, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// distinctTrace writes a GPU-only trace of n kernels, each with its own
// name (templated CK GEMM names, as a tuning sweep makes them, 95 bytes):
// the case where everything the inventory keeps per distinct name counts.
// With n = 10^6 it is the 212 MB file on which the kernels command's time
// and memory are measured against inspect's (docs/traces.md).
func distinctTrace(b *testing.B, n int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "distinct.json")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString("{\"schemaVersion\":1,\"traceEvents\":[\n")
	for i := range n {
		fmt.Fprintf(w, `{"ph":"X","cat":"kernel","name":"void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_%07d, 256, 128>(ck::Argument)","pid":0,"tid":7,"ts":%d,"dur":%d,"args":{"device":0,"stream":7,"correlation":%d}},`+"\n", i, 1000+10*i, 3+i%5, i+1)
	}
	w.WriteString(`{"ph":"X","cat":"kernel","name":"last","pid":0,"tid":7,"ts":1,"dur":1,"args":{"device":0,"stream":7,"correlation":0}}` + "\n]}\n")
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkDistinctNames compares the inventory of a trace of 10^5
// distinct kernel names with loading it (what inspect does), and reports
// the heap the inventory keeps per distinct name.
func BenchmarkDistinctNames(b *testing.B) {
	const n = 100_000
	path := distinctTrace(b, n)
	ctx := context.Background()
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			if _, err := tracing.Load(ctx, path, tracing.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	tr, err := tracing.Load(ctx, path, tracing.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("inventory", func(b *testing.B) {
		var inv *inventory.Inventory
		for b.Loop() {
			if inv, err = inventory.BuildInventory(ctx, tr, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(keptPerName(b, func() any { inv, _ := inventory.BuildInventory(ctx, tr, nil, nil); return inv }, inv.Kernels.Len()), "kept-B/name")
	})
	inv, err := inventory.BuildInventory(ctx, tr, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("csv", func(b *testing.B) {
		for b.Loop() {
			if err := inv.WriteKernelsCSV(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// keptPerName is the heap that what build returns holds, per name.
func keptPerName(b *testing.B, build func() any, names int) float64 {
	b.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	kept := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(names)
}
