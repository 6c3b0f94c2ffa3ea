package diff

import (
	"cmp"
	"slices"
	"strings"

	"github.com/profile-model/profile-model/inventory"
)

// How two kernels were matched, from the surest to the loosest.
const (
	matchName     = "name"       // the same kernel name
	matchShort    = "short_name" // the same demangled name without template arguments
	matchRole     = "role"       // the same ATen operation (functor) in the same category
	matchPosition = "position"   // the same category at the same place in the layer
	matchCategory = "category"   // the same category, anywhere in the trace
)

// matcher holds what the matching needs of kernel names, computed once.
type matcher struct {
	short map[string]string
}

func newMatcher() *matcher { return &matcher{short: map[string]string{}} }

// shortKey is the demangled name without template arguments or parameters
// (ATen kernels keep their functor: "...vectorized_elementwise_kernel<MulFunctor>").
func (m *matcher) shortKey(name string) string {
	s, ok := m.short[name]
	if !ok {
		s = inventory.ShortName(name)
		m.short[name] = s
	}
	return s
}

// functor is what an ATen kernel computes ("MulFunctor" of
// "at::native::elementwise_kernel<MulFunctor>"), "" for other kernels. Two
// ATen kernels with the same functor do the same operation with another
// launch strategy (vectorised, unrolled) or on another vendor.
func (m *matcher) functor(name string) string {
	s := m.shortKey(name)
	if !strings.HasSuffix(s, ">") {
		return ""
	}
	i := strings.LastIndexByte(s, '<')
	if i < 0 {
		return ""
	}
	return s[i+1 : len(s)-1]
}

// score is how well position b stands for position a: higher is surer, 0
// means they must not be matched.
func (m *matcher) score(a, b *Position) (int, string) {
	switch {
	case a.Kernel == b.Kernel:
		return 10, matchName
	case m.shortKey(a.Kernel) == m.shortKey(b.Kernel):
		return 8, matchShort
	case a.Category != b.Category || a.Category == inventory.Other:
		return 0, ""
	}
	fa, fb := m.functor(a.Kernel), m.functor(b.Kernel)
	switch {
	case fa != "" && fa == fb:
		return 6, matchRole
	case fa != "" && fb != "":
		return 0, "" // two ATen kernels that compute different things
	}
	return 3, matchPosition
}

// pairing is one row of the aligned layer tables: a position of A, of B,
// or of both.
type pairing struct {
	a, b int // indices into the positions; -1 when absent
	how  string
}

// align lines up two per-layer tables: the order of positions is kept,
// and the sum of match scores is the largest possible (a weighted longest
// common subsequence), so same-named kernels anchor the alignment and
// kernels of the same category fill the gaps between them.
func (m *matcher) align(a, b []Position) []pairing {
	n, k := len(a), len(b)
	w := k + 1
	best := make([]int, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		for j := k - 1; j >= 0; j-- {
			v := max(best[(i+1)*w+j], best[i*w+j+1])
			if s, _ := m.score(&a[i], &b[j]); s > 0 {
				v = max(v, s+best[(i+1)*w+j+1])
			}
			best[i*w+j] = v
		}
	}
	var out []pairing
	i, j := 0, 0
	for i < n && j < k {
		s, how := m.score(&a[i], &b[j])
		switch {
		case s > 0 && best[i*w+j] == s+best[(i+1)*w+j+1]:
			out = append(out, pairing{i, j, how})
			i, j = i+1, j+1
		case best[i*w+j] == best[(i+1)*w+j]:
			out = append(out, pairing{i, -1, ""})
			i++
		default:
			out = append(out, pairing{-1, j, ""})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, pairing{i, -1, ""})
	}
	for ; j < k; j++ {
		out = append(out, pairing{-1, j, ""})
	}
	return out
}

// kernelGroup is a set of kernels of A that stands for a set of kernels of
// B (either may be empty: a kernel only one side ran).
type kernelGroup struct {
	a, b []int32 // indices into the profiles' Kernels
	how  string
}

// groupKernels matches the kernels of two profiles: by name, then by
// demangled short name, then through the links of the layer tables (the
// same ATen operation at the same place; kernels of the same category
// that replace each other, fused or split; joined transitively), then what
// is left by the same ATen operation or the same category. The rest ran
// on one side only.
func (m *matcher) groupKernels(pa, pb *Profile, links []pairing) []kernelGroup {
	doneA := make([]bool, len(pa.Kernels))
	doneB := make([]bool, len(pb.Kernels))
	var groups []kernelGroup
	for i, k := range pa.Kernels {
		if j, ok := pb.byName[k.Kernel]; ok {
			groups = append(groups, kernelGroup{[]int32{int32(i)}, []int32{j}, matchName})
			doneA[i], doneB[j] = true, true
		}
	}
	byKey := func(key func(k *Kernel) string, how string) {
		type sides struct{ a, b []int32 }
		m := map[string]*sides{}
		var order []string
		add := func(ks []Kernel, done []bool, isA bool) {
			for i := range ks {
				if done[i] {
					continue
				}
				key := key(&ks[i])
				if key == "" {
					continue
				}
				s := m[key]
				if s == nil {
					s = &sides{}
					m[key] = s
					order = append(order, key)
				}
				if isA {
					s.a = append(s.a, int32(i))
				} else {
					s.b = append(s.b, int32(i))
				}
			}
		}
		add(pa.Kernels, doneA, true)
		add(pb.Kernels, doneB, false)
		for _, key := range order {
			s := m[key]
			if len(s.a) == 0 || len(s.b) == 0 {
				continue
			}
			groups = append(groups, kernelGroup{s.a, s.b, how})
			for _, i := range s.a {
				doneA[i] = true
			}
			for _, j := range s.b {
				doneB[j] = true
			}
		}
	}
	byKey(func(k *Kernel) string { return m.shortKey(k.Kernel) }, matchShort)

	// Kernels the layer tables link: union-find over A's kernels (0..n-1)
	// and B's (n..).
	n := len(pa.Kernels)
	parent := make([]int, n+len(pb.Kernels))
	for i := range parent {
		parent[i] = i
	}
	find := func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	for _, l := range links {
		ia, ib := int(pa.byName[pa.Positions[l.a].Kernel]), int(pb.byName[pb.Positions[l.b].Kernel])
		if doneA[ia] || doneB[ib] {
			continue
		}
		parent[find(ia)] = find(n + ib)
	}
	joined := map[int]bool{}
	notRole := map[int]bool{} // components joined by at least one category-only pairing
	for _, l := range links {
		ia, ib := int(pa.byName[pa.Positions[l.a].Kernel]), int(pb.byName[pb.Positions[l.b].Kernel])
		if doneA[ia] || doneB[ib] {
			continue
		}
		r := find(ia)
		joined[r] = true
		notRole[r] = notRole[r] || l.how != matchRole
	}
	comps := map[int]*kernelGroup{}
	var roots []int
	for i := range parent {
		if i < n && doneA[i] || i >= n && doneB[i-n] {
			continue
		}
		r := find(i)
		if !joined[r] {
			continue
		}
		g := comps[r]
		if g == nil {
			how := matchRole
			if notRole[r] {
				how = matchPosition
			}
			g = &kernelGroup{how: how}
			comps[r] = g
			roots = append(roots, r)
		}
		if i < n {
			g.a = append(g.a, int32(i))
			doneA[i] = true
		} else {
			g.b = append(g.b, int32(i-n))
			doneB[i-n] = true
		}
	}
	for _, r := range roots {
		groups = append(groups, *comps[r])
	}

	// What is left: the same ATen operation anywhere in the trace, then
	// the same category (kernels that name their operation are not lumped
	// with others of their category).
	byKey(func(k *Kernel) string {
		if f := m.functor(k.Kernel); f != "" && k.Category != inventory.Other {
			return k.Category + "\x00" + f
		}
		return ""
	}, matchRole)
	byKey(func(k *Kernel) string {
		if k.Category == inventory.Other || m.functor(k.Kernel) != "" {
			return ""
		}
		return k.Category
	}, matchCategory)

	for i := range pa.Kernels {
		if !doneA[i] {
			groups = append(groups, kernelGroup{a: []int32{int32(i)}})
		}
	}
	for j := range pb.Kernels {
		if !doneB[j] {
			groups = append(groups, kernelGroup{b: []int32{int32(j)}})
		}
	}
	return groups
}

// Change is a kernel substitution in the layer: kernels that were fused,
// split or replaced, added or removed, between two kernels both sides run.
type Change struct {
	Kind     string   `json:"kind"`     // fused, split, replaced, added, removed
	Category string   `json:"category"` // "" when the kernels are of several categories
	A        []string `json:"a"`        // short names, in layer order
	B        []string `json:"b"`
	PosA     []int    `json:"pos_a"`
	PosB     []int    `json:"pos_b"`
	AUS      float64  `json:"a_us"` // summed mean times of A's kernels in their layers
	BUS      float64  `json:"b_us"`
}

// Change kinds.
const (
	changeFused    = "fused"    // several kernels of A became fewer of B
	changeSplit    = "split"    // one or a few kernels of A became more of B
	changeReplaced = "replaced" // as many kernels, by other names
	changeAdded    = "added"
	changeRemoved  = "removed"
)

// changes reads the substitutions off the aligned tables. Between two
// positions that run the same kernel (by name or short name) on both
// sides (or the same ATen operation), the kernels of each category are compared as a set: more on A
// than on B is a fusion, fewer a split, as many under other names a
// replacement; categories found on one side only are added or removed,
// or, when both sides have such, one replacement of the whole set.
//
// It also returns the links between positions that stand for each other:
// the same ATen operation, and the kernels of a category that replace
// each other.
func changes(pa, pb *Profile, aligned []pairing) ([]Change, []pairing) {
	var out []Change
	var links, seg []pairing
	flush := func() {
		if len(seg) > 0 {
			cs, ls := segmentChanges(pa, pb, seg)
			out, links = append(out, cs...), append(links, ls...)
		}
		seg = seg[:0]
	}
	for _, p := range aligned {
		if p.how == matchName || p.how == matchShort || p.how == matchRole {
			if p.how == matchRole {
				links = append(links, p)
			}
			flush()
			continue
		}
		seg = append(seg, p)
	}
	flush()
	return mergeChanges(out), links
}

func segmentChanges(pa, pb *Profile, seg []pairing) ([]Change, []pairing) {
	type side struct{ a, b []int }
	byCat := map[string]*side{}
	var cats []string
	add := func(cat string, a, b int) {
		s := byCat[cat]
		if s == nil {
			s = &side{}
			byCat[cat] = s
			cats = append(cats, cat)
		}
		if a >= 0 {
			s.a = append(s.a, a)
		}
		if b >= 0 {
			s.b = append(s.b, b)
		}
	}
	// A kernel that finishes a GEMM (a split-K reduce) is compared with
	// its like, not with the GEMMs of its category: one side splitting K
	// is not a fusion on the other.
	key := func(p *Position) string {
		if inventory.FinishesGEMM(p.Kernel) {
			return p.Category + " (GEMM finisher)"
		}
		return p.Category
	}
	for _, p := range seg {
		if p.a >= 0 {
			add(key(&pa.Positions[p.a]), p.a, -1)
		}
		if p.b >= 0 {
			add(key(&pb.Positions[p.b]), -1, p.b)
		}
	}
	var out []Change
	var links []pairing
	var onlyA, onlyB []int
	for _, c := range cats {
		s := byCat[c]
		if len(s.a) > 0 && len(s.b) > 0 {
			for _, a := range s.a {
				for _, b := range s.b {
					links = append(links, pairing{a, b, matchPosition})
				}
			}
		}
		switch {
		case len(s.b) == 0:
			onlyA = append(onlyA, s.a...)
		case len(s.a) == 0:
			onlyB = append(onlyB, s.b...)
		case len(s.a) == len(s.b):
			// As many on both sides: each replaces the one at its place.
			for i := range s.a {
				out = append(out, change(pa, pb, changeReplaced, c, s.a[i:i+1], s.b[i:i+1]))
			}
		case len(s.a) > len(s.b):
			out = append(out, change(pa, pb, changeFused, c, s.a, s.b))
		default:
			out = append(out, change(pa, pb, changeSplit, c, s.a, s.b))
		}
	}
	slices.Sort(onlyA)
	slices.Sort(onlyB)
	switch {
	case len(onlyA) > 0 && len(onlyB) > 0:
		out = append(out, change(pa, pb, changeReplaced, "", onlyA, onlyB))
	case len(onlyA) > 0:
		out = append(out, change(pa, pb, changeRemoved, "", onlyA, nil))
	case len(onlyB) > 0:
		out = append(out, change(pa, pb, changeAdded, "", nil, onlyB))
	}
	return out, links
}

func change(pa, pb *Profile, kind, cat string, as, bs []int) Change {
	c := Change{Kind: kind, Category: cat, A: []string{}, B: []string{}, PosA: []int{}, PosB: []int{}}
	cats := map[string]bool{}
	for _, i := range as {
		p := &pa.Positions[i]
		c.A, c.PosA, c.AUS = append(c.A, p.ShortName), append(c.PosA, p.Pos), c.AUS+p.AvgUS
		cats[p.Category] = true
	}
	for _, i := range bs {
		p := &pb.Positions[i]
		c.B, c.PosB, c.BUS = append(c.B, p.ShortName), append(c.PosB, p.Pos), c.BUS+p.AvgUS
		cats[p.Category] = true
	}
	if len(cats) == 1 {
		for k := range cats {
			c.Category = k
		}
	}
	return c
}

// mergeChanges folds changes that swap the same kernels for the same
// kernels at several places of the layer into one (a vendor's GEMM for
// another's, at every GEMM of the layer).
func mergeChanges(cs []Change) []Change {
	out := []Change{}
	index := map[string]int{}
	for _, c := range cs {
		key := c.Kind + "\x00" + strings.Join(c.A, "\x01") + "\x00" + strings.Join(c.B, "\x01")
		if i, ok := index[key]; ok {
			o := &out[i]
			o.PosA, o.PosB = append(o.PosA, c.PosA...), append(o.PosB, c.PosB...)
			o.AUS, o.BUS = o.AUS+c.AUS, o.BUS+c.BUS
			continue
		}
		index[key] = len(out)
		out = append(out, c)
	}
	for i := range out {
		out[i].AUS, out[i].BUS = round3(out[i].AUS), round3(out[i].BUS)
	}
	slices.SortStableFunc(out, func(x, y Change) int {
		return cmp.Compare(abs(y.BUS-y.AUS), abs(x.BUS-x.AUS))
	})
	return out
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}
