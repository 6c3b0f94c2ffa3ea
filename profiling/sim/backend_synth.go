package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/units"
	"github.com/profile-model/profile-model/profiling/kernelmodel"
	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
	"github.com/profile-model/profile-model/tracing/kineto"
)

// synthBackend prices steps with a kernelmodel.Model and records them with a
// synth.Recorder while profiling.
type synthBackend struct {
	cfg   *Config
	model *kernelmodel.Model
	rng   *rand.Rand
	rec   *synth.Recorder // nil when not profiling
	dir   string
	// graphs are the graph batch sizes the profiled decode steps replayed
	// (capture traces are written for them when no capture sizes are set).
	graphs map[int]bool
}

// newSynthBackend builds the default backend: the built-in MiniMax-M2.5
// model, or the per-layer tables of cfg.KernelCSVs.
func newSynthBackend(cfg *Config) (backend, error) {
	m := kernelmodel.Default()
	if len(cfg.KernelCSVs) > 0 {
		var err error
		if m, err = kernelmodel.FromLayerCSV(cfg.KernelCSVs...); err != nil {
			return nil, fmt.Errorf("--kernels: %w", err)
		}
	}
	if m.Layers <= 0 {
		return nil, fmt.Errorf("kernel model %s: %d layers", m.Name, m.Layers)
	}
	if cfg.Layers > 0 {
		m.Layers = cfg.Layers
	}
	return &synthBackend{cfg: cfg, model: m, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed))}, nil
}

func (b *synthBackend) HostGap() units.Duration { return b.model.StepGap }

func (b *synthBackend) OutputLag() float64 { return b.model.OutputLag }

func (b *synthBackend) Intake(promptTokens int) units.Duration { return b.model.Intake(promptTokens) }

func (b *synthBackend) Run(st synth.Step) units.Duration {
	var runs []kernelmodel.KernelRun
	if st.Kind != tracing.StepDecode {
		// Prefill, and mixed steps whose prompts dominate the work.
		runs = b.model.PrefillStep(st.BS, st.Tokens, b.rng)
	} else {
		// Without graphs, older releases label the step prefill[...], current
		// ones eager_decode[...].
		legacy := b.cfg.Release == ReleaseLegacy
		st.Eager = b.cfg.EnforceEager && legacy
		st.EagerOverflow = b.cfg.EnforceEager && !legacy
		// A replayed graph computes its captured batch: pad up to the next
		// capture size, and price the step at that size.
		rows := st.BS
		if !b.cfg.EnforceEager && len(b.cfg.CudagraphCaptureSizes) > 0 {
			if g := captureSize(b.cfg.CudagraphCaptureSizes, st.BS); g > 0 {
				st.PaddedBS, rows = g, g
			} else {
				st.EagerOverflow = true
			}
		}
		runs = b.model.DecodeStep(rows, st.ContextTokens, b.rng)
		if b.rec != nil && !b.cfg.EnforceEager && !st.EagerOverflow {
			b.noteGraph(rows)
		}
	}
	if b.cfg.TwoStreams {
		synth.SideStream(runs)
	}
	if b.rec != nil {
		st.Kernels = runs
		b.rec.Record(st)
	}
	return kernelmodel.StepTime(runs)
}

// captureSize is the smallest capture size that holds bs sequences, or 0
// when bs exceeds them all (the step then runs eagerly).
func captureSize(sizes []int, bs int) int {
	best := 0
	for _, c := range sizes {
		if c >= bs && (best == 0 || c < best) {
			best = c
		}
	}
	return best
}

func (b *synthBackend) StartProfile(dir string, at int64) error {
	var buf int64
	if b.cfg.ProfilerBufferMB > 0 {
		buf = int64(b.cfg.ProfilerBufferMB) << 20
	}
	b.rec = synth.NewRecorder(synth.RecorderOptions{Model: b.cfg.Model, GPUWindow: b.cfg.GPUEventWindow, PythonPerStep: b.cfg.PythonPerStep,
		LegacyLabels: b.cfg.Release == ReleaseLegacy, BufferBytes: buf})
	b.rec.Start(at)
	b.dir = dir
	return nil
}

func (b *synthBackend) StopProfile(at int64, write bool) func(ctx context.Context) ([]string, error) {
	rec := b.rec
	b.rec = nil
	rec.Stop(at)
	if steps, recs := rec.Dropped(); steps > 0 {
		fmt.Fprintf(b.cfg.Log, "serve-sim: the profiler buffer (%d MB, --profiler-buffer-mb / KINETO_BUFFER_SIZE_MB) was full: %d GPU events of the %d oldest steps dropped\n",
			b.cfg.ProfilerBufferMB, recs, steps)
	}
	if !write {
		return func(context.Context) ([]string, error) { return nil, nil }
	}
	// What the steps change is read now; the recorder is the export's alone.
	dir, sizes := b.dir, b.captureSizes()
	return func(ctx context.Context) ([]string, error) {
		// The export finishes even when the client that asked for it goes away.
		ctx = context.WithoutCancel(ctx)
		ranks := max(b.cfg.TP, 1)
		if b.cfg.Personality != "" {
			return b.exportAs(ctx, dir, rec, ranks)
		}
		dirs := make([]string, 0, ranks)
		for rank := range ranks {
			rr := rec
			if ranks > 1 {
				rr = rec.ForRank(rank, synth.TP{Size: ranks, Skew: b.cfg.RankSkew})
			}
			path, err := b.export(ctx, dir, rr, rank)
			if err != nil {
				return nil, err
			}
			if err := b.writeCaptures(ctx, filepath.Dir(path), rank, sizes); err != nil {
				return nil, err
			}
			dirs = append(dirs, filepath.Dir(path))
		}
		return dirs, nil
	}
}

// export writes rank's trace into <dir>/rank_<r>/<name>.json.gz, gzipped
// as it is written (the only temporary is the partial .gz). With
// ExportDelay it writes the uncompressed .json first, as torch does, holds
// it, then gzips it and removes the .json.
func (b *synthBackend) export(ctx context.Context, dir string, rec *synth.Recorder, rank int) (string, error) {
	rankDir := filepath.Join(dir, fmt.Sprintf("rank_%d", rank))
	if err := os.MkdirAll(rankDir, 0o755); err != nil {
		return "", fmt.Errorf("writing trace: %w", err)
	}
	gzPath := filepath.Join(rankDir, synth.TraceFileName(b.cfg.Model, b.cfg.clock.Now()))
	jsonPath := strings.TrimSuffix(gzPath, ".gz")
	if b.cfg.ExportDelay == 0 {
		return gzPath, atomicfile.WriteFunc(gzPath, func(w io.Writer) error {
			_, err := rec.WriteTrace(ctx, w, kineto.WriterOptions{TraceName: jsonPath, Gzip: true, GzipLevel: gzip.BestSpeed})
			return err
		})
	}
	err := atomicfile.WriteFunc(jsonPath, func(w io.Writer) error {
		_, err := rec.WriteTrace(ctx, w, kineto.WriterOptions{TraceName: jsonPath})
		return err
	})
	if err != nil {
		return "", err
	}
	if err := b.cfg.clock.Sleep(ctx, b.cfg.ExportDelay); err != nil {
		return "", err
	}
	err = atomicfile.WriteFunc(gzPath, func(w io.Writer) error {
		in, err := os.Open(jsonPath)
		if err != nil {
			return err
		}
		defer in.Close()
		gz, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
		if err != nil {
			return err
		}
		if _, err := io.Copy(gz, in); err != nil {
			return err
		}
		return gz.Close()
	})
	if err != nil {
		return "", err
	}
	if err := os.Remove(jsonPath); err != nil {
		return "", fmt.Errorf("writing trace: %w", err)
	}
	return gzPath, nil
}

// rankRecorder is rank's view of rec (rec itself with one rank).
func (b *synthBackend) rankRecorder(rec *synth.Recorder, rank, ranks int) *synth.Recorder {
	if ranks == 1 {
		return rec
	}
	return rec.ForRank(rank, synth.TP{Size: ranks, Skew: b.cfg.RankSkew})
}

// standInHost is the host name in a vLLM stand-in's front-end trace name:
// fixed, so that it sorts before the worker traces as a real host name
// may (vLLM's instance id is random).
const standInHost = "host"

// exportAs writes the traces as the personality's engine names and lays
// them out, and returns what its /stop_profile reply lists:
//
//   - ATOM: rank_<r>/<model>_ts_<time>.pt.trace.json.gz, the .json first,
//     then gzipped in place; the reply comes once rank 0 is written and
//     lists rank 0's directory, while the other ranks finish
//     RankExportLag later, their .gz at a stable size, cut short, in
//     between.
//   - vLLM: <instance>-rank-<r>.<ns>.pt.trace.json.gz per rank and the
//     API process's CPU-only <host>_<pid>.async_llm.<ns>.pt.trace.json.gz,
//     all in dir itself, gzipped in place.
//   - SGLang: <time>-TP-<r>.trace.json.gz per rank in dir itself.
func (b *synthBackend) exportAs(ctx context.Context, dir string, rec *synth.Recorder, ranks int) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("writing trace: %w", err)
	}
	now := b.cfg.clock.Now()
	switch b.cfg.Personality {
	case PersonalityVLLM:
		for rank := range ranks {
			name := fmt.Sprintf("vllm-instance-0-rank-%d.%d.pt.trace.json.gz", rank, now.UnixNano())
			if err := writeGzipInPlace(ctx, filepath.Join(dir, name), b.rankRecorder(rec, rank, ranks), 0); err != nil {
				return nil, err
			}
		}
		name := fmt.Sprintf("%s_%d.async_llm.%d.pt.trace.json.gz", standInHost, os.Getpid(), now.UnixNano())
		return nil, writeFrontEnd(filepath.Join(dir, name), now)
	case PersonalitySGLang:
		for rank := range ranks {
			name := fmt.Sprintf("%.6f-TP-%d.trace.json.gz", float64(now.UnixNano())/1e9, rank)
			if err := writeGzipInPlace(ctx, filepath.Join(dir, name), b.rankRecorder(rec, rank, ranks), 0); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	path := func(rank int) (string, error) {
		rd := filepath.Join(dir, fmt.Sprintf("rank_%d", rank))
		if err := os.MkdirAll(rd, 0o755); err != nil {
			return "", fmt.Errorf("writing trace: %w", err)
		}
		return filepath.Join(rd, synth.TraceFileName(b.cfg.Model, now)), nil
	}
	p0, err := path(0)
	if err != nil {
		return nil, err
	}
	if err := writeGzipInPlace(ctx, p0, b.rankRecorder(rec, 0, ranks), 0); err != nil {
		return nil, err
	}
	lag := b.cfg.RankExportLag
	if lag == 0 {
		lag = 500 * time.Millisecond
	}
	for rank := 1; rank < ranks; rank++ {
		p, err := path(rank)
		if err != nil {
			return nil, err
		}
		go func(rr *synth.Recorder) {
			if err := writeGzipInPlace(ctx, p, rr, lag); err != nil {
				fmt.Fprintf(b.cfg.Log, "serve-sim: rank trace: %v\n", err)
			}
		}(b.rankRecorder(rec, rank, ranks))
	}
	return []string{filepath.Dir(p0)}, nil
}

// writeGzipInPlace writes rec's trace gzipped straight into path, as
// torch's export does (a reader may see the file grow). With lag, the
// first half of the gzip bytes is written, held lag (wall time), then the
// rest: a file of stable size that is not yet whole.
func writeGzipInPlace(ctx context.Context, path string, rec *synth.Recorder, lag time.Duration) error {
	var buf bytes.Buffer
	if _, err := rec.WriteTrace(ctx, &buf, kineto.WriterOptions{TraceName: strings.TrimSuffix(path, ".gz"), Gzip: true, GzipLevel: gzip.BestSpeed}); err != nil {
		return fmt.Errorf("writing trace: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing trace: %w", err)
	}
	data := buf.Bytes()
	if lag > 0 {
		half := len(data) / 2
		if _, err := f.Write(data[:half]); err != nil {
			f.Close()
			return fmt.Errorf("writing trace: %w", err)
		}
		time.Sleep(lag)
		data = data[half:]
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing trace: %w", err)
	}
	return f.Close()
}

// writeFrontEnd writes a CPU-only trace as vLLM's API process does: its
// own spans, no GPU activity.
func writeFrontEnd(path string, now time.Time) error {
	return atomicfile.WriteFunc(path, func(w io.Writer) error {
		kw, err := kineto.NewWriter(w, kineto.WriterOptions{TraceName: strings.TrimSuffix(path, ".gz"), Gzip: true})
		if err != nil {
			return err
		}
		ts := now.UnixNano()
		for i := range 8 {
			if err := kw.WriteEvent(&kineto.Event{Ph: 'X', Cat: "user_annotation", Name: "async_llm.generate", PID: int64(os.Getpid()), TID: 1,
				TS: ts + int64(i)*1_000_000, Dur: units.Micros(500)}); err != nil {
				return err
			}
		}
		return kw.Close()
	})
}
