package synth

import (
	"math"
	"strings"

	"github.com/profile-model/profile-model/internal/units"
	"github.com/profile-model/profile-model/profiling/kernelmodel"
)

// TP describes the ranks of a tensor-parallel engine for ForRank.
type TP struct {
	Size int // ranks
	// Skew makes the ranks run at different speeds: rank r's kernels take
	// 1 + Skew·r/(Size-1) times as long (rank 0 fastest). The collectives
	// absorb it: each rank's all-reduce waits for the slowest rank.
	Skew float64
	// AllReduce is an all-reduce's own time (every rank spends it once the
	// slowest rank has arrived); 0: 9 µs.
	AllReduce units.Duration
}

// Factor is how much longer rank's kernels take than rank 0's.
func (tp TP) Factor(rank int) float64 {
	if tp.Size <= 1 {
		return 1
	}
	return 1 + tp.Skew*float64(rank)/float64(tp.Size-1)
}

func (tp TP) allReduce() units.Duration {
	if tp.AllReduce > 0 {
		return tp.AllReduce
	}
	return 9 * units.Duration(1000)
}

// ForRank returns what rank of a tensor-parallel engine recorded for the
// same steps: an all-reduce before each norm of every layer (the reduction
// of the row-parallel GEMM before it), kernels slowed by the rank's skew
// factor, and each all-reduce lasting its own time plus the wait for the
// slowest rank's arrival. Ranks start each span between all-reduces
// together, so rank r waits for (slowest − own) compute time of the span.
func (r *Recorder) ForRank(rank int, tp TP) *Recorder {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := &Recorder{opts: r.opts, start: r.start, stop: r.stop, ext: 1000, corr: 50000}
	out.opts.Rank = rank
	slowest := 0
	for q := 0; q < tp.Size; q++ {
		if tp.Factor(q) > tp.Factor(slowest) {
			slowest = q
		}
	}
	var ks []kernelmodel.KernelRun
	for i := range r.steps {
		ks = r.expand(i, ks)
		s := r.steps[i]
		s.Kernels = rankKernels(ks, tp.Factor(rank), tp.Factor(slowest), tp.allReduce())
		out.Record(s)
		if r.pl[i].bufDropped { // each rank's buffer overflows as rank 0's did
			out.dropGPU(i)
		}
	}
	return out
}

// scaled is a kernel's duration on a rank of factor f.
func scaled(d units.Duration, f float64) units.Duration {
	return units.Duration(math.Round(float64(d) * f))
}

// WithAllReduces returns a step's kernels as one rank of a tensor-parallel
// engine runs them: an all-reduce before each norm of every layer (what a
// rank's capture trace captures).
func WithAllReduces(ks []kernelmodel.KernelRun) []kernelmodel.KernelRun {
	return rankKernels(ks, 1, 1, TP{}.allReduce())
}

func rankKernels(ks []kernelmodel.KernelRun, f, fSlow float64, ar units.Duration) []kernelmodel.KernelRun {
	out := make([]kernelmodel.KernelRun, 0, len(ks)+len(ks)/8)
	var own, slow units.Duration // compute since the last all-reduce, on this rank and on the slowest
	for _, k := range ks {
		inLayer := k.Layer >= 0 && (k.Section == kernelmodel.SectionForward || k.Section == kernelmodel.SectionAttention)
		if inLayer && strings.Contains(k.ShortName, "RMSNorm") {
			a := kernelmodel.KernelRun{
				Name: allReduceKernel, ShortName: "all_reduce", Dur: ar + (slow - own), Gap: k.Gap,
				Section: kernelmodel.SectionForward, Layer: k.Layer, LayerKind: k.LayerKind, Launch: "hipLaunchKernel",
			}
			out = append(out, a)
			own, slow = 0, 0
		}
		d := k.Dur
		k.Dur = scaled(d, f)
		own += k.Dur
		slow += scaled(d, fSlow)
		out = append(out, k)
	}
	pos := map[[2]int]int{}
	for i := range out {
		if out[i].Layer >= 0 {
			key := [2]int{out[i].Layer, out[i].LayerKind}
			out[i].Pos = pos[key]
			pos[key]++
		}
	}
	return out
}
