package report

import (
	"cmp"
	"slices"

	"github.com/profile-model/profile-model/inventory"
)

// row is one kernel position of the decode layer followed across levels.
type row struct {
	Kind  int
	Cells []*inventory.Position // per analysed level; nil where the position does not run
	Pos   int                   // display position, numbered over all kinds

	Fit   fit
	Trend string
	// Label is the row's display name, unique within its layer kind
	// (nameRows); Name the same in markdown, with the labels of every
	// level where the kernel changes ("`A` → `B`").
	Label, Name string
}

// last is the row's position at the latest level before li that has one.
func (r *row) last(li int) *inventory.Position {
	for i := li - 1; i >= 0; i-- {
		if r.Cells[i] != nil {
			return r.Cells[i]
		}
	}
	return nil
}

// labels lists the distinct role labels of the row in level order.
func (r *row) labels() []string {
	var out []string
	for _, p := range r.Cells {
		if p != nil && !slices.Contains(out, p.Label()) {
			out = append(out, p.Label())
		}
	}
	return out
}

// first is the row's first position.
func (r *row) first() *inventory.Position {
	for _, p := range r.Cells {
		if p != nil {
			return p
		}
	}
	return nil
}

// change is a place where the kernels of a layer differ between a level
// and the level before it: old positions (as they ran before) give way to
// new ones.
type change struct {
	Level    int // analysed level index where the new kernels run
	Kind     int
	Old, New []*row
}

// alignLevels follows the decode layer's positions across levels. Within
// each layer kind, a level's positions are matched to the rows so far along
// a longest common subsequence of full kernel names; in the gaps between
// matches, left-over positions pair with rows of the same short name (the
// same kernel with other template arguments), then of the same category
// (the same role: a fused kernel that replaces two); what is left appears
// as a new row or leaves a row empty. Every gap with a difference is a
// change.
func alignLevels(tables [][]inventory.Position) ([]*row, []change) {
	n := len(tables)
	kinds := 0
	for _, ps := range tables {
		for _, p := range ps {
			kinds = max(kinds, p.LayerKind+1)
		}
	}
	var all []*row
	var changes []change
	for kind := range kinds {
		var rows []*row
		for li, ps := range tables {
			var mine []*inventory.Position
			for i := range ps {
				if ps[i].LayerKind == kind {
					mine = append(mine, &ps[i])
				}
			}
			if len(mine) == 0 {
				continue
			}
			if len(rows) == 0 {
				for _, p := range mine {
					r := &row{Kind: kind, Cells: make([]*inventory.Position, n)}
					r.Cells[li] = p
					rows = append(rows, r)
				}
				continue
			}
			var chs []change
			rows, chs = mergeLevel(rows, mine, li, n, kind)
			changes = append(changes, chs...)
		}
		all = append(all, rows...)
	}
	for i, r := range all {
		r.Pos = i
	}
	slices.SortStableFunc(changes, func(a, b change) int { return cmp.Compare(a.Level, b.Level) })
	return all, changes
}

// mergeLevel adds level li's positions to rows.
func mergeLevel(rows []*row, ps []*inventory.Position, li, n, kind int) ([]*row, []change) {
	key := make([]string, len(rows))
	for i, r := range rows {
		if p := r.last(li); p != nil {
			key[i] = p.Kernel
		}
	}
	got := make([]string, len(ps))
	for i, p := range ps {
		got[i] = p.Kernel
	}
	match := lcs(got, key)
	var out []*row
	var changes []change
	ri := 0 // next row not yet placed
	var gapNew []*inventory.Position
	flush := func(rowEnd int) {
		gapRows := rows[ri:rowEnd]
		var live []*row // rows of the gap that ran at the level before
		for _, r := range gapRows {
			if r.last(li) != nil {
				live = append(live, r)
			}
		}
		paired := map[*row]*inventory.Position{}
		used := make([]bool, len(gapNew))
		for _, same := range []func(a, b *inventory.Position) bool{
			func(a, b *inventory.Position) bool { return a.ShortName == b.ShortName },
			func(a, b *inventory.Position) bool { return a.Category == b.Category },
		} {
			for _, r := range live {
				if paired[r] != nil {
					continue
				}
				for j, p := range gapNew {
					if !used[j] && same(r.last(li), p) {
						paired[r], used[j] = p, true
						break
					}
				}
			}
		}
		rowOf := map[*inventory.Position]*row{}
		for r, p := range paired {
			rowOf[p] = r
		}
		ch := change{Level: li, Kind: kind}
		for _, r := range live {
			if p := paired[r]; p == nil || p.Kernel != r.last(li).Kernel {
				ch.Old = append(ch.Old, r)
			}
		}
		// Rows keep their order; a new position goes in where the level
		// runs it, before the rows that pair with later positions.
		emitted := map[*row]bool{}
		next := 0
		for _, p := range gapNew {
			r := rowOf[p]
			if r == nil {
				r = &row{Kind: kind, Cells: make([]*inventory.Position, n)}
				r.Cells[li] = p
				out = append(out, r)
				ch.New = append(ch.New, r)
				continue
			}
			for ; next < len(gapRows) && !emitted[r]; next++ {
				out = append(out, gapRows[next])
				emitted[gapRows[next]] = true
			}
			r.Cells[li] = p
			if p.Kernel != r.last(li).Kernel {
				ch.New = append(ch.New, r)
			}
		}
		out = append(out, gapRows[next:]...)
		if len(ch.Old)+len(ch.New) > 0 {
			changes = append(changes, ch)
		}
		gapNew = gapNew[:0]
		ri = rowEnd
	}
	for i, p := range ps {
		if match[i] < 0 {
			gapNew = append(gapNew, p)
			continue
		}
		flush(match[i])
		r := rows[match[i]]
		r.Cells[li] = p
		out = append(out, r)
		ri = match[i] + 1
	}
	flush(len(rows))
	return out, changes
}

// lcs matches got against want along a longest common subsequence:
// match[i] is the index in want of got[i], or -1. Empty keys never match.
func lcs(got, want []string) []int {
	n, m := len(got), len(want)
	t := make([]int32, (n+1)*(m+1))
	at := func(i, j int) *int32 { return &t[i*(m+1)+j] }
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if got[i] != "" && got[i] == want[j] {
				*at(i, j) = *at(i+1, j+1) + 1
			} else {
				*at(i, j) = max(*at(i+1, j), *at(i, j+1))
			}
		}
	}
	match := make([]int, n)
	i, j := 0, 0
	for i < n {
		switch {
		case j < m && got[i] != "" && got[i] == want[j]:
			match[i] = j
			i++
			j++
		case j < m && *at(i, j+1) >= *at(i+1, j):
			j++
		default:
			match[i] = -1
			i++
		}
	}
	return match
}
