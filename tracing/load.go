package tracing

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/inflate"
	"github.com/profile-model/profile-model/internal/jsonscan"
)

// Options tune Load and Read.
type Options struct {
	// NoReadAhead decompresses and scans on one goroutine (benchmarks
	// compare the two).
	NoReadAhead bool
	// Progress, when set, is called now and then with the input bytes
	// read (compressed bytes for gzip) and the input's size (-1 when
	// unknown: Read of a stream), and once at the end.
	Progress func(done, total int64)
	// Ops keeps the names of the CPU ops that launched kernels
	// (Trace.LaunchOp, which categories use); it costs parse time on traces
	// with many CPU ops, so only the analyses that categorise ask for it.
	Ops bool
}

// Load reads the trace file at path (JSON or gzip) into a Trace.
func Load(ctx context.Context, path string, opts Options) (*Trace, error) {
	f, err := jsonscan.OpenFile(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("opening trace: %w", err)
	}
	defer f.Close()
	size := int64(-1)
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	return read(ctx, f, path, opts, size)
}

// Read reads a trace from r; name is used in messages and as Trace.Path.
// A truncated trace gives the analysis of what was read plus a warning, or
// an error when no kernel was read.
func Read(ctx context.Context, r io.Reader, name string, opts Options) (*Trace, error) {
	return read(ctx, r, name, opts, -1)
}

func read(ctx context.Context, r io.Reader, name string, opts Options, size int64) (*Trace, error) {
	defer jsonscan.InterruptOnCancel(ctx, r)()
	in := &countingReader{r: r}
	sc, closeFn, err := openScanner(ctx, in, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	closed := false
	closeScan := func() {
		if !closed {
			closed = true
			closeFn()
			sc.dropBuffers()
		}
	}
	defer closeScan()
	sc.KeepOps = opts.Ops
	var b builder
	if err := collect(ctx, sc, &b, in, opts, size); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	warnings, te, err := scanOutcome(sc, &b, name)
	if err != nil {
		return nil, err
	}
	// The input buffers are not needed past the scan: give them back
	// before the kernels are decoded (the peak of memory).
	for _, w := range sc.Warnings() {
		w.Message = name + ": " + w.Message
		warnings = append(warnings, w)
	}
	kernels := b.klog.n
	closeScan()
	t := b.finish(sc, name, te != nil)
	if te != nil {
		msg := fmt.Sprintf("%s; analysed the %d kernels read before the cut", te.Error(), kernels)
		if c := t.Coverage; c.StepsWithoutKernels > 0 {
			// A cut loses the events written last, often the kernels of
			// the last steps: that is not a profiler buffer drop.
			msg += fmt.Sprintf("; %d of %d steps have no kernels, probably because their GPU events were past the cut (not a profiler buffer drop)", c.StepsWithoutKernels, c.Steps)
		}
		warnings = append([]diag.Warning{diag.New(diag.Truncated, msg)}, warnings...)
	}
	t.Warnings = append(warnings, t.Warnings...)
	return t, nil
}

// collect adds every kept event to b, reporting progress; it stops early
// only when ctx is cancelled.
func collect(ctx context.Context, sc *scanner, b *builder, in *countingReader, opts Options, size int64) error {
	for n := 0; sc.Scan(); n++ {
		if n&4095 == 0 {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if opts.Progress != nil {
				opts.Progress(in.n.Load(), size)
			}
		}
		b.add(sc.Event())
	}
	if opts.Progress != nil {
		done := in.n.Load()
		if sc.Err() == nil && size >= 0 {
			done = size // the stream was read to its end
		}
		opts.Progress(done, size)
	}
	return ctx.Err()
}

// scanOutcome says what the end of the scan means: an error that stops
// the analysis, or warnings (a bad gzip trailer after complete JSON) and,
// for a cut trace with kernels before the cut, the truncation.
func scanOutcome(sc *scanner, b *builder, name string) ([]diag.Warning, *jsonscan.TruncatedError, error) {
	var warnings []diag.Warning
	err := sc.Err()
	var te *jsonscan.TruncatedError
	var tre *jsonscan.TrailerError
	if errors.As(err, &tre) && errors.Is(tre.Err, inflate.ErrChecksum) {
		// The checksum says the bytes read are not the bytes written: an
		// event may be wrong (one flipped bit moved a kernel's time), so
		// nothing is analysed, on every command alike.
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	if errors.As(err, &tre) {
		// The JSON is complete: analyse it, and say the file is bad.
		warnings = append(warnings, diag.New(diag.Trailer, fmt.Sprintf("%s: %s", name, tre.Error())))
		err = nil
	}
	if err != nil {
		if !errors.As(err, &te) {
			var se *jsonscan.SyntaxError
			if errors.As(err, &se) && se.Event >= 0 {
				return nil, nil, fmt.Errorf("%s: %w (the trace is corrupt from there on: export it again)", name, err)
			}
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		if b.klog.n == 0 {
			return nil, nil, fmt.Errorf("%s: %w; no GPU kernel was read before the cut, so there is nothing to analyse", name, err)
		}
	} else if sc.Events() == 0 {
		return nil, nil, fmt.Errorf("%s: traceEvents is empty: the profiler recorded nothing (was the workload run between start and stop of the profiler?)", name)
	}
	return warnings, te, nil
}

// openScanner detects gzip and, unless disabled, moves decompression to a
// read-ahead goroutine.
func openScanner(ctx context.Context, r io.Reader, opts Options) (*scanner, func(), error) {
	if opts.NoReadAhead {
		s := newScanner(r)
		return s, func() {}, s.err
	}
	// The first bytes (gzip or not) are read on a goroutine: a pipe that
	// sends nothing must not hold Ctrl-C up.
	in, err := jsonscan.Await(ctx, func() (input, error) {
		src, cnt, mem, err := openInput(r)
		return input{src, cnt, mem}, err
	})
	if err != nil {
		return nil, nil, err
	}
	ra := jsonscan.NewReadAhead(ctx, in.src)
	return newScannerFrom(ra, in.cnt, in.mem), ra.Close, nil
}

// input is a trace's source as openInput found it.
type input struct {
	src io.Reader
	cnt *countingReader
	mem *gzipMembers
}

// builder collects the kept events of one pass.
type builder struct {
	klog     kernelLog
	dimList  []launchDims
	dimIndex map[launchDims]int32
	launches launchLog
	anns     []annotation
	// frames are the engine's step-function Python frames, kept apart
	// from the annotations and without their names (all a step needs is
	// where and when); lastFrame is the last one kept on each track: one
	// nested in it (a recursive call, a frame the stack records again) is
	// not kept, as the outermost one delimits the step.
	frames    []stepFrame
	lastFrame map[[2]int64]stepFrame
	engine    string // the engine whose source file a step-function frame names
	ops       opLog
	legacy    bool // 2021 category names seen
	cuda      bool
	hip       bool
	fracTS    bool // timestamps with decimals
	minTS     int64
	maxTS     int64
	any       bool
	// For the checks of impossible times: the events with the first and
	// the last start, and the longest kernel.
	minIdx, maxStart, maxStartIdx int64
	maxDur, maxDurIdx             int64
}

func (b *builder) span(start, end, idx int64) {
	if !b.any || start < b.minTS {
		b.minTS, b.minIdx = start, idx
	}
	if !b.any || end > b.maxTS {
		b.maxTS = end
	}
	if !b.any || start > b.maxStart {
		b.maxStart, b.maxStartIdx = start, idx
	}
	b.any = true
}

// dims interns a launch geometry.
func (b *builder) dims(grid, block [3]int32) int32 {
	d := launchDims{grid, block}
	if d == (launchDims{}) {
		return 0
	}
	if b.dimIndex == nil {
		b.dimIndex = map[launchDims]int32{}
		b.dimList = []launchDims{{}}
	}
	i, ok := b.dimIndex[d]
	if !ok {
		i = int32(len(b.dimList))
		b.dimList = append(b.dimList, d)
		b.dimIndex[d] = i
	}
	return i
}

func (b *builder) add(ev *traceEvent) {
	switch ev.Type {
	case eventKernel, eventMemcpy, eventMemset:
		k := Kernel{
			Start: ev.TS, Dur: ev.Dur, Correlation: ev.Correlation,
			External: ev.External, Device: ev.Device, Stream: ev.Stream,
			Replayed: ev.Replay, Graph: -1, Step: -1, Dims: b.dims(ev.Grid, ev.Block),
		}
		if k.Device < 0 {
			k.Device = int32(ev.PID)
		}
		if k.Stream < 0 {
			k.Stream = int32(ev.TID)
		}
		switch ev.Type {
		case eventMemcpy:
			k.Kind = KindMemcpy
		case eventMemset:
			k.Kind = KindMemset
		}
		if ev.Cat == "Kernel" || ev.Cat == "Memcpy" || ev.Cat == "Memset" {
			b.legacy = true
		}
		if ev.TS%1000 != 0 {
			b.fracTS = true
		}
		if ev.Dur > b.maxDur {
			b.maxDur, b.maxDurIdx = ev.Dur, ev.Index
		}
		b.klog.add(&k, ev.Name)
	case eventLaunch:
		b.launches.add(&runtimeLaunch{
			Name: ev.Name, Start: ev.TS, Dur: ev.Dur, Correlation: ev.Correlation,
			External: ev.External, PID: ev.PID, TID: ev.TID, Graph: ev.Graph,
		})
		switch {
		case strings.HasPrefix(ev.Name, "hip"):
			b.hip = true
		case strings.HasPrefix(ev.Name, "cu"):
			b.cuda = true
		}
		if ev.Cat == "Runtime" {
			b.legacy = true
		}
	case eventOp:
		b.ops.add(ev.External, ev.Name)
		return // CPU ops do not widen the trace's span
	case eventAnnotation, eventGPUAnnotation:
		if ev.Cat == "python_function" {
			b.stepFrame(ev)
			break
		}
		b.anns = append(b.anns, annotation{
			Name: ev.Name, Start: ev.TS, Dur: ev.Dur, GPU: ev.Type == eventGPUAnnotation,
			PID: ev.PID, TID: ev.TID, External: ev.External,
		})
	}
	b.span(ev.TS, ev.TS+ev.Dur, ev.Index)
}

// stepFrame keeps the step-function frame ev unless it lies inside the
// last one kept on its track.
func (b *builder) stepFrame(ev *traceEvent) {
	if b.engine == "" {
		b.engine = engineOfFrame(ev.Name)
	}
	f := stepFrame{Start: ev.TS, Dur: ev.Dur, PID: ev.PID, TID: ev.TID}
	tr := [2]int64{ev.PID, ev.TID}
	if last, ok := b.lastFrame[tr]; ok && f.Start >= last.Start && f.Start+f.Dur <= last.Start+last.Dur {
		return
	}
	if b.lastFrame == nil {
		b.lastFrame = map[[2]int64]stepFrame{}
	}
	b.lastFrame[tr] = f
	b.frames = append(b.frames, f)
}

// kernels decodes the kernel log. A large one is decoded, and the garbage
// collected, with the collector paused (see kernelLog.kernels): resumed
// before the forced collection, the collector's trigger would start a
// cycle of its own first, and runtime.GC would wait for it and then run a
// second one.
func (b *builder) kernels(base int64) ([]Kernel, []string, bool) {
	if b.klog.n < 1<<16 {
		return b.klog.kernels(base)
	}
	defer pauseGC()()
	// The kernel log and the input buffers are garbage after the decode,
	// about as large as what the steps and graphs allocate next: collected
	// then, their memory is reused for them instead of adding to the peak
	// (about 10 MB less on a 1 GB trace, for one collection of a few ms).
	defer runtime.GC()
	return b.klog.kernels(base)
}

// finish turns the collected events into a Trace.
func (b *builder) finish(sc *scanner, name string, truncated bool) *Trace {
	h := sc.Header()
	base := int64(0)
	if h.HasBase {
		// Kineto writes ts relative to baseTimeNanoseconds (it comes after
		// traceEvents, so it is added here; the decode adds it to kernels).
		base = h.BaseNS
	}
	t := &Trace{
		Path:        name,
		Events:      sc.Events(),
		ByCat:       sc.Categories(),
		Meta:        h.Meta,
		Dims:        b.dimList,
		Annotations: b.anns,
		stepFrames:  b.frames,
		Engine:      b.engine,
	}
	// Everything here runs after the scan, so on the critical path: the
	// launches are decoded, and they and the annotations moved to the base
	// time and sorted, on another core while the kernels are decoded,
	// sorted and named (on a dense serving trace, 224k launches beside a
	// million kernels).
	var wg sync.WaitGroup
	wg.Go(func() {
		t.Launches = b.launches.launches(base)
		for i := range t.Annotations {
			t.Annotations[i].Start += base
		}
		for i := range t.stepFrames {
			t.stepFrames[i].Start += base
		}
		sortByStart(t.Launches, func(l *runtimeLaunch) int64 { return l.Start })
		sortByStart(t.Annotations, func(a *annotation) int64 { return a.Start })
		sortByStart(t.stepFrames, func(f *stepFrame) int64 { return f.Start })
	})
	kernels, names, sorted := b.kernels(base)
	t.Kernels, t.Names = kernels, names
	if t.Dims == nil {
		t.Dims = []launchDims{{}}
	}
	for _, d := range h.Devices {
		if d != "" {
			t.Device = d
			break
		}
	}
	if h.HasBase {
		t.BaseNS = h.BaseNS
		b.minTS += h.BaseNS
		b.maxTS += h.BaseNS
		b.maxStart += h.BaseNS
	}
	// The 2021 CPU-op category is read from the category counts: CPU ops
	// are skipped unread unless Options.Ops asks for them, and the era
	// must not depend on that.
	b.legacy = b.legacy || t.ByCat["Operator"] > 0
	t.Vendor, t.Era = b.era(h)
	if !sorted {
		sortByStart(t.Kernels, func(k *Kernel) int64 { return k.Start })
	}
	t.ops = b.ops.resolve(t.Kernels)
	b.ops = opLog{}
	idx := newCorrIndex(t.Kernels)
	wg.Wait()
	linkGraphs(t, idx)
	segmentSteps(t, idx)
	decodeBS(t)
	ws, we, steps := measureCoverage(t, b.minTS, b.maxTS, truncated)
	b.checkTimes(t, ws, we, steps)
	classifyTrace(t, idx)
	if len(t.Kernels) == 0 {
		t.Warnings = append(t.Warnings, diag.New(diag.NoKernels, "no GPU kernels in the trace: was the profiler started with CUDA/ROCm activities (ProfilerActivity.CUDA)?"))
	}
	return t
}

// sortByStart sorts stably by start time. Kineto writes each section in
// time order, so one section (a single GPU stream) is often sorted
// already, and a CPU thread's launches nearly are (a dense serving trace:
// 140 descents in 25k launches, each a few places back): insertion sort,
// which is stable, puts those right in about one pass. Past a budget of
// moves the general stable sort takes over; insertion keeps equal starts
// in their order, so the result is the same either way.
func sortByStart[T any](s []T, start func(*T) int64) {
	budget := len(s)/8 + 64
	for i := 1; i < len(s); i++ {
		x := start(&s[i])
		if x >= start(&s[i-1]) {
			continue
		}
		j := i - 1
		for j > 0 && start(&s[j-1]) > x {
			j--
		}
		if budget -= i - j; budget < 0 {
			slices.SortStableFunc(s, func(x, y T) int { return cmp.Compare(start(&x), start(&y)) })
			return
		}
		v := s[i]
		copy(s[j+1:i+1], s[j:i])
		s[j] = v
	}
}

// era names the format era and vendor from the trace's keys and arguments.
func (b *builder) era(h *traceHeader) (vendor, era string) {
	_, rocm := h.Meta["roctracer_version"]
	_, hipRT := h.Meta["hip_runtime_version"]
	sdk := false
	for k := range h.Meta {
		if strings.Contains(k, "rocprofiler") {
			sdk = true
		}
	}
	_, cupti := h.Meta["cupti_version"]
	_, cudaRT := h.Meta["cuda_runtime_version"]
	backend := ""
	switch {
	case sdk:
		vendor, backend = "amd", "rocprofiler-sdk"
	case rocm || hipRT || b.hip:
		vendor, backend = "amd", "roctracer"
	case cupti || cudaRT || b.cuda:
		vendor, backend = "nvidia", "cupti"
	}
	switch {
	case b.legacy:
		era = "legacy-2021"
	case h.HasBase:
		era = "kineto-relative-ts"
	case b.fracTS:
		era = "kineto-absolute-ns"
	default:
		era = "kineto-absolute-us"
	}
	if backend != "" {
		era += "/" + backend
	}
	return vendor, era
}

// LaunchIndex maps correlation ids to indices into t.Launches: the runtime
// call that launched a kernel is t.Launches[idx[k.Correlation]] (for a
// replayed kernel, its graph launch). Build it once and keep it.
func (t *Trace) LaunchIndex() map[int64]int32 {
	m := make(map[int64]int32, len(t.Launches))
	for i := range t.Launches {
		if c := t.Launches[i].Correlation; c != 0 {
			m[c] = int32(i)
		}
	}
	return m
}

// corrIndex finds kernels by correlation id: kernel indices sorted by
// (correlation, index). It costs 4 bytes a kernel, unlike a map.
type corrIndex []int32

func newCorrIndex(ks []Kernel) corrIndex {
	idx := make(corrIndex, 0, len(ks))
	for i := range ks {
		if ks[i].Correlation != 0 {
			idx = append(idx, int32(i))
		}
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if c := cmp.Compare(ks[a].Correlation, ks[b].Correlation); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return idx
}

// of returns the kernels with correlation c, in start order.
func (idx corrIndex) of(ks []Kernel, c int64) []int32 {
	if c == 0 {
		return nil
	}
	lo, _ := slices.BinarySearchFunc(idx, c, func(i int32, c int64) int { return cmp.Compare(ks[i].Correlation, c) })
	hi := lo
	for hi < len(idx) && ks[idx[hi]].Correlation == c {
		hi++
	}
	return idx[lo:hi]
}

// linkGraphs groups replayed kernels under their graph launch: a
// graph launch owns every kernel that shares its correlation id.
func linkGraphs(t *Trace, idx corrIndex) {
	for li := range t.Launches {
		l := &t.Launches[li]
		if !l.Graph {
			continue
		}
		g := int32(len(t.Graphs))
		ks := idx.of(t.Kernels, l.Correlation)
		owned := make([]int32, 0, len(ks))
		for _, k := range ks {
			if t.Kernels[k].Graph >= 0 {
				continue
			}
			t.Kernels[k].Graph = g
			t.Kernels[k].Replayed = true
			owned = append(owned, k)
		}
		t.Graphs = append(t.Graphs, graphLaunch{Launch: *l, Kernels: owned})
	}
}
