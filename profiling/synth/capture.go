package synth

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/internal/units"
	"github.com/profile-model/profile-model/profiling/kernelmodel"
	"github.com/profile-model/profile-model/tracing/kineto"
)

// CaptureOptions describe one graph capture to write.
type CaptureOptions struct {
	// Runs are the kernels of one forward pass at the graph's batch
	// (kernelmodel.Model.DecodeStep); the forward-pass kernels are the
	// ones captured, the eager prep and sampling kernels are left out.
	Runs []kernelmodel.KernelRun
	BS   int   // graph batch size (rows of the pass)
	MaxQ int   // query tokens per sequence (1 for plain decode)
	At   int64 // ns on the trace clock where the capture starts
	// Trace is the writer's header; its device and ROCm keys default as
	// WriteTrace's do.
	Trace kineto.WriterOptions
}

// warmupFill is the kernel a custom all-reduce runs in the warmup forward.
const warmupFill = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul> >(int, at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul>)"

// WriteCapture writes a capture trace as ATOM writes one per graph batch
// size (capture_traces/bs_<bs>_q_<q>_rank<r>.json.gz): first the warmup
// forward that runs before the capture, eagerly, every kernel of the step
// but the sampler launched and run once, each under its module's scope on
// the CPU and on the GPU (gpu_user_annotation), correlated to its launch
// (a custom all-reduce runs a fill there, as aiter's does outside a
// capture); then, inside a capture_graph_bs_<bs> annotation, every kernel of the
// forward pass launched once more, under a record_function scope
// "nn.Module: <module path>" and the CPU op that launches it (with its
// Input Dims and Input type), never running. It returns the number of
// kernels captured.
func WriteCapture(ctx context.Context, w io.Writer, o CaptureOptions) (int, error) {
	opts := o.Trace
	rocmDefaults(&opts, opts.Rank)
	at := o.At
	if at == 0 {
		at = defaultStart.UnixNano()
	}
	if opts.BaseTimeNS == 0 {
		opts.BaseTimeNS = (at - bootAgoNS) / 1e9 * 1e9
	}
	tw, err := kineto.NewWriter(w, opts)
	if err != nil {
		return 0, err
	}
	mods := kernelmodel.Modules(o.Runs, o.BS*max(o.MaxQ, 1))
	type launch struct {
		k   int
		ts  int64
		ext int64
	}
	var ev kineto.Event
	emit := func() {
		if err == nil {
			err = tw.WriteEvent(&ev)
		}
	}
	x := func(cat, name string, pid, tid, ts, dur int64, args ...kineto.Arg) {
		ev = kineto.Event{Ph: 'X', Cat: cat, Name: name, PID: pid, TID: tid, TS: ts, Dur: units.Duration(dur), Args: args}
		emit()
	}
	// The warmup forward: each kernel launched, then run on the GPU,
	// under its module's scope on both sides.
	cur, gpu := at+50_000, int64(0)
	var lastMain, side int64
	var ext, corr int64 = 1 << 20, 1 << 20 // apart from the capture's ids
	for k := range o.Runs {
		r := &o.Runs[k]
		if r.Section == kernelmodel.SectionSample {
			continue
		}
		if k&1023 == 0 && ctx.Err() != nil {
			return 0, ctx.Err()
		}
		scope := "prepare_inputs"
		if m := mods[k]; m.Path != "" {
			scope = "nn.Module: " + m.Path
		}
		name := r.Name
		if strings.Contains(name, "cross_device_reduce") {
			// aiter's custom all-reduce only communicates inside a
			// capture; in the warmup it returns zeros like its input.
			name = warmupFill
		}
		ext++
		corr++
		x("user_annotation", scope, cpuPID, cpuTID, cur, 22_000, kineto.IntArg("External id", ext), kineto.IntArg("Record function id", 0))
		x("cuda_runtime", r.Launch, cpuPID, cpuTID, cur+10_000, launchDurNS, kineto.IntArg("External id", ext), kineto.StrArg("kernel", name),
			kineto.IntArg("cid", cidOf(r.Launch)), kineto.IntArg("correlation", corr),
			kineto.IntsArg("grid", gridOf(r)), kineto.IntsArg("block", []int64{256, 1, 1}), kineto.IntArg("shared memory", 0))
		dur := max(int64(r.Dur), 1_000)
		// A side-stream kernel runs beside the main stream's last one.
		stream, start := int64(mainStream), max(gpu, cur+15_000)
		if r.Stream != 0 {
			stream, start = sideStream, max(lastMain, side, cur+15_000)
			side = start + dur
		} else {
			lastMain, gpu = start, start+dur
		}
		x("gpu_user_annotation", scope, gpuPID, stream, start, dur, kineto.IntArg("External id", ext))
		x("kernel", name, gpuPID, stream, start, dur, kineto.IntArg("External id", ext), kineto.IntArg("device", gpuPID),
			kineto.IntArg("stream", stream), kineto.IntArg("correlation", corr), kineto.StrArg("kind", "Dispatch Kernel"),
			kineto.IntsArg("grid", gridOf(r)), kineto.IntsArg("block", []int64{256, 1, 1}))
		cur += 25_000
	}
	at = max(cur, gpu, side) + 50_000 // the capture starts when the warmup is done
	var ls []launch
	cur = at + 50_000
	for k := range o.Runs {
		if o.Runs[k].Section != kernelmodel.SectionForward {
			continue
		}
		ls = append(ls, launch{k: k, ts: cur, ext: int64(len(ls) + 1)})
		cur += 25_000
	}
	end := cur + 50_000
	cpu := func(cat, name string, ts, dur int64, args ...kineto.Arg) {
		x(cat, name, cpuPID, cpuTID, ts, dur, args...)
	}
	label := "capture_graph_bs_" + strconv.Itoa(o.BS)
	cpu("user_annotation", label, at, end-at, kineto.IntArg("External id", 0), kineto.IntArg("Record function id", 0))
	// CPU side: module scope, then the op inside it.
	for i, l := range ls {
		if i&1023 == 0 && ctx.Err() != nil {
			return 0, ctx.Err()
		}
		m := mods[l.k]
		cpu("user_annotation", "nn.Module: "+m.Path, l.ts-10_000, 22_000, kineto.IntArg("External id", l.ext), kineto.IntArg("Record function id", 0))
		cpu("cpu_op", m.Op, l.ts-5_000, 12_000, kineto.IntArg("External id", l.ext), kineto.IntArg("Record function id", 0),
			kineto.DimsArg("Input Dims", m.InputDims), kineto.StrsArg("Input type", m.InputTypes))
	}
	// Runtime: the capture's begin and end around the launches, which
	// name their kernels but never run.
	cpu("cuda_runtime", "hipStreamBeginCapture", at+20_000, 5_000, kineto.IntArg("cid", 176), kineto.IntArg("correlation", 1))
	for i, l := range ls {
		r := &o.Runs[l.k]
		cpu("cuda_runtime", r.Launch, l.ts, launchDurNS, kineto.IntArg("External id", l.ext), kineto.StrArg("kernel", r.Name),
			kineto.IntArg("cid", cidOf(r.Launch)), kineto.IntArg("correlation", int64(i+2)),
			kineto.IntsArg("grid", gridOf(r)), kineto.IntsArg("block", []int64{256, 1, 1}), kineto.IntArg("shared memory", 0))
	}
	cpu("cuda_runtime", "hipStreamEndCapture", end-30_000, 5_000, kineto.IntArg("cid", 177), kineto.IntArg("correlation", int64(len(ls)+2)))
	cpu("cuda_runtime", "hipGraphInstantiateWithFlags", end-20_000, 15_000, kineto.IntArg("cid", 290), kineto.IntArg("correlation", int64(len(ls)+3)))
	ev = kineto.Event{Ph: 'M', Name: "process_name", PID: cpuPID, TS: at, Args: []kineto.Arg{kineto.StrArg("name", "python3")}}
	emit()
	ev = kineto.Event{Ph: 'M', Name: "thread_name", PID: cpuPID, TID: cpuTID, TS: at, Args: []kineto.Arg{kineto.StrArg("name", "thread "+strconv.Itoa(cpuTID)+" (python3)")}}
	emit()
	if err != nil {
		return 0, fmt.Errorf("writing capture trace: %w", err)
	}
	if err := tw.Close(); err != nil {
		return 0, err
	}
	return len(ls), nil
}
