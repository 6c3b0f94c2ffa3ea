package report

import (
	"fmt"
	"math"
	"slices"
)

// fit is a least-squares line y = Intercept + Slope·x.
type fit struct {
	N         int
	Slope     float64
	Intercept float64
	R2        float64 // 1 - SSres/SStot; 1 when y does not vary and the line passes through it
}

// fitLine fits y against x; N < 2 or x without spread gives a zero slope.
func fitLine(xs, ys []float64) fit {
	f := fit{N: len(xs)}
	if len(xs) == 0 {
		return f
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(xs))
	var sxx, sxy, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxx += dx * dx
		sxy += dx * dy
		syy += dy * dy
	}
	if sxx > 0 {
		f.Slope = sxy / sxx
	}
	f.Intercept = my - f.Slope*mx
	var res float64
	for i := range xs {
		d := ys[i] - (f.Intercept + f.Slope*xs[i])
		res += d * d
	}
	switch {
	case syy > 0:
		f.R2 = 1 - res/syy
	case res == 0:
		f.R2 = 1
	}
	return f
}

// Thresholds of the trend words (see the package documentation).
const (
	flatFrac    = 0.10 // a spread under 10% of the mean is flat
	flatUS      = 0.5  // ... or under 0.5 µs
	linearR2    = 0.9  // a fit at least this good is linear
	stepShare   = 0.8  // one jump that makes this much of the movement is a step
	launchMaxUS = 10.0 // a flat position this short is launch-bound
	closeTolPct = 3.0  // the reconciliation closes within this
)

// contextCategories read the KV cache: their work is batch × context.
var contextCategories = []string{"Paged attention (decode)", "Attention reduce", "KV cache", "Flash attention (prefill)"}

// series is one quantity across levels: the values where present.
type series struct {
	xs, ys []float64
	at     []int // level index of each point
}

func (s *series) add(x, y float64, i int) {
	s.xs = append(s.xs, x)
	s.ys = append(s.ys, y)
	s.at = append(s.at, i)
}

func (s *series) spread() (lo, hi, mean float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, y := range s.ys {
		lo, hi = min(lo, y), max(hi, y)
		mean += y
	}
	return lo, hi, mean / float64(len(s.ys))
}

func (s *series) flat() bool {
	if len(s.ys) < 2 {
		return false
	}
	lo, hi, mean := s.spread()
	return hi-lo <= max(flatFrac*math.Abs(mean), flatUS)
}

// trend is the word for a position's time across levels. changes are the
// indices into s of the points whose kernel differs from the one before
// (none: the same kernel throughout). names are the level names. A step
// is placed where it happens: at the kernel change with the largest jump,
// or at the largest jump; a series a line fits well (R² ≥ 0.9) is linear
// unless one kernel change makes most of its movement.
func trend(s series, f fit, changes []int, category string, names []string) string {
	switch len(s.ys) {
	case 0:
		return ""
	case 1:
		return "only at " + names[s.at[0]]
	}
	if s.flat() {
		return "flat"
	}
	_, _, mean := s.spread()
	thr := max(flatFrac*math.Abs(mean), flatUS)
	jump := func(i int) float64 { return math.Abs(s.ys[i] - s.ys[i-1]) }
	total, big, bigAt := 0.0, 0.0, 0
	for i := 1; i < len(s.ys); i++ {
		total += jump(i)
		if jump(i) > big {
			big, bigAt = jump(i), i
		}
	}
	ch, chAt := 0.0, 0 // the kernel change with the largest jump
	for _, i := range changes {
		if i > 0 && i < len(s.ys) && jump(i) > ch {
			ch, chAt = jump(i), i
		}
	}
	step := func(i int) string { return "step change at " + names[s.at[i]] }
	if ch > thr && ch >= stepShare*total {
		return step(chAt)
	}
	linear := len(s.ys) == 2 || f.R2 >= linearR2
	if !linear {
		switch {
		case ch > thr:
			return step(chAt)
		case total > 0 && big >= stepShare*total:
			return step(bigAt)
		}
		return fmt.Sprintf("not linear (R² %.2f)", f.R2)
	}
	switch {
	case f.Slope > 0 && slices.Contains(contextCategories, category):
		return "grows with context"
	case f.Slope > 0:
		return "linear in batch"
	}
	return "falls with batch"
}
