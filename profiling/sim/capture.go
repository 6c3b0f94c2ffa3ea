package sim

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/klauspost/compress/gzip"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/profiling/synth"
	"github.com/profile-model/profile-model/tracing"
	"github.com/profile-model/profile-model/tracing/kineto"
)

// noteGraph records that a profiled decode step replayed the graph of
// batch size bs.
func (b *synthBackend) noteGraph(bs int) {
	if !b.cfg.MarkTrace {
		return
	}
	if b.graphs == nil {
		b.graphs = map[int]bool{}
	}
	b.graphs[bs] = true
}

// captureSizes are the graph batch sizes to write capture traces for: the
// configured capture sizes, else those the profiled steps replayed.
func (b *synthBackend) captureSizes() []int {
	if len(b.cfg.CudagraphCaptureSizes) > 0 {
		s := slices.Clone(b.cfg.CudagraphCaptureSizes)
		slices.Sort(s)
		return slices.Compact(s)
	}
	var s []int
	for bs := range b.graphs {
		s = append(s, bs)
	}
	slices.Sort(s)
	return s
}

// writeCaptures writes, with MarkTrace, the capture trace of each graph
// batch size into rankDir/capture_traces/ (a size written at an earlier
// export is kept: graphs are captured once, at start).
func (b *synthBackend) writeCaptures(ctx context.Context, rankDir string, rank int, sizes []int) error {
	if !b.cfg.MarkTrace || b.cfg.EnforceEager {
		return nil
	}
	dir := filepath.Join(rankDir, tracing.CaptureDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing capture traces: %w", err)
	}
	for _, bs := range sizes {
		path := filepath.Join(dir, tracing.CaptureFileName(bs, 1, rank))
		if _, err := os.Stat(path); err == nil {
			continue
		}
		// The graph's kernels are those of a decode step at its size;
		// their times do not matter (nothing runs during a capture).
		runs := b.model.DecodeStep(bs, 0, rand.New(rand.NewPCG(uint64(bs), 0)))
		if b.cfg.TwoStreams {
			synth.SideStream(runs)
		}
		if b.cfg.TP > 1 {
			runs = synth.WithAllReduces(runs)
		}
		err := atomicfile.WriteFunc(path, func(w io.Writer) error {
			_, err := synth.WriteCapture(ctx, w, synth.CaptureOptions{
				Runs: runs, BS: bs, MaxQ: 1, At: b.cfg.clock.Now().UnixNano(),
				Trace: kineto.WriterOptions{TraceName: path, Gzip: true, GzipLevel: gzip.BestSpeed, Rank: rank, WorldSize: max(b.cfg.TP, 1)},
			})
			return err
		})
		if err != nil {
			return fmt.Errorf("writing capture trace %s: %w", path, err)
		}
	}
	return nil
}
