package synth

import (
	"context"
	"fmt"
	"io"
	"strconv"

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

// WriteCapture writes a capture trace as an engine that marks its graph
// captures does: inside a capture_graph_bs_<bs> annotation, every kernel
// of the forward pass is launched once, under a record_function scope
// "nn.Module: <module path>" and the CPU op that launches it (with its
// Input Dims and Input type), and never runs: the GPU side is empty. It
// returns the number of kernels captured.
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
	var ls []launch
	cur := at + 50_000
	for k := range o.Runs {
		if o.Runs[k].Section != kernelmodel.SectionForward {
			continue
		}
		ls = append(ls, launch{k: k, ts: cur, ext: int64(len(ls) + 1)})
		cur += 25_000
	}
	end := cur + 50_000
	var ev kineto.Event
	emit := func() {
		if err == nil {
			err = tw.WriteEvent(&ev)
		}
	}
	x := func(cat, name string, ts, dur int64, args ...kineto.Arg) {
		ev = kineto.Event{Ph: 'X', Cat: cat, Name: name, PID: cpuPID, TID: cpuTID, TS: ts, Dur: units.Duration(dur), Args: args}
		emit()
	}
	label := "capture_graph_bs_" + strconv.Itoa(o.BS)
	x("user_annotation", label, at, end-at, kineto.IntArg("External id", 0), kineto.IntArg("Record function id", 0))
	// CPU side: module scope, then the op inside it.
	for i, l := range ls {
		if i&1023 == 0 && ctx.Err() != nil {
			return 0, ctx.Err()
		}
		m := mods[l.k]
		x("user_annotation", "nn.Module: "+m.Path, l.ts-10_000, 22_000, kineto.IntArg("External id", l.ext), kineto.IntArg("Record function id", 0))
		x("cpu_op", m.Op, l.ts-5_000, 12_000, kineto.IntArg("External id", l.ext), kineto.IntArg("Record function id", 0),
			kineto.DimsArg("Input Dims", m.InputDims), kineto.StrsArg("Input type", m.InputTypes))
	}
	// Runtime: the capture's begin and end around the launches, which
	// name their kernels but never run.
	x("cuda_runtime", "hipStreamBeginCapture", at+20_000, 5_000, kineto.IntArg("cid", 176), kineto.IntArg("correlation", 1))
	for i, l := range ls {
		r := &o.Runs[l.k]
		x("cuda_runtime", r.Launch, l.ts, launchDurNS, kineto.IntArg("External id", l.ext), kineto.StrArg("kernel", r.Name),
			kineto.IntArg("cid", cidOf(r.Launch)), kineto.IntArg("correlation", int64(i+2)),
			kineto.IntsArg("grid", gridOf(r)), kineto.IntsArg("block", []int64{256, 1, 1}), kineto.IntArg("shared memory", 0))
	}
	x("cuda_runtime", "hipStreamEndCapture", end-30_000, 5_000, kineto.IntArg("cid", 177), kineto.IntArg("correlation", int64(len(ls)+2)))
	x("cuda_runtime", "hipGraphInstantiateWithFlags", end-20_000, 15_000, kineto.IntArg("cid", 290), kineto.IntArg("correlation", int64(len(ls)+3)))
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
