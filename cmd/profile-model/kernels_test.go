package main

import (
	"math"
	"testing"

	"github.com/profile-model/profile-model/internal/units"
	"github.com/profile-model/profile-model/inventory"
)

// FuzzKernelJSON: a kernel row spelled by hand is what encoding/json
// writes for it, byte for byte (kernels --json stays the same document).
func FuzzKernelJSON(f *testing.F) {
	f.Add("void ck::kernel<A, 256>(ck::Argument)", "GEMM (CK dense)", "Dense GEMM (BF16)", 3, int64(7000), 7.0, 1e-7, 1e21, 0.0001399999720000056)
	f.Add("a\"b\\c\x01\xff\u2028<&>", "é", "", -1, int64(-5), math.Copysign(0, -1), 123.456, 5e-324, math.Inf(1))
	f.Add("x", "y", "z", 0, int64(1), math.NaN(), 1e20, 1e-6, 2.5e-10)
	f.Fuzz(func(t *testing.T, kernel, short, category string, count int, totalNS int64, avg, min, max, pct float64) {
		r := inventory.KernelRow{Kernel: kernel, ShortName: short, Category: category, Source: inventory.SourceRule, Provider: short + kernel,
			Kind: "kernel", Count: count, Total: units.Duration(totalNS), AvgUS: avg, MinUS: min, MaxUS: max, StdUS: avg - min, Pct: pct}
		want, wantErr := appendJSONValue(nil, &r, "    ", "  ")
		got, err := appendKernelJSON(nil, &r)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("error %v, encoding/json's %v", err, wantErr)
		}
		if string(got) != string(want) {
			t.Fatalf("row spelled\n%s\nencoding/json writes\n%s", got, want)
		}
	})
}
