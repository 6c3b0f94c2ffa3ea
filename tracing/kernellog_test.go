package tracing

import (
	"cmp"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// The varint staging gives back exactly what went in: out-of-order starts
// (Kineto's sections), negative and extreme values, repeated names.
func TestKernelLogRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "void at::native::kernel<float>(x)", "", "Memcpy HtoD"}
	var in []Kernel
	var inNames []string
	var l kernelLog
	for i := range 200_000 { // several 1 MB chunks
		name := names[rng.IntN(len(names))]
		k := Kernel{
			Start:       rng.Int64N(1<<62) - 1<<61,
			Dur:         rng.Int64N(1 << 40),
			Correlation: rng.Int64(),
			External:    -rng.Int64N(1 << 20),
			Device:      rng.Int32N(8) - 1,
			Stream:      rng.Int32(),
			Kind:        ActivityKind(rng.IntN(3)),
			Replayed:    rng.IntN(2) == 0,
			Dims:        rng.Int32N(100),
			Graph:       -1,
			Step:        -1,
		}
		if i == 7 {
			k.Start, k.Dur, k.Correlation, k.External = math.MaxInt64, math.MaxInt64, math.MinInt64, math.MaxInt64
		}
		l.add(&k, name)
		in = append(in, k)
		inNames = append(inNames, name)
	}
	const base = 1_700_000_000_000_000_000
	out, outNames, sorted := l.kernels(base)
	for i := range in {
		in[i].Start += base
	}
	if diff := gocmp.Diff(in, out); diff != "" {
		t.Fatalf("round trip differs (-in +out):\n%s", diff)
	}
	require.Len(t, outNames, len(names), "each distinct name once")
	for i := range out {
		if got := outNames[out[i].NameID]; got != inNames[i] {
			t.Fatalf("kernel %d is named %q, want %q", i, got, inNames[i])
		}
	}
	if sorted {
		t.Errorf("sorted = true for random starts")
	}
	if cap(out) != len(in) {
		t.Errorf("cap %d, want the exact size %d", cap(out), len(in))
	}
}

// The collector is off only while a decode runs, and overlapping decodes
// give the caller's GC percentage back once the last one ends.
func TestPauseGCRestores(t *testing.T) {
	// Not parallel: it sets the process's GC percentage.
	orig := debug.SetGCPercent(77)
	defer debug.SetGCPercent(orig)
	resumeA := pauseGC()
	resumeB := pauseGC()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("GC percent during a decode = %d, want -1 (off)", got)
	}
	resumeA()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("GC percent with one decode still running = %d, want -1 (off)", got)
	}
	resumeB()
	if got := debug.SetGCPercent(77); got != 77 {
		t.Fatalf("GC percent after the decodes = %d, want the caller's 77", got)
	}
}

// kernels reports whether the starts are in order, also where two chunks
// (and so two goroutines' parts) meet.
func TestKernelLogSorted(t *testing.T) {
	t.Parallel()
	const n = 300_000 // several 1 MB chunks
	// build adds n kernels with increasing starts, except that the first
	// record of chunk drop (0: none) starts before the record ahead of it.
	build := func(drop int) (l *kernelLog, chunks int) {
		l = &kernelLog{}
		start := int64(0)
		for i := range n {
			newChunk := i > 0 && cap(l.cur)-len(l.cur) < 10*binary.MaxVarintLen64
			if newChunk {
				chunks++
			}
			start += 1000
			if newChunk && chunks == drop {
				start -= 1500
			}
			l.add(&Kernel{Start: start, Graph: -1, Step: -1}, "k")
		}
		return l, chunks + 1
	}
	l, chunks := build(0)
	require.GreaterOrEqual(t, chunks, 3, "the test needs several chunks")
	_, _, sorted := l.kernels(0)
	require.True(t, sorted, "increasing starts")
	for drop := 1; drop < chunks; drop++ {
		l, _ := build(drop)
		out, _, sorted := l.kernels(0)
		require.False(t, sorted, "a start out of order at the head of chunk %d of %d", drop, chunks)
		require.False(t, slices.IsSortedFunc(out, func(a, b Kernel) int { return cmp.Compare(a.Start, b.Start) }))
	}
}

// BenchmarkOpLog: a dense serving trace's ops (170k, collected) against
// its kernels (1M, six per op, resolved and each kernel's op looked up).
func BenchmarkOpLog(b *testing.B) {
	names := []string{"aten::mm", "aiter::fp8_quant", "triton_op"}
	collect := func() *opLog {
		var l opLog
		for i := range 170_000 {
			l.add(int64(1000+i), names[i%len(names)])
		}
		return &l
	}
	b.Run("add", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			collect()
		}
	})
	b.Run("resolve", func(b *testing.B) {
		l := collect()
		ks := make([]Kernel, 1_000_000)
		for i := range ks {
			ks[i].External = int64(1000 + i/6)
		}
		b.ReportAllocs()
		for b.Loop() {
			x := l.resolve(ks)
			found := 0
			for i := range ks {
				if x.id(ks[i].External) >= 0 {
					found++
				}
			}
			if found != len(ks) {
				b.Fatalf("%d of %d kernels found their op", found, len(ks))
			}
		}
	})
}

// The op index answers alike from its table (ids close together) and its
// sorted list (ids far apart): the last op read under an id wins, an id
// no op carries and id 0 find none.
func TestOpIndexDenseAndSparse(t *testing.T) {
	for _, spread := range []int64{1, 1 << 40} {
		var l opLog
		ext := func(i int64) int64 { return 100 + i*spread }
		l.add(ext(0), "aten::addmm")
		l.add(ext(1), "aten::linear") // around the mm below, another id
		l.add(ext(2), "aten::mm")
		l.add(ext(2), "aten::mm_inner") // the same id again: the later wins
		l.add(ext(5), "not launching")
		ks := []Kernel{{External: ext(2)}, {External: ext(0)}, {External: 0}, {External: ext(3)}, {External: ext(2)}}
		x := l.resolve(ks)
		require.Equal(t, spread == 1, x.byExt != nil, "spread %d: table or list", spread)
		name := func(e int64) string {
			if id := x.id(e); id >= 0 {
				return x.names[id]
			}
			return ""
		}
		require.Equal(t, "aten::mm_inner", name(ext(2)))
		require.Equal(t, "aten::addmm", name(ext(0)))
		require.Equal(t, "", name(ext(3)), "no op under this id")
		require.Equal(t, "", name(0))
		require.Equal(t, "", name(ext(9)), "beyond the kernels' ids")
		require.Equal(t, "", name(-5))
	}
	var none opLog
	empty := none.resolve([]Kernel{{External: 7}})
	require.Equal(t, int32(-1), empty.id(7))
}

// BenchmarkRecordDecode: the decode of the varint logs, the last step of a
// load, on a dense serving trace's counts (1M kernels, 170k launches) with
// realistic deltas. Run it with -cpu 1: the kernel decode splits across
// GOMAXPROCS cores.
func BenchmarkRecordDecode(b *testing.B) {
	names := []string{"void at::native::kernel<float>(x)", "Memcpy HtoD", "fmoe_int8", "hipLaunchKernel"}
	rng := rand.New(rand.NewPCG(7, 8))
	var kl kernelLog
	var ll launchLog
	start := int64(0)
	for i := range 1_000_000 {
		start += 1 + rng.Int64N(5000)
		k := Kernel{Start: start, Dur: 1 + rng.Int64N(200_000), Correlation: int64(i), External: int64(i / 6),
			Stream: int32(i % 3), Dims: 256, Kind: ActivityKind(i % 3)}
		kl.add(&k, names[i%3])
		if i%6 == 0 {
			ll.add(&runtimeLaunch{Name: names[3], Start: start - 100, Dur: 5 + rng.Int64N(20), Correlation: int64(i),
				External: int64(i / 6), PID: 4242, TID: 4243, Graph: i%60 == 0})
		}
	}
	kl.flush()
	ll.flush()
	b.Run("kernels", func(b *testing.B) {
		out := make([]Kernel, kl.n) // as kernels makes it, outside the loop: the decode alone
		for b.Loop() {
			if !kl.decode(out, slices.Clone(kl.chunks), 0) {
				b.Fatal("the starts are in order")
			}
		}
	})
	// launches releases its log: each round decodes a copy whose chunk
	// list is its own (the chunks themselves are only read).
	b.Run("launches", func(b *testing.B) {
		for b.Loop() {
			l := ll
			l.chunks = slices.Clone(ll.chunks)
			if out := l.launches(0); len(out) != ll.n {
				b.Fatalf("%d launches", len(out))
			}
		}
	})
}
