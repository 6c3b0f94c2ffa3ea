package inventory_test

import (
	"context"
	"os"
	"path/filepath"
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
