package synth

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/units"
	"github.com/profile-model/profile-model/profiling/kernelmodel"
	"github.com/profile-model/profile-model/tracing"
	"github.com/profile-model/profile-model/tracing/kineto"
)

// Step is one engine step as an engine ran it: the simulated engine's
// scheduler (or Generate) decides its kind, batch, tokens and start, a
// kernelmodel.Model prices its kernels, and a Recorder writes it. It is the
// engine's own account, exact and complete; tracing.Step is what a trace
// shows of a step once read back.
type Step struct {
	Kind   tracing.StepKind // tracing.StepDecode, tracing.StepPrefill or tracing.StepMixed
	BS     int              // sequences in the step
	Tokens int              // tokens processed: prompt tokens for prefill, BS for decode, both for mixed
	// PrefillSeqs is how many of a mixed step's BS sequences prefill (the
	// others decode one token each); labelled decode[bs=N tok=T p=P d=D].
	PrefillSeqs int
	// Contexts are the sequences' context lengths, for the ctx= field of
	// prefill and eager labels; nil: ContextTokens split evenly.
	Contexts      []int
	ContextTokens int // KV-cache length summed over the sequences, this step's tokens included
	// Start is when the step's GPU work begins, on the trace clock
	// (nanoseconds since the Unix epoch).
	Start int64
	// Kernels are what the step ran, from Model.DecodeStep or PrefillStep;
	// Record keeps a packed copy.
	Kernels []kernelmodel.KernelRun
	// Eager marks a decode step run without graph replay: every kernel is
	// launched eagerly and, as older ATOM releases do, the step is labelled
	// prefill[bs=N tok=N ...].
	Eager bool
	// PaddedBS is the captured graph batch a replayed decode step ran at
	// (the real batch padded up to the next capture size), labelled
	// decode[bs=R/G ...] as newer ATOM releases do; 0: not padded.
	PaddedBS int
	// EagerOverflow marks a decode step that newer ATOM releases run eagerly
	// and label eager_decode[...]: its batch exceeds every captured graph,
	// or graphs are off (--enforce-eager).
	EagerOverflow bool
	// Piecewise marks a step as vLLM writes it with piecewise graphs: no
	// step annotation at all, and a decode step replayed as one graph
	// launch per run of forward kernels between the attention kernels
	// (SectionAttention), which are launched eagerly.
	Piecewise bool
	// PieceGap (piecewise steps) is host time before each graph piece
	// after the first, so that the GPU idles between pieces as long as
	// between steps (a fast GPU waits on the host for every piece).
	PieceGap int64
}

// RecorderOptions configures a Recorder.
type RecorderOptions struct {
	// Model is the served model name; the trace file name uses its base name
	// with unsafe characters replaced by '_', as ATOM does.
	Model string
	// GPUWindow, when positive, drops GPU events (kernels, their flow ends,
	// GPU annotations) of every step that starts more than GPUWindow before
	// the last GPU event ends, as a full profiler buffer does. The cut falls
	// on a step boundary, so each step is either whole or has no GPU events,
	// unless GPUWindowExact.
	GPUWindow time.Duration
	// GPUWindowExact cuts at the exact time instead, as a real buffer does:
	// the step at the cut keeps only its later kernels.
	GPUWindowExact bool
	// PythonPerStep is the number of python_function events per step
	// (default 3000: as in a real trace recorded with stacks, they are most
	// of its events). Negative: none.
	PythonPerStep int
	// Rank is the TP rank (the rank_<r> directory).
	Rank int
	// Gzip level for WriteATOM (default klauspost BestSpeed).
	GzipLevel int
	// BufferBytes bounds the GPU activity records the profiler holds, as
	// Kineto's activity buffer does (KINETO_BUFFER_SIZE_MB): each kernel
	// and each step's GPU annotation takes gpuRecordBytes. When a step does
	// not fit, the GPU events of the oldest steps are dropped until it does
	// (their CPU side stays: annotations, launches, Python frames), so the
	// trace shows steps without kernels, as a real buffer overflow does.
	// 0: unbounded.
	BufferBytes int64
	// LegacyLabels writes step labels as ATOM releases of early 2026 did
	// (decode[bs=N tok=N p=0 d=N], prefill[bs=N tok=T p=N d=0], and eager
	// decodes labelled prefill[...]); by default they are written as
	// current releases' run_labels.py does.
	LegacyLabels bool
}

// gpuRecordBytes is what one GPU activity record (a kernel, a memory copy,
// a GPU annotation) takes in the profiler's buffer, as RecorderOptions.BufferBytes
// counts it: about the size of Kineto's activity record with its name.
const gpuRecordBytes = 256

// Recorder collects the steps an engine runs while profiling and writes them
// as an ATOM-style Kineto trace. It is safe for concurrent use.
//
// Each step is laid out on the trace clock when it is recorded, so that its
// kernels can be dropped later (a full buffer) without moving the steps
// after it; per-kernel times are recomputed when the trace is written.
type Recorder struct {
	opts   RecorderOptions
	mu     sync.Mutex
	start  int64 // trace clock, ns; 0: not started
	stop   int64
	steps  []Step        // Kernels nil: kept packed in kernels
	packed [][]kernelRec // per step
	pl     []placed      // per step
	strs   []string      // interned names
	strIdx map[string]int32

	prevEnd, ext, corr int64  // layout state after the last step
	scratch            kplace // per-kernel layout of the step being recorded
	kbuf               []kernelmodel.KernelRun
	bufUsed            int64 // bytes of GPU records held
	oldest             int   // first step whose GPU records are held
	droppedSteps       int
	droppedRecs        int64
}

// kernelRec is a kernelmodel.KernelRun packed for storage (a long profile records
// millions): names interned, small fields narrowed.
type kernelRec struct {
	dur                 units.Duration
	gap                 int32
	name, short, launch int32
	layer, pos          int16
	layerKind, stream   uint8
	section             kernelmodel.Section
}

func (r *Recorder) intern(s string) int32 {
	if i, ok := r.strIdx[s]; ok {
		return i
	}
	if r.strIdx == nil {
		r.strIdx = map[string]int32{}
	}
	r.strs = append(r.strs, s)
	r.strIdx[s] = int32(len(r.strs) - 1)
	return int32(len(r.strs) - 1)
}

func (r *Recorder) pack(runs []kernelmodel.KernelRun) []kernelRec {
	out := make([]kernelRec, len(runs))
	for i := range runs {
		k := &runs[i]
		out[i] = kernelRec{
			dur: k.Dur, gap: int32(min(k.Gap, math.MaxInt32)),
			name: r.intern(k.Name), short: r.intern(k.ShortName), launch: r.intern(k.Launch),
			layer: int16(k.Layer), pos: int16(k.Pos), layerKind: uint8(k.LayerKind), stream: uint8(k.Stream), section: k.Section,
		}
	}
	return out
}

// expand unpacks step i's kernels into buf.
func (r *Recorder) expand(i int, buf []kernelmodel.KernelRun) []kernelmodel.KernelRun {
	buf = buf[:0]
	for _, k := range r.packed[i] {
		buf = append(buf, kernelmodel.KernelRun{
			Name: r.strs[k.name], ShortName: r.strs[k.short], Launch: r.strs[k.launch],
			Dur: k.dur, Gap: units.Duration(k.gap), Section: k.section,
			Layer: int(k.layer), Pos: int(k.pos), LayerKind: int(k.layerKind), Stream: int(k.stream),
		})
	}
	return buf
}

// NewRecorder returns an empty Recorder.
func NewRecorder(opts RecorderOptions) *Recorder {
	if opts.PythonPerStep == 0 {
		opts.PythonPerStep = 3000
	}
	if opts.PythonPerStep < 0 {
		opts.PythonPerStep = 0
	}
	return &Recorder{opts: opts, ext: 1000, corr: 50000}
}

// Start marks the start of the profiled window (torch profiler start) at
// trace time at (ns since the Unix epoch).
func (r *Recorder) Start(at int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.start = at
}

// Record adds one executed step.
func (r *Recorder) Record(s Step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.start == 0 {
		r.start = s.Start
	}
	r.packed = append(r.packed, r.pack(s.Kernels))
	s.Kernels = nil
	r.steps = append(r.steps, s)
	i := len(r.steps) - 1
	p := placed{label: stepLabel(&s, r.opts.LegacyLabels), ext0: r.ext, corr0: r.corr}
	r.kbuf = r.expand(i, r.kbuf)
	r.ext, r.corr = place(&s, r.kbuf, max(s.Start, r.prevEnd+hostGapNS), r.ext, r.corr, &p, &r.scratch)
	r.prevEnd = p.stepEnd
	p.gpuRecs = int64(len(r.kbuf) + 1)
	r.pl = append(r.pl, p)
	if b := r.opts.BufferBytes; b > 0 {
		need := p.gpuRecs * gpuRecordBytes
		for r.bufUsed+need > b && r.oldest < i {
			r.dropGPU(r.oldest)
			r.oldest++
		}
		if r.bufUsed+need > b {
			r.dropGPU(i) // the step alone does not fit
			r.oldest = i + 1
		} else {
			r.bufUsed += need
		}
	}
}

// dropGPU drops step i's GPU records. Only the kernels that the CPU side
// needs stay: those launched eagerly, for their launch events, and the
// first kernel of each replayed graph, for its graph launch.
func (r *Recorder) dropGPU(i int) {
	p := &r.pl[i]
	if p.bufDropped {
		return
	}
	r.bufUsed = max(r.bufUsed-p.gpuRecs*gpuRecordBytes, 0)
	p.bufDropped = true
	r.droppedSteps++
	r.droppedRecs += p.gpuRecs
	eager := r.steps[i].eagerForward()
	var keep []kernelRec
	inGraph := false
	for _, k := range r.packed[i] {
		switch {
		case eager || k.section != kernelmodel.SectionForward:
			if k.section == kernelmodel.SectionAttention {
				inGraph = false
			}
			keep = append(keep, k)
		case !inGraph:
			inGraph = true
			keep = append(keep, k)
		}
	}
	r.packed[i] = keep
}

// Dropped reports what a full buffer (RecorderOptions.BufferBytes) dropped
// so far: steps that lost their GPU events and the GPU records lost.
func (r *Recorder) Dropped() (steps int, records int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.droppedSteps, r.droppedRecs
}

// Stop marks the end of the profiled window at trace time at.
func (r *Recorder) Stop(at int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stop = at
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// TraceFileName is ATOM's trace file name for model at time t:
// <model basename, unsafe characters → _>_ts_<YYYYmmdd_HHMMSS>_<ms>.pt.trace.json.gz.
func TraceFileName(model string, t time.Time) string {
	base := model
	if i := strings.LastIndexByte(strings.TrimRight(base, "/"), '/'); i >= 0 {
		base = strings.TrimRight(base, "/")[i+1:]
	}
	base = unsafeName.ReplaceAllString(base, "_")
	if base == "" {
		base = "model"
	}
	return fmt.Sprintf("%s_ts_%s_%03d.pt.trace.json.gz", base, t.Format("20060102_150405"), t.Nanosecond()/1e6)
}

// WriteATOM writes the trace as ATOM does at stop: into
// <dir>/rank_<r>/TraceFileName(model, now), first as the .json, then gzipped
// to the .json.gz, and the .json removed. It returns the .gz path and the
// truth of what it wrote.
func (r *Recorder) WriteATOM(ctx context.Context, dir string, now time.Time) (string, *Truth, error) {
	rankDir := filepath.Join(dir, fmt.Sprintf("rank_%d", r.opts.Rank))
	if err := os.MkdirAll(rankDir, 0o755); err != nil {
		return "", nil, fmt.Errorf("writing trace: %w", err)
	}
	gzPath := filepath.Join(rankDir, TraceFileName(r.opts.Model, now))
	jsonPath := strings.TrimSuffix(gzPath, ".gz")
	var truth *Truth
	err := atomicfile.WriteFunc(jsonPath, func(w io.Writer) error {
		var err error
		truth, err = r.WriteTrace(ctx, w, kineto.WriterOptions{TraceName: jsonPath})
		return err
	})
	if err != nil {
		return "", nil, err
	}
	err = atomicfile.WriteFunc(gzPath, func(w io.Writer) error {
		in, err := os.Open(jsonPath)
		if err != nil {
			return err
		}
		defer in.Close()
		level := r.opts.GzipLevel
		if level == 0 {
			level = gzip.BestSpeed
		}
		gz, err := gzip.NewWriterLevel(w, level)
		if err != nil {
			return err
		}
		if _, err := io.Copy(gz, ctxReader{ctx, in}); err != nil {
			return err
		}
		return gz.Close()
	})
	if err != nil {
		return "", nil, err
	}
	if err := os.Remove(jsonPath); err != nil {
		return "", nil, fmt.Errorf("writing trace: %w", err)
	}
	return gzPath, truth, nil
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Trace identities, as a roctracer-era trace on a two-socket MI355X node
// shows them: the GPU's pid is its HSA agent index (CPU agents first).
const (
	cpuPID      = 2451
	cpuTID      = 2451
	gpuPID      = 2
	mainStream  = 0
	sideStream  = 1
	bootAgoNS   = 4_912_345_678_000_000 // relative timestamps ~4.9e12 µs, as real traces show
	hostGapNS   = 40_000
	launchDurNS = 4_000
)

// placed is a step laid out on the trace clock.
type placed struct {
	cpuStart, cpuEnd int64 // the step annotation on the CPU
	stepEnd          int64 // when the host moves on (after syncing on the sampler)
	firstExt         int64 // External id of the step annotation
	ext0, corr0      int64 // External and correlation ids before the step
	gpuStart, gpuEnd int64 // prep + forward kernels
	lastStart        int64 // the latest kernel start
	gpuRecs          int64 // GPU records: kernels and the GPU annotation
	bufDropped       bool  // GPU events dropped by a full buffer (BufferBytes)
	dropped          bool  // GPU events dropped (buffer or GPUWindow)
	cut              int64 // GPU events starting before this were dropped (exact cut); 0 none
	label            string
}

// kplace is the per-kernel part of a step's layout, as its Kernels, and
// its graph launches.
type kplace struct {
	starts        []int64 // kernel start times
	launches      []int64 // eager launch times (0 for replayed kernels)
	corrs         []int64 // correlation ids (replayed kernels: the graph launch's)
	exts          []int64 // External ids (0 for replayed kernels)
	graphLaunches []int64 // hipGraphLaunch times, none when eager
	graphCorrs    []int64 // their correlation ids
}

func (kp *kplace) reset(n int) {
	grow := func(s []int64) []int64 {
		if cap(s) < n {
			return make([]int64, n)
		}
		s = s[:n]
		clear(s)
		return s
	}
	kp.starts, kp.launches, kp.corrs, kp.exts = grow(kp.starts), grow(kp.launches), grow(kp.corrs), grow(kp.exts)
	kp.graphLaunches, kp.graphCorrs = kp.graphLaunches[:0], kp.graphCorrs[:0]
}

func (s *Step) eagerForward() bool {
	return s.Kind != tracing.StepDecode || s.Eager || s.EagerOverflow
}

// stepLabel writes a step's annotation as ATOM's run_labels.py does: the
// graph path decode[bs=R[/G] tok=T [p=P ]d=D], the eager path
// prefill[...] / eager_decode[bs=N tok=T ctx=...]; an Eager step keeps the
// older releases' prefill[...] label in both forms.
func stepLabel(s *Step, legacy bool) string {
	if s.Piecewise {
		return "" // vLLM writes no step annotation
	}
	if legacy {
		switch {
		case s.Kind == tracing.StepDecode && s.Eager:
			return fmt.Sprintf("prefill[bs=%d tok=%d p=%d d=0]", s.BS, s.Tokens, s.BS)
		case s.Kind == tracing.StepDecode && s.EagerOverflow:
			return fmt.Sprintf("eager_decode[bs=%d tok=%d p=0 d=%d]", s.BS, s.Tokens, s.BS)
		case s.Kind == tracing.StepDecode && s.PaddedBS > 0:
			return fmt.Sprintf("decode[bs=%d/%d tok=%d p=0 d=%d]", s.BS, s.PaddedBS, s.Tokens, s.BS)
		case s.Kind == tracing.StepDecode:
			return fmt.Sprintf("decode[bs=%d tok=%d p=0 d=%d]", s.BS, s.Tokens, s.BS)
		case s.Kind == tracing.StepMixed:
			return fmt.Sprintf("decode[bs=%d tok=%d p=%d d=%d]", s.BS, s.Tokens, s.PrefillSeqs, s.BS-s.PrefillSeqs)
		default:
			return fmt.Sprintf("%s[bs=%d tok=%d p=%d d=0]", s.Kind, s.BS, s.Tokens, s.BS)
		}
	}
	b := make([]byte, 0, 64)
	graph := func(kind string, p, d int) string {
		b = append(b, kind...)
		b = append(b, "[bs="...)
		b = strconv.AppendInt(b, int64(s.BS), 10)
		if s.PaddedBS > s.BS {
			b = append(b, '/')
			b = strconv.AppendInt(b, int64(s.PaddedBS), 10)
		}
		b = append(b, " tok="...)
		b = strconv.AppendInt(b, int64(s.Tokens), 10)
		if p > 0 {
			b = append(b, " p="...)
			b = strconv.AppendInt(b, int64(p), 10)
		}
		b = append(b, " d="...)
		b = strconv.AppendInt(b, int64(d), 10)
		return string(append(b, ']'))
	}
	eager := func(kind string) string {
		b = append(b, kind...)
		b = append(b, "[bs="...)
		b = strconv.AppendInt(b, int64(s.BS), 10)
		b = append(b, " tok="...)
		b = strconv.AppendInt(b, int64(s.Tokens), 10)
		b = append(b, " ctx="...)
		b = appendCtx(b, s)
		return string(append(b, ']'))
	}
	switch {
	case s.Kind == tracing.StepMixed:
		return graph("decode", s.PrefillSeqs, s.BS-s.PrefillSeqs)
	case s.Kind == tracing.StepDecode && s.Eager:
		return eager("prefill")
	case s.Kind == tracing.StepDecode && s.EagerOverflow:
		return eager("eager_decode")
	case s.Kind == tracing.StepDecode:
		return graph("decode", 0, s.BS)
	default:
		return eager(string(s.Kind))
	}
}

// appendCtx writes the ctx= value as ATOM prints its context-length
// tensor: one value bare, up to five as a list, more as the first three
// and "...+K".
func appendCtx(b []byte, s *Step) []byte {
	n := max(s.BS, 1)
	at := func(i int) int {
		if i < len(s.Contexts) {
			return s.Contexts[i]
		}
		return s.ContextTokens / n
	}
	if n == 1 {
		return strconv.AppendInt(b, int64(at(0)), 10)
	}
	show := n
	if n > 5 {
		show = 3
	}
	b = append(b, '[')
	for i := range show {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, int64(at(i)), 10)
	}
	b = append(b, ']')
	if show < n {
		b = append(b, "...+"...)
		b = strconv.AppendInt(b, int64(n-3), 10)
	}
	return b
}

// place lays step s with kernels ks out on the trace clock from cpu, its
// External and correlation ids following ext and corr, into p and kp; it
// returns the ids after the step. Steps never overlap, the GPU runs one
// stream in order (plus an overlapping side stream), and every eager
// kernel starts after its launch.
func place(s *Step, ks []kernelmodel.KernelRun, cpu, ext, corr int64, p *placed, kp *kplace) (int64, int64) {
	p.cpuStart = cpu
	ext++
	p.firstExt = ext
	cur := cpu + 60_000 // scheduling and input preparation on the host
	n := len(ks)
	kp.reset(n)
	gpu := cur
	var lastMainStart, side int64
	place := func(k int, notBefore int64) {
		kr := &ks[k]
		if kr.Stream != 0 {
			st := max(lastMainStart+int64(kr.Gap), side)
			kp.starts[k] = st
			side = st + int64(kr.Dur)
			return
		}
		st := max(gpu+int64(kr.Gap), notBefore)
		kp.starts[k] = st
		lastMainStart = st
		gpu = st + int64(kr.Dur)
	}
	eager := s.eagerForward()
	// Prep and (eager) forward kernels: one launch each, 2-8 µs apart.
	firstGPU := true
	for k := range ks {
		kr := &ks[k]
		if kr.Section == kernelmodel.SectionSample || (!eager && (kr.Section == kernelmodel.SectionForward || kr.Section == kernelmodel.SectionAttention)) {
			continue
		}
		cur += launchDurNS + 3_000
		kp.launches[k] = cur
		ext++
		corr++
		kp.exts[k], kp.corrs[k] = ext, corr
		place(k, cur+5_000)
		if firstGPU {
			p.gpuStart = kp.starts[k]
			firstGPU = false
		}
	}
	if !eager {
		// One graph launch for the forward pass, or (piecewise) one per
		// run of forward kernels, the attention between them eager.
		pieces := 0
		launchGraph := func() int64 {
			if pieces > 0 && s.PieceGap > 0 {
				// The host is the bottleneck: it launches the piece
				// only after the GPU ran out of work.
				cur = max(cur, gpu) + s.PieceGap
			}
			pieces++
			cur += 10_000
			corr++
			kp.graphLaunches = append(kp.graphLaunches, cur)
			kp.graphCorrs = append(kp.graphCorrs, corr)
			gpu = max(gpu, cur+15_000)
			cur += 45_000 // hipGraphLaunch returns
			return corr
		}
		var piece int64
		for k := range ks {
			switch ks[k].Section {
			case kernelmodel.SectionForward:
				if piece == 0 {
					piece = launchGraph()
				}
				kp.corrs[k] = piece
				place(k, 0)
			case kernelmodel.SectionAttention:
				piece = 0
				cur += launchDurNS + 3_000
				kp.launches[k] = cur
				ext++
				corr++
				kp.exts[k], kp.corrs[k] = ext, corr
				place(k, cur+5_000)
			default:
				continue
			}
			if firstGPU {
				p.gpuStart = kp.starts[k]
				firstGPU = false
			}
		}
	}
	p.gpuEnd = max(gpu, side)
	p.cpuEnd = cur + 5_000
	// The sampler: launched after the annotation, runs after the forward pass.
	cur = p.cpuEnd + 10_000
	for k := range ks {
		if ks[k].Section == kernelmodel.SectionSample {
			cur += launchDurNS + 3_000
			kp.launches[k] = cur
			ext++
			corr++
			kp.exts[k], kp.corrs[k] = ext, corr
			place(k, cur+5_000)
		}
	}
	if firstGPU {
		p.gpuStart, p.gpuEnd = cur, cur
	}
	p.stepEnd = max(gpu, side, cur) + 30_000 // the host syncs on the sampled tokens
	p.lastStart = 0
	for _, st := range kp.starts {
		p.lastStart = max(p.lastStart, st)
	}
	return ext, corr
}

// kernelsAt unpacks step i's kernels into ks and lays them out into kp as
// they were when the step was recorded.
func (r *Recorder) kernelsAt(i int, ks []kernelmodel.KernelRun, kp *kplace) []kernelmodel.KernelRun {
	ks = r.expand(i, ks)
	p := &r.pl[i]
	var tmp placed
	place(&r.steps[i], ks, p.cpuStart, p.ext0, p.corr0, &tmp, kp)
	return ks
}

// applyWindow marks the steps whose GPU events a full profiler buffer lost.
func (r *Recorder) applyWindow(pl []placed) {
	for i := range pl {
		pl[i].dropped, pl[i].cut = pl[i].bufDropped, 0
	}
	if r.opts.GPUWindow <= 0 || len(pl) == 0 {
		return
	}
	var last int64
	for i := range pl {
		last = max(last, pl[i].stepEnd)
	}
	cut := last - r.opts.GPUWindow.Nanoseconds()
	for i := range pl {
		p := &pl[i]
		if !r.opts.GPUWindowExact {
			p.dropped = p.dropped || p.gpuStart < cut
			continue
		}
		p.dropped = p.dropped || p.lastStart < cut
		if !p.dropped && p.gpuStart < cut {
			p.cut = cut
		}
	}
}

// WriteTrace writes the recorded steps as a Kineto trace (plain JSON unless
// opts.Gzip) and returns the truth of what it wrote. Device, base time and
// ROCm header keys are filled in when opts leaves them empty.
func (r *Recorder) WriteTrace(ctx context.Context, w io.Writer, opts kineto.WriterOptions) (*Truth, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pl := r.pl
	r.applyWindow(pl)
	rocmDefaults(&opts, r.opts.Rank)
	first := r.start
	if len(pl) > 0 && (first == 0 || pl[0].cpuStart < first) {
		first = pl[0].cpuStart
	}
	if first == 0 { // nothing recorded and no start: a fixed date
		first = defaultStart.UnixNano()
	}
	if opts.BaseTimeNS == 0 {
		opts.BaseTimeNS = (first - bootAgoNS) / 1e9 * 1e9
	}
	if opts.TraceID == "" {
		opts.TraceID = fmt.Sprintf("%016X%016X", uint64(first), uint64(len(r.steps))*0x9E3779B97F4A7C15)
	}
	tw, err := kineto.NewWriter(w, opts)
	if err != nil {
		return nil, err
	}
	e := &emitter{r: r, tw: tw, pl: pl, ctx: ctx}
	e.all(first)
	if e.err != nil {
		return nil, e.err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	t := r.truth(pl)
	t.Events, t.JSONBytes = tw.Events(), tw.Bytes()
	return t, nil
}

// emitter writes the sections of a trace in Kineto's order: CPU ops and
// annotations, Python frames, runtime calls with flow starts, GPU activities
// with flow ends, GPU annotations, then metadata.
type emitter struct {
	r     *Recorder
	tw    *kineto.Writer
	pl    []placed
	ctx   context.Context
	ev    kineto.Event
	err   error
	n     int
	order []int32
	kbuf  []kernelmodel.KernelRun
	kp    kplace
}

// kernels unpacks step i's kernels and their layout into the emitter's buffers.
func (e *emitter) kernels(i int) ([]kernelmodel.KernelRun, *kplace) {
	e.kbuf = e.r.kernelsAt(i, e.kbuf, &e.kp)
	return e.kbuf, &e.kp
}

func (e *emitter) emit() {
	if e.err != nil {
		return
	}
	if e.n++; e.n%4096 == 0 {
		if err := e.ctx.Err(); err != nil {
			e.err = err
			return
		}
	}
	e.err = e.tw.WriteEvent(&e.ev)
}

func (e *emitter) x(cat, name string, pid, tid, ts, dur int64) {
	e.ev = kineto.Event{Ph: 'X', Cat: cat, Name: name, PID: pid, TID: tid, TS: ts, Dur: units.Duration(dur), Args: e.ev.Args[:0]}
}

func (e *emitter) arg(a kineto.Arg) { e.ev.Args = append(e.ev.Args, a) }

func (e *emitter) all(first int64) {
	steps := e.r.steps
	// 1. CPU ops and user annotations.
	for i := range steps {
		e.cpuOps(i)
	}
	// 2. Python frames.
	for i := range steps {
		e.python(i)
	}
	// 3. Runtime calls.
	for i := range steps {
		e.runtime(i)
	}
	// 4. GPU activities.
	for i := range steps {
		if !e.pl[i].dropped {
			e.gpu(i)
		}
	}
	// 5. GPU annotations.
	for i := range steps {
		p := &e.pl[i]
		if p.dropped || p.gpuEnd <= p.gpuStart || p.gpuStart < p.cut || p.label == "" {
			continue
		}
		e.x("gpu_user_annotation", p.label, gpuPID, mainStream, p.gpuStart, p.gpuEnd-p.gpuStart)
		e.arg(kineto.IntArg("External id", p.firstExt))
		e.emit()
	}
	// 6. Metadata, the profiler span and the window end.
	last := first
	if n := len(e.pl); n > 0 {
		last = e.pl[n-1].stepEnd
	}
	if e.r.stop != 0 {
		last = max(last, e.r.stop)
	}
	meta := func(name string, pid, tid int64, v kineto.Arg) {
		e.ev = kineto.Event{Ph: 'M', Name: name, PID: pid, TID: tid, TS: first, Args: e.ev.Args[:0]}
		e.arg(v)
		e.emit()
	}
	meta("process_name", cpuPID, 0, kineto.StrArg("name", "python3"))
	meta("process_labels", cpuPID, 0, kineto.StrArg("labels", "CPU"))
	meta("process_sort_index", cpuPID, 0, kineto.IntArg("sort_index", cpuPID))
	for g := int64(0); g < 10; g++ {
		meta("process_name", g, 0, kineto.StrArg("name", "python3"))
		meta("process_labels", g, 0, kineto.StrArg("labels", "GPU "+strconv.FormatInt(g, 10)))
		meta("process_sort_index", g, 0, kineto.IntArg("sort_index", 5000000+g))
	}
	meta("thread_name", gpuPID, mainStream, kineto.StrArg("name", "stream 0 "))
	meta("thread_sort_index", gpuPID, mainStream, kineto.IntArg("sort_index", mainStream))
	meta("thread_name", gpuPID, sideStream, kineto.StrArg("name", "stream 1 "))
	meta("thread_sort_index", gpuPID, sideStream, kineto.IntArg("sort_index", sideStream))
	meta("thread_name", cpuPID, cpuTID, kineto.StrArg("name", "thread "+strconv.Itoa(cpuTID)+" (python3)"))
	meta("thread_sort_index", cpuPID, cpuTID, kineto.IntArg("sort_index", cpuTID))
	e.ev = kineto.Event{Ph: 'X', Cat: "Trace", Name: "PyTorch Profiler (0)", PIDName: "Spans", TIDName: "PyTorch Profiler", TS: first, Dur: units.Duration(last - first), Args: e.ev.Args[:0]}
	e.arg(kineto.IntArg("Op count", 0))
	e.emit()
	e.ev = kineto.Event{Ph: 'M', Name: "process_sort_index", PIDName: "Spans", TS: first, Args: e.ev.Args[:0]}
	e.arg(kineto.IntArg("sort_index", 536870912))
	e.emit()
	e.ev = kineto.Event{Ph: 'i', Name: "Iteration Start: PyTorch Profiler", Scope: "g", PIDName: "Traces", TIDName: "Trace PyTorch Profiler", TS: first}
	e.emit()
	e.ev = kineto.Event{Ph: 'i', Name: "Record Window End", Scope: "g", StrIDs: true, TS: last + 1000}
	e.emit()
}

// cpuOpName is the operator that launches a kernel eagerly.
func cpuOpName(k *kernelmodel.KernelRun) string {
	switch {
	case k.Launch == "hipMemcpyAsync":
		return "aten::copy_"
	case strings.HasPrefix(k.Name, "Cijk_"):
		return "aten::mm"
	case strings.HasPrefix(k.Name, "triton_"):
		return "triton_op"
	case strings.Contains(k.Name, "mix_sample"):
		return "aiter::mixed_sample_outer_exponential"
	case strings.Contains(k.Name, "fmha_fwd"):
		return "aiter::mha_varlen_fwd"
	case strings.Contains(k.Name, "fmoe_"):
		return "aiter::fmoe_fp8_blockscale_g1u1"
	case strings.Contains(k.Name, "moe_gemm"), strings.Contains(k.Name, "MoeSorting"):
		return "aiter::moe_sorting_fwd"
	}
	return "aiter::" + shortOp(k.ShortName)
}

func shortOp(s string) string {
	if s == "" {
		return "custom_op"
	}
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	return strings.Trim(b.String(), "_")
}

func (e *emitter) cpuOps(i int) {
	ks, kp := e.kernels(i)
	p := &e.pl[i]
	if p.label != "" {
		e.x("user_annotation", p.label, cpuPID, cpuTID, p.cpuStart, p.cpuEnd-p.cpuStart)
		e.arg(kineto.IntArg("External id", p.firstExt))
		e.arg(kineto.IntArg("Record function id", 0))
		e.emit()
	}
	for k := range ks {
		if kp.launches[k] == 0 {
			continue
		}
		kr := &ks[k]
		e.x("cpu_op", cpuOpName(kr), cpuPID, cpuTID, kp.launches[k]-2_000, launchDurNS+3_000)
		e.arg(kineto.IntArg("External id", kp.exts[k]))
		e.arg(kineto.IntArg("Record function id", 0))
		e.emit()
	}
}

var pyFrames = []string{
	"atom/model_engine/engine_core.py(318): busy_loop",
	"atom/model_engine/engine_core.py(352): step",
	"atom/model_engine/model_runner.py(1208): forward", // once per step: the model runner's step
	"torch/utils/_contextlib.py(120): decorate_context",
	"atom/model_engine/scheduler.py(214): schedule",
	"atom/model_engine/model_runner.py(987): prepare_inputs",
	"atom/utils/forward_context.py(141): set_forward_context",
	"<built-in method tolist of Tensor object at 0x7f3c2e5a1b70>",
	"atom/model_engine/sequence.py(96): append_token",
	"atom/model_engine/block_manager.py(77): may_append",
	"<built-in method item of Tensor object at 0x7f3c2e5a1c10>",
	"atom/model_ops/sampler.py(58): forward",
	"torch/nn/modules/module.py(1775): _call_impl",
	"torch/nn/modules/module.py(1764): _wrapped_call_impl",
	"<built-in function len>",
	"atom/model_engine/scheduler.py(301): postprocess",
}

// vllmFrames are a vLLM V1 worker's frames: the worker's execute_model
// around the model runner's is one engine step.
var vllmFrames = [...]string{
	"vllm/v1/engine/core.py(284): step",
	"vllm/v1/worker/gpu_worker.py(447): execute_model",
	"vllm/v1/worker/gpu_model_runner.py(2210): execute_model",
	"vllm/v1/worker/gpu_model_runner.py(1602): _prepare_inputs",
	"vllm/forward_context.py(237): set_forward_context",
	"vllm/compilation/cuda_graph.py(183): __call__",
	"<built-in method tolist of Tensor object at 0x7f3c2e5a1b70>",
	"vllm/v1/sample/sampler.py(65): forward",
	"torch/nn/modules/module.py(1775): _call_impl",
	"vllm/v1/core/sched/scheduler.py(812): update_from_output",
}

// python writes the step's Python frames: a few frames spanning the step and
// many short calls under them.
func (e *emitter) python(i int) {
	n := e.r.opts.PythonPerStep
	if n == 0 {
		return
	}
	p := &e.pl[i]
	start, end := p.cpuStart-20_000, p.stepEnd-5_000
	id := int64(i)*int64(n+8) + 1
	frame := func(name string, ts, dur, parent int64) int64 {
		e.x("python_function", name, cpuPID, cpuTID, ts, dur)
		if parent == 0 {
			e.arg(kineto.NullArg("Python parent id"))
		} else {
			e.arg(kineto.IntArg("Python parent id", parent))
		}
		e.arg(kineto.IntArg("Python id", id))
		e.arg(kineto.IntArg("Python thread", 0))
		e.emit()
		id++
		return id - 1
	}
	frames := pyFrames[:]
	if e.r.steps[i].Piecewise {
		frames = vllmFrames[:]
	}
	top := frame(frames[0], start, end-start, 0)
	top = frame(frames[1], start+500, end-start-1000, top)
	top = frame(frames[2], start+900, end-start-1800, top)
	leaves := n - 3
	if leaves <= 0 {
		return
	}
	span := (end - start - 2000) / int64(leaves)
	for j := 0; j < leaves; j++ {
		ts := start + 1000 + int64(j)*span
		frame(frames[3+j%(len(frames)-3)], ts, max(span*3/4, 1), top)
	}
}

func (e *emitter) runtime(i int) {
	ks, kp := e.kernels(i)
	for k := range ks {
		if kp.launches[k] == 0 {
			continue
		}
		kr := &ks[k]
		ts := kp.launches[k]
		e.x("cuda_runtime", kr.Launch, cpuPID, cpuTID, ts, launchDurNS)
		e.arg(kineto.IntArg("External id", kp.exts[k]))
		if kr.Launch != "hipMemcpyAsync" {
			e.arg(kineto.StrArg("kernel", kr.Name))
		}
		e.arg(kineto.IntArg("cid", cidOf(kr.Launch)))
		e.arg(kineto.IntArg("correlation", kp.corrs[k]))
		if kr.Launch != "hipMemcpyAsync" {
			e.arg(kineto.IntsArg("grid", gridOf(kr)))
			e.arg(kineto.IntsArg("block", []int64{256, 1, 1}))
			e.arg(kineto.IntArg("shared memory", 0))
		}
		e.emit()
		e.ev = kineto.Event{Ph: 's', ID: kp.corrs[k], PID: cpuPID, TID: cpuTID, TS: ts, Cat: "ac2g", Name: "ac2g", Args: e.ev.Args[:0]}
		e.emit()
	}
	for g, at := range kp.graphLaunches {
		e.x("cuda_runtime", "hipGraphLaunch", cpuPID, cpuTID, at, 45_000)
		e.arg(kineto.IntArg("cid", 215))
		e.arg(kineto.IntArg("correlation", kp.graphCorrs[g]))
		e.emit()
		e.ev = kineto.Event{Ph: 'f', ID: kp.graphCorrs[g], PID: cpuPID, TID: cpuTID, TS: at, Cat: "ac2g", Name: "ac2g", BP: "e", Args: e.ev.Args[:0]}
		e.emit()
	}
}

func cidOf(launch string) int64 {
	switch launch {
	case "hipModuleLaunchKernel":
		return 169
	case "hipExtModuleLaunchKernel":
		return 65
	case "hipMemcpyAsync":
		return 134
	}
	return 107
}

func gridOf(k *kernelmodel.KernelRun) []int64 {
	g := int64(len(k.Name)%7+1) * 64
	return []int64{g, 1, 1}
}

func (e *emitter) gpu(i int) {
	ks, kp := e.kernels(i)
	p := &e.pl[i]
	order := e.order[:0]
	side := false
	for k := range ks {
		order = append(order, int32(k))
		side = side || ks[k].Stream != 0
	}
	if side { // Kineto writes GPU activities in start order
		slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(kp.starts[a], kp.starts[b]) })
	}
	e.order = order
	for _, k := range order {
		kr := &ks[k]
		if kp.starts[k] < p.cut {
			continue
		}
		tid := int64(mainStream)
		if kr.Stream != 0 {
			tid = sideStream
		}
		corr := kp.corrs[k]
		e.x("kernel", kr.Name, gpuPID, tid, kp.starts[k], int64(kr.Dur))
		if kp.exts[k] != 0 {
			e.arg(kineto.IntArg("External id", kp.exts[k]))
		}
		e.arg(kineto.IntArg("device", gpuPID))
		e.arg(kineto.IntArg("stream", tid))
		e.arg(kineto.IntArg("correlation", corr))
		if kp.launches[k] != 0 {
			e.arg(kineto.StrArg("kind", "Dispatch Kernel"))
			e.arg(kineto.IntsArg("grid", gridOf(kr)))
			e.arg(kineto.IntsArg("block", []int64{256, 1, 1}))
		} else {
			e.arg(kineto.StrArg("kind", "Dispatch Task"))
		}
		e.emit()
		e.ev = kineto.Event{Ph: 'f', ID: corr, PID: gpuPID, TID: tid, TS: kp.starts[k], Cat: "ac2g", Name: "ac2g", BP: "e", Args: e.ev.Args[:0]}
		e.emit()
	}
}

// Truth is what a generated trace holds, for tests to compare analyses with.
// Durations are in µs, computed from the integer-ns durations written.
type Truth struct {
	Steps                     map[string]int `json:"steps"` // kind -> count (eager prefill-labelled decodes count as decode)
	DecodeBS                  int            `json:"decode_bs"`
	DecodeBSHist              map[int]int    `json:"decode_bs_hist"`
	DecodeStepsWithoutKernels int            `json:"decode_steps_without_kernels"`
	StepsWithoutKernels       int            `json:"steps_without_kernels"`
	PartialSteps              int            `json:"partial_steps"` // steps that lost their earlier GPU events (exact cut)
	Layers                    int            `json:"layers_per_step"`
	KernelsPerLayer           []int          `json:"kernels_per_layer"` // one entry per layer kind
	Positions                 []TruthPos     `json:"positions"`         // decode layers of steps whose GPU events were written
	// CompatPositions counts decode layers as `layers --mode compat`
	// slices them from anchor to anchor: a layer counts only when the next
	// anchor follows exactly one layer later, so the last layer of each
	// decode step is left out.
	CompatPositions  []TruthPos `json:"compat_positions"`
	PrefillPositions []TruthPos `json:"prefill_positions"`
	Kernels          int        `json:"kernels"` // GPU kernels written
	KernelTime       float64    `json:"kernel_time_us"`
	GPUSpanS         float64    `json:"gpu_span_s"`
	Events           int64      `json:"events"`     // entries of traceEvents
	JSONBytes        int64      `json:"json_bytes"` // uncompressed size
	WindowS          float64    `json:"window_s"`   // first to last CPU step annotation
}

// TruthPos is one layer position's statistics over every layer written.
type TruthPos struct {
	LayerKind int     `json:"layer_kind"`
	Pos       int     `json:"pos"`
	ShortName string  `json:"short_name"`
	Kernel    string  `json:"kernel"` // the name in the first layer written
	Stream    int     `json:"stream"` // 0 main stream, 1 the overlapping side stream (TwoStreams)
	MeanUS    float64 `json:"mean_us"`
	StdUS     float64 `json:"std_us"` // sample standard deviation
	MinUS     float64 `json:"min_us"`
	MaxUS     float64 `json:"max_us"`
	Count     int     `json:"count"`
}

type posAcc struct {
	TruthPos
	sum, sumsq float64
	min, max   units.Duration
}

func addPos(acc map[[2]int]*posAcc, kr *kernelmodel.KernelRun) {
	key := [2]int{kr.LayerKind, kr.Pos}
	a := acc[key]
	if a == nil {
		a = &posAcc{TruthPos: TruthPos{LayerKind: kr.LayerKind, Pos: kr.Pos, ShortName: kr.ShortName, Kernel: kr.Name, Stream: kr.Stream}, min: kr.Dur, max: kr.Dur}
		acc[key] = a
	}
	v := kr.Dur.US()
	a.Count++
	a.sum += v
	a.sumsq += v * v
	a.min = min(a.min, kr.Dur)
	a.max = max(a.max, kr.Dur)
}

func (r *Recorder) truth(pl []placed) *Truth {
	t := &Truth{Steps: map[string]int{}, DecodeBSHist: map[int]int{}}
	dec := map[[2]int]*posAcc{}
	cmp := map[[2]int]*posAcc{}
	pre := map[[2]int]*posAcc{}
	var gpuFirst, gpuLast int64 = math.MaxInt64, 0
	var ks []kernelmodel.KernelRun
	var kp kplace
	// Layer lengths per kind: a step whose batch size picks other kernels can
	// have layers of another length. As in `layers --mode compat` (the most
	// common anchor-to-anchor distance wins), positions count only layers of
	// the most common length of their kind.
	type kindLen struct{ decode, kind, n int }
	lengths := map[kindLen]int{}
	layerLen := func(ks []kernelmodel.KernelRun, p *placed) map[int]int {
		m := map[int]int{}
		for k := range ks {
			if ks[k].Layer >= 0 && kp.starts[k] >= p.cut {
				m[ks[k].Layer]++
			}
		}
		return m
	}
	isDecode := func(s *Step) int {
		if s.Kind == tracing.StepDecode {
			return 1
		}
		return 0
	}
	for i := range r.steps {
		if pl[i].dropped {
			continue
		}
		ks = r.kernelsAt(i, ks, &kp)
		lens := layerLen(ks, &pl[i])
		seen := map[int]bool{}
		for k := range ks {
			if l := ks[k].Layer; l >= 0 && !seen[l] && kp.starts[k] >= pl[i].cut {
				seen[l] = true
				lengths[kindLen{isDecode(&r.steps[i]), ks[k].LayerKind, lens[l]}]++
			}
		}
	}
	dominant := map[[2]int]int{} // (decode, kind) -> length
	for kl, n := range lengths {
		key := [2]int{kl.decode, kl.kind}
		if best := dominant[key]; n > lengths[kindLen{kl.decode, kl.kind, best}] || (n == lengths[kindLen{kl.decode, kl.kind, best}] && kl.n > best) {
			dominant[key] = kl.n
		}
	}
	for i := range r.steps {
		s := &r.steps[i]
		ks = r.kernelsAt(i, ks, &kp)
		p := &pl[i]
		t.Steps[string(s.Kind)]++
		if s.Kind == tracing.StepDecode {
			t.DecodeBSHist[s.BS]++
		}
		// A step has kernels when one launched inside its annotation was
		// written (the sampler runs outside it).
		inStep := false
		for k := range ks {
			inStep = inStep || (!p.dropped && ks[k].Section != kernelmodel.SectionSample && kp.starts[k] >= p.cut)
		}
		if !inStep {
			t.StepsWithoutKernels++
			if s.Kind == tracing.StepDecode {
				t.DecodeStepsWithoutKernels++
			}
		}
		if p.dropped {
			continue
		}
		if p.cut != 0 {
			t.PartialSteps++
		}
		acc := pre
		lastLayer := -1
		if s.Kind == tracing.StepDecode {
			acc = dec
			for k := range ks {
				lastLayer = max(lastLayer, ks[k].Layer)
			}
		}
		lens := layerLen(ks, p)
		for k := range ks {
			kr := &ks[k]
			if kp.starts[k] < p.cut {
				continue
			}
			t.Kernels++
			t.KernelTime += kr.Dur.US()
			gpuFirst = min(gpuFirst, kp.starts[k])
			gpuLast = max(gpuLast, kp.starts[k]+int64(kr.Dur))
			if kr.Layer < 0 || lens[kr.Layer] != dominant[[2]int{isDecode(s), kr.LayerKind}] {
				continue
			}
			addPos(acc, kr)
			if s.Kind == tracing.StepDecode && kr.Layer < lastLayer {
				addPos(cmp, kr)
			}
			if kr.Layer+1 > t.Layers && s.Kind == tracing.StepDecode {
				t.Layers = kr.Layer + 1
			}
		}
	}
	for kind := 0; ; kind++ {
		n, ok := dominant[[2]int{1, kind}]
		if !ok {
			break
		}
		t.KernelsPerLayer = append(t.KernelsPerLayer, n)
	}
	best := 0
	for bs, n := range t.DecodeBSHist {
		if n > t.DecodeBSHist[best] || (n == t.DecodeBSHist[best] && bs > best) {
			best = bs
		}
	}
	t.DecodeBS = best
	finish := func(m map[[2]int]*posAcc) []TruthPos {
		var out []TruthPos
		for _, a := range m {
			n := float64(a.Count)
			a.MeanUS = a.sum / n
			if a.Count > 1 {
				a.StdUS = math.Sqrt(max(0, (a.sumsq-a.sum*a.sum/n)/(n-1)))
			}
			a.MinUS = a.min.US()
			a.MaxUS = a.max.US()
			out = append(out, a.TruthPos)
		}
		slices.SortFunc(out, func(x, y TruthPos) int {
			if x.LayerKind != y.LayerKind {
				return x.LayerKind - y.LayerKind
			}
			return x.Pos - y.Pos
		})
		return out
	}
	t.Positions = finish(dec)
	t.CompatPositions = finish(cmp)
	t.PrefillPositions = finish(pre)
	if gpuLast > 0 {
		t.GPUSpanS = float64(gpuLast-gpuFirst) / 1e9
	}
	if n := len(pl); n > 0 {
		t.WindowS = float64(pl[n-1].cpuEnd-pl[0].cpuStart) / 1e9
	}
	return t
}

// rocmDefaults fills the header keys opts leaves empty as ROCm's Kineto
// writes them: an MI355X, roctracer 4.1, and a world of one (rank).
func rocmDefaults(opts *kineto.WriterOptions, rank int) {
	if len(opts.Devices) == 0 {
		opts.Devices = []kineto.DeviceProperties{kineto.MI355X(0)}
	}
	if opts.RoctracerVersion == "" {
		opts.RoctracerVersion = "4.1"
		opts.HIPRuntimeVersion = 70051831
	}
	if opts.WorldSize == 0 {
		opts.WorldSize = 1
		opts.Rank = rank
	}
}
