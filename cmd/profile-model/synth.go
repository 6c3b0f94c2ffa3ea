package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/profiling/kernelmodel"
	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing/kineto"
)

// csvListFlag collects a repeatable (or comma-separated) flag.
type csvListFlag []string

func (l *csvListFlag) String() string { return strings.Join(*l, ",") }
func (l *csvListFlag) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// runSynth writes an ATOM-style synthetic trace and its truth file.
func runSynth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("synth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		out          = fs.String("out", "", "trace file to write (.json, or .json.gz for gzip)")
		atomDir      = fs.String("atom-dir", "", "write as ATOM does instead: DIR/rank_0/<model>_ts_<time>_<ms>.pt.trace.json.gz")
		layerCSVs    csvListFlag
		layers       = fs.Int("layers", 0, "transformer layers per step (default: the model's, 62)")
		decodeSteps  = fs.Int("decode-steps", 32, "decode steps")
		prefillSteps = fs.Int("prefill-steps", 2, "prefill steps, spread among the decode steps")
		bs           = fs.Int("bs", 8, "decode batch size (the last 5% of decode steps run bs-1 when that runs the same kernels)")
		seed         = fs.Uint64("seed", 1, "random seed")
		gpuExact     = fs.Bool("gpu-window-exact", false, "cut GPU events at the exact time (the step at the cut keeps only its later kernels), not at a step boundary")
		truthPath    = fs.String("truth", "", "write the truth JSON (steps, decode bs, per-position stats of what was written) here")
		targetMB     = fs.Float64("target-mb", 0, "choose --decode-steps to reach about this many MB of uncompressed JSON")
		python       = fs.Int("python-per-step", 0, "python_function events per step (default 3000; -1 none)")
		model        = fs.String("model", "MiniMaxAI/MiniMax-M2.5", "served model name (for --atom-dir file names)")
		renameAnchor = fs.String("rename-anchor", "", "variant: rename the paged-attention kernel (the pa_bf16 anchor) to this name")
		twoStreams   = fs.Bool("two-streams", false, "variant: run two kernels of each layer on a second, overlapping stream")
		alternate    = fs.Bool("alternate", false, "variant: odd layers are dense (two alternating kernel sequences)")
		eagerDecode  = fs.Bool("eager-decode", false, "variant: decode steps launched eagerly and labelled prefill[bs=N tok=N ...]")
		metaFirst    = fs.Bool("meta-first", false, "write baseTimeNanoseconds and the other trailing keys before traceEvents")
		piecewise    = fs.Bool("piecewise", false, "variant: decode steps replayed as vLLM's piecewise graphs (a graph per piece, attention launched eagerly between them, no step annotations)")
		equalGaps    = fs.Bool("piecewise-equal-gaps", false, "variant (with --piecewise): the GPU idles between graph pieces as long as between steps, as on a fast GPU: steps come from the engine's step function in the Python frames, or without them (--python-per-step -1) from the period of the launch sequence")
		tpAllReduce  = fs.Bool("tp-allreduce", false, "variant: a tensor-parallel rank's kernels (an all-reduce before each norm, an all-gather before the sampler)")
		force        = fs.Bool("force", false, "replace --out and --truth when they exist (never a --layer-csv)")
		exact        = fs.Bool("exact", false, "reproduce the one --layer-csv exactly: layers --mode compat on the trace writes that file back byte for byte (--layers and --decode-steps are chosen from its count)")
	)
	var gpuWindow time.Duration
	fs.Var(windowFlag{&gpuWindow}, "gpu-window", "drop GPU events older than this before the end, like a full profiler buffer (a duration, 30s, or seconds); 0 keeps all")
	fs.Var(&layerCSVs, "layer-csv", "per-layer table(s) in the compatible CSV format (conc{N}_layer.csv); repeat or comma-separate; default: the built-in model")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile-model synth --out FILE [flags]\n\nWrites a synthetic ATOM-style Kineto trace and, with --truth, what it holds.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("synth: unexpected argument %q", fs.Arg(0))}
	}
	if (*out == "") == (*atomDir == "") {
		return usageError{"synth: give exactly one of --out FILE or --atom-dir DIR"}
	}
	if *targetMB < 0 {
		return usageError{"synth: --target-mb must not be negative"}
	}
	if *out != "" && *truthPath != "" && atomicfile.SameFile(*out, *truthPath) {
		return usageError{fmt.Sprintf("synth: --out and --truth are the same file (%s): the truth would overwrite the trace; give the truth its own name, e.g. truth.json", *truthPath)}
	}
	if err := atomicfile.CheckOutputs(*force, layerCSVs, *out, *truthPath); err != nil {
		return usageError{"synth: " + err.Error()}
	}
	opts := synth.GenerateOptions{
		Layers: *layers, DecodeSteps: *decodeSteps, PrefillSteps: *prefillSteps, BS: *bs, Seed: *seed,
		GPUWindow: gpuWindow, GPUWindowExact: *gpuExact, PythonPerStep: *python, ModelName: *model,
		RenameAnchor: *renameAnchor, TwoStreams: *twoStreams, Alternate: *alternate, EagerDecode: *eagerDecode,
		Gzip: strings.HasSuffix(*out, ".gz"), MetaFirst: *metaFirst, Exact: *exact,
		Piecewise: *piecewise, PiecewiseEqualGaps: *equalGaps, TPAllReduce: *tpAllReduce,
	}
	if *exact && len(layerCSVs) != 1 {
		return usageError{"synth: --exact reproduces one --layer-csv; give exactly one"}
	}
	if len(layerCSVs) > 0 {
		m, err := kernelmodel.FromLayerCSV(layerCSVs...)
		if err != nil {
			return err
		}
		opts.Model = m
	}
	if *targetMB > 0 {
		n, err := stepsForSize(ctx, opts, *targetMB*1e6)
		if err != nil {
			return err
		}
		opts.DecodeSteps = n
	}
	began := time.Now()
	var truth *synth.Truth
	var path string
	var plainBytes int64
	if *atomDir != "" {
		rec, err := synth.NewRecording(ctx, opts)
		if err != nil {
			return err
		}
		path, truth, err = rec.WriteATOM(ctx, *atomDir, time.Now())
		if err != nil {
			return err
		}
	} else {
		path = *out
		err := atomicfile.WriteFunc(path, func(w io.Writer) error {
			rec, err := synth.NewRecording(ctx, opts)
			if err != nil {
				return err
			}
			truth, err = rec.WriteTrace(ctx, w, kineto.WriterOptions{Gzip: opts.Gzip, MetaFirst: opts.MetaFirst, TraceName: path})
			return err
		})
		if err != nil {
			return err
		}
	}
	elapsed := time.Since(began)
	plainBytes = truth.JSONBytes
	if *truthPath != "" {
		data, err := json.MarshalIndent(truth, "", "  ")
		if err != nil {
			return fmt.Errorf("synth: truth: %w", err)
		}
		if err := atomicfile.Write(*truthPath, append(data, '\n')); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "wrote %s: %d decode + %d prefill steps, %d events, %d kernels, decode bs %d", path,
		truth.Steps["decode"], truth.Steps["prefill"], truth.Events, truth.Kernels, truth.DecodeBS)
	if plainBytes > 0 {
		fmt.Fprintf(stdout, ", %.1f MB of JSON in %.2f s (%.0f MB/s)", float64(plainBytes)/1e6, elapsed.Seconds(), float64(plainBytes)/1e6/elapsed.Seconds())
	}
	fmt.Fprintln(stdout)
	if truth.DecodeStepsWithoutKernels > 0 {
		fmt.Fprintf(stdout, "GPU events kept for the last %s: %d of %d decode steps have no kernels\n", gpuWindow, truth.DecodeStepsWithoutKernels, truth.Steps["decode"])
	}
	return nil
}

// stepsForSize measures the uncompressed bytes of one decode step with these
// options and returns the decode step count that reaches target bytes.
func stepsForSize(ctx context.Context, opts synth.GenerateOptions, target float64) (int, error) {
	size := func(decode int) (int64, error) {
		o := opts
		o.DecodeSteps, o.Gzip, o.GPUWindow = decode, false, 0
		t, err := synth.Generate(ctx, io.Discard, o)
		if err != nil {
			return 0, err
		}
		return t.JSONBytes, nil
	}
	one, err := size(1)
	if err != nil {
		return 0, err
	}
	three, err := size(3)
	if err != nil {
		return 0, err
	}
	per := float64(three-one) / 2
	return max(1, int((target-float64(one))/per)+1), nil
}
