package synth

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/profile-model/profile-model/internal/units"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/profiling/kernelmodel"
)

// exactPlan reproduces a compatible per-layer table: the durations of every
// layer that compatible mode averages, per position, chosen so that their
// mean, sample standard deviation, minimum, maximum and share of the layer
// print as the table does.
//
// Compatible mode slices all decode kernels at the anchor (position 0): in
// a step of L layers, the first L-1 slices are whole layers, the last one
// runs into the epilogue and the next step and is not counted. So a table
// with count c needs decode steps × (L-1) = c.
type exactPlan struct {
	layers, steps int
	samples       [][]int64 // per position: the durations (ns) in the order they run
	next          []int
}

// planExact plans the steps and durations for rows; wantLayers is the
// model's layer count, which the plan stays near.
func planExact(rows []inventory.LayerRow, wantLayers int, rng *rand.Rand) (*exactPlan, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("synth: exact mode needs a model made from one layer CSV")
	}
	count := rows[0].Count
	for _, r := range rows {
		if r.Count != count {
			return nil, fmt.Errorf("synth: exact mode: pos %d has count %d, pos 0 has %d; a compatible table has one count", r.Pos, r.Count, count)
		}
	}
	if count < 1 {
		return nil, fmt.Errorf("synth: exact mode: the table's count is %d, need at least 1", count)
	}
	// Layers per step: L-1 must divide the count; the divisor nearest the
	// model's own layer count.
	per := 0
	for d := 1; d <= count; d++ {
		if count%d == 0 && (per == 0 || abs(d-(wantLayers-1)) < abs(per-(wantLayers-1))) {
			per = d
		}
	}
	p := &exactPlan{layers: per + 1, steps: count / per, samples: make([][]int64, len(rows)), next: make([]int, len(rows))}
	means := fitMeans(rows)
	for i, r := range rows {
		s := samples(count, means[i], r.StdUS, r.MinUS, r.MaxUS)
		rng.Shuffle(len(s), func(a, b int) { s[a], s[b] = s[b], s[a] })
		p.samples[i] = s
	}
	return p, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// apply sets the durations of the counted layers of one decode step and
// writes signature names with the "void " return type a demangler gives
// them, as real traces do.
func (p *exactPlan) apply(runs []kernelmodel.KernelRun) {
	for i := range runs {
		r := &runs[i]
		if strings.Contains(r.Name, "(") && !strings.HasPrefix(r.Name, "void ") {
			r.Name = "void " + r.Name
		}
		if r.Section != kernelmodel.SectionForward || r.Layer < 0 || r.Layer >= p.layers-1 || r.Pos >= len(p.samples) {
			continue
		}
		s := p.samples[r.Pos]
		if n := p.next[r.Pos]; n < len(s) {
			r.Dur = units.Duration(s[n])
			p.next[r.Pos]++
		}
	}
}

// fitMeans chooses each position's mean within the rounding of its avg_us
// such that its share of the summed means also rounds to its pct, when
// such means exist (else the avgs as printed).
func fitMeans(rows []inventory.LayerRow) []float64 {
	const tol = 0.0495 // inside the ±0.05 of one printed decimal
	out := make([]float64, len(rows))
	var lo, hi float64
	for i, r := range rows {
		out[i] = r.AvgUS
		lo += r.AvgUS - tol
		hi += r.AvgUS + tol
	}
	for s := lo; s <= hi; s += 0.0001 {
		var sumLo, sumHi float64
		ok := true
		los, his := make([]float64, len(rows)), make([]float64, len(rows))
		for i, r := range rows {
			los[i] = math.Max(r.AvgUS-tol, (r.Pct-tol)*s/100)
			his[i] = math.Min(r.AvgUS+tol, (r.Pct+tol)*s/100)
			if los[i] > his[i] {
				ok = false
				break
			}
			sumLo += los[i]
			sumHi += his[i]
		}
		if !ok || s < sumLo || s > sumHi {
			continue
		}
		t := 0.0
		if sumHi > sumLo {
			t = (s - sumLo) / (sumHi - sumLo)
		}
		for i := range rows {
			out[i] = los[i] + (his[i]-los[i])*t
		}
		return out
	}
	return out
}

// samples returns n durations in ns with the given mean, sample standard
// deviation, minimum and maximum (µs): one at the minimum, 1+j at the
// maximum, one free value v, and the rest at two points m'±d around the
// mean; j, d and v are searched for (fewest maxima, widest d) so that every
// value stays inside [min, max].
func samples(n int, mean, std, lo, hi float64) []int64 {
	ns := func(us float64) int64 { return int64(math.Round(us * 1000)) }
	out := make([]int64, 0, n)
	if n < 4 || hi <= lo {
		// Too few to shape: the mean, with the extremes when there is room.
		for len(out) < n {
			out = append(out, ns(mean))
		}
		if n >= 3 {
			out[0], out[1], out[2] = ns(lo), ns(hi), ns(3*mean-lo-hi)
		}
		return out
	}
	ss := float64(n-1) * std * std // sum of squared deviations
	in := func(v float64) bool { return v >= lo-1e-9 && v <= hi+1e-9 }
	dmax := math.Min(mean-lo, hi-mean)
	for j := 0; j <= n-4; j++ {
		k := n - 3 - j
		pairs := k - k%2
		c := float64(2+j)*mean - lo - float64(1+j)*hi
		for f := 1.0; f >= 0; f -= 0.05 {
			d := f * dmax
			r := ss - (lo-mean)*(lo-mean) - float64(1+j)*(hi-mean)*(hi-mean) - float64(pairs)*d*d
			if r < 0 {
				continue
			}
			// (c - k e)² + k e² = r, for the shift e of the two points.
			a, b, cc := float64(k*k+k), -2*c*float64(k), c*c-r
			disc := b*b - 4*a*cc
			if disc < 0 {
				continue
			}
			for _, e := range []float64{(-b + math.Sqrt(disc)) / (2 * a), (-b - math.Sqrt(disc)) / (2 * a)} {
				m, v := mean+e, mean+c-float64(k)*e
				if !in(v) || !in(m-d) || !in(m+d) {
					continue
				}
				out = append(out, ns(lo), ns(v))
				for range 1 + j {
					out = append(out, ns(hi))
				}
				for i := 0; i < pairs/2; i++ {
					out = append(out, ns(m-d), ns(m+d))
				}
				if k%2 == 1 {
					out = append(out, ns(m))
				}
				return out
			}
		}
		if float64(1+j)*(hi-mean)*(hi-mean) > ss {
			break // more maxima only add spread
		}
	}
	// The spread cannot be met inside [min, max]: min, max, the rest at
	// the mean that keeps the average.
	out = append(out, ns(lo), ns(hi))
	m := (float64(n)*mean - lo - hi) / float64(n-2)
	for len(out) < n {
		out = append(out, ns(m))
	}
	return out
}
