package report

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/inventory/analysis"
)

// nameRows gives every row its display name: the role labels of its
// positions across levels, unique within the layer kind (a repeated name
// gets " #2", " #3" in position order).
func nameRows(rows []*row) {
	type key struct {
		kind  int
		label string
	}
	total, seen := map[key]int{}, map[key]int{}
	labels := make([][]string, len(rows))
	for i, r := range rows {
		labels[i] = r.labels()
		if len(labels[i]) == 0 {
			labels[i] = []string{""}
		}
		total[key{r.Kind, strings.Join(labels[i], "\x00")}]++
	}
	for i, r := range rows {
		k := key{r.Kind, strings.Join(labels[i], "\x00")}
		suffix := ""
		if total[k] > 1 {
			seen[k]++
			if seen[k] > 1 {
				suffix = fmt.Sprintf(" #%d", seen[k])
			}
		}
		names := make([]string, len(labels[i]))
		for j, l := range labels[i] {
			names[j] = code(esc(l + suffix))
		}
		r.Label, r.Name = labels[i][len(labels[i])-1]+suffix, strings.Join(names, " → ")
	}
}

// kernelRoles maps each kernel of a level to the roles of the decode
// layer positions it runs at ("before O-proj, before QKV"); a kernel that
// runs only in the prefill layers says so ("prefill only: attention").
// Kernels in neither are absent.
func kernelRoles(l *level) map[string]string {
	out := map[string]string{}
	collect := func(t *analysis.LevelTable) map[string][]string {
		by := map[string][]string{}
		if t == nil {
			return by
		}
		for _, p := range t.Positions {
			r := cmp.Or(p.Role, "pos "+strconv.Itoa(p.Pos))
			if !slices.Contains(by[p.Kernel], r) {
				by[p.Kernel] = append(by[p.Kernel], r)
			}
		}
		return by
	}
	if l.File == nil {
		return out
	}
	for k, rs := range collect(l.File.Prefill) {
		out[k] = "prefill only: " + strings.Join(rs, ", ")
	}
	for k, rs := range collect(l.File.Decode) {
		out[k] = strings.Join(rs, ", ")
	}
	return out
}

// roleSources says where the positions' roles come from.
func (v *view) roleSources() string {
	capture, inferred := 0, 0
	for _, r := range v.rows {
		for _, c := range r.Cells {
			if c == nil {
				continue
			}
			switch c.RoleSource {
			case inventory.RoleFromCapture:
				capture++
			case inventory.RoleFromInferred:
				inferred++
			}
		}
	}
	arch := "the layer's structure (the order of the GEMMs, norms and MoE routing around attention)"
	if v.r.arch != nil {
		arch += " and the model config"
	}
	switch {
	case capture > 0 && inferred > 0:
		return "Roles come from the capture trace's module names where it names the position, else inferred from " + arch + "."
	case capture > 0:
		return "Roles come from the capture trace's module names."
	case inferred > 0:
		return "Roles are inferred from " + arch + "; run the engine with `--mark-trace` to name them from its modules."
	}
	return "No position has a role (the layer has no attention kernel to place the others by)."
}

// ensureRoles names the positions of level files written before roles
// existed, from the layer's structure and the model config.
func (r *run) ensureRoles() {
	for _, l := range r.levels {
		if t := l.decode(); t != nil && !slices.ContainsFunc(t.Positions, func(p inventory.Position) bool { return p.Role != "" }) {
			t.AssignRoles(r.arch)
		}
	}
}
