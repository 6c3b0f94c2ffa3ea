package inventory

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/tracing"
)

// CaptureHeader is the robust per-layer CSV's header when a capture trace
// named the positions: the compatible columns, then where each kernel
// comes from.
var CaptureHeader = append(append([]string(nil), layerHeader...), "module", "op", "input_dims", "input_types")

// HasCapture reports whether a capture trace named the table's positions.
func (t *LayerTable) HasCapture() bool {
	for i := range t.Positions {
		if t.Positions[i].Module != "" || t.Positions[i].InputDims != "" {
			return true
		}
	}
	return false
}

func (t *LayerTable) captureCSV() []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	withRoof := hasRoof(t.Rows())
	head := append(slices.Clone(CaptureHeader), RoleColumn)
	if withRoof {
		head = append(head, RoofColumns...)
	}
	_ = w.Write(head)
	for _, p := range t.Positions {
		rec := []string{strconv.Itoa(p.Pos), p.ShortName, p.Kernel, f1(p.AvgUS), f1(p.StdUS), f1(p.MinUS), f1(p.MaxUS), f1(p.Pct), strconv.Itoa(p.Count),
			p.Module, p.Op, p.InputDims, p.InputTypes, p.Role}
		if withRoof {
			rec = append(rec, p.Roof.fields()...)
		}
		_ = w.Write(rec)
	}
	w.Flush()
	return buf.Bytes()
}

// AddCapture names every position of a robust table from the capture
// trace of the graph its steps replayed. A graph replays its kernels in
// the order they were captured, so each layer of the table is a run of
// the capture's launches: a window of the capture that starts with the
// layer's first kernel and has the kernel of each position at the same
// offset is one layer. Every position takes the module path, op and
// shapes of its kernel in those windows (a module path's layer index,
// which differs from window to window, becomes *). It returns a
// capture_mismatch warning, also added to the table, when no window
// matches a layer kind exactly, or a position's kernel differs from the
// capture's at its place.
func (t *LayerTable) AddCapture(c *tracing.Capture) []diag.Warning {
	if t.Mode == ModeCompat || len(t.Positions) == 0 || c == nil {
		return nil
	}
	names := make([]string, len(c.Kernels))
	named := false
	for i := range c.Kernels {
		names[i] = c.Kernels[i].Name
		named = named || names[i] != ""
	}
	if !named {
		return t.addUnnamedCapture(c)
	}
	var warns []diag.Warning
	for kind := range t.KernelsPerLayer {
		var at []int // indices into t.Positions, in layer order
		for i := range t.Positions {
			if t.Positions[i].LayerKind == kind {
				at = append(at, i)
			}
		}
		if len(at) == 0 {
			continue
		}
		want := make([]string, len(at))
		for j, i := range at {
			want[j] = t.Positions[i].Kernel
		}
		wins, exact := captureWindows(names, want)
		if len(wins) == 0 {
			warns = append(warns, diag.New(diag.CaptureMismatch, fmt.Sprintf(
				"capture trace %s: no run of its %d captured kernels matches layer kind %d (%d kernels starting with %s): it is the capture of another model, batch size or build; positions left unnamed",
				c.Path, len(names), kind, len(want), shortKernel(want[0]))))
			continue
		}
		var bad []string
		match := make([][]int, len(wins))
		for wi, w := range wins {
			match[wi] = windowMatch(names[w:w+len(want)], want)
		}
		for j, i := range at {
			var paths []string
			p := &t.Positions[i]
			for wi, w := range wins {
				if match[wi][j] < 0 {
					continue
				}
				ck := &c.Kernels[w+match[wi][j]]
				if len(paths) == 0 {
					p.Op, p.InputDims, p.InputTypes = ck.Op, ck.InputDims, ck.InputTypes
				}
				paths = append(paths, ck.Module)
			}
			if len(paths) < len(wins) {
				bad = append(bad, fmt.Sprintf("pos %d (%s) in %d of %d layers", p.Pos, p.ShortName, len(wins)-len(paths), len(wins)))
			}
			p.Module = generalizePaths(paths)
		}
		if !exact || len(bad) > 0 {
			warns = append(warns, diag.New(diag.CaptureMismatch, fmt.Sprintf(
				"capture trace %s: layer kind %d matches no run of captured kernels exactly; the kernel differs at %s: a position that differs in every layer is left unnamed, the others are named from the layers where the kernel matches",
				c.Path, kind, strings.Join(bad, ", "))))
		}
	}
	t.Warnings = append(t.Warnings, warns...)
	return warns
}

// addUnnamedCapture names the positions from a capture whose launches
// do not name their kernels (CUDA runtime events do not). The layers are
// then found by module scope instead of by kernel name: the launches under
// one layer's scope (the outermost path component whose number changes
// from launch to launch: model.layers.7, Qwen3DecoderLayer_7) form a
// group, and a group with as many launches as a layer kind has positions
// names them in order. Nothing can be checked by name, so a
// capture_unchecked warning says how the positions were matched.
func (t *LayerTable) addUnnamedCapture(c *tracing.Capture) []diag.Warning {
	groups := layerGroups(c.Kernels)
	var warns []diag.Warning
	for kind := range t.KernelsPerLayer {
		var at []int
		for i := range t.Positions {
			if t.Positions[i].LayerKind == kind {
				at = append(at, i)
			}
		}
		if len(at) == 0 {
			continue
		}
		var wins [][]int
		for _, g := range groups {
			if len(g) == len(at) {
				wins = append(wins, g)
			}
		}
		if len(wins) == 0 {
			warns = append(warns, diag.New(diag.CaptureMismatch, fmt.Sprintf(
				"capture trace %s names no kernels and no layer scope of it holds %d launches (layer kind %d): positions left unnamed",
				c.Path, len(at), kind)))
			continue
		}
		for j, i := range at {
			p := &t.Positions[i]
			paths := make([]string, 0, len(wins))
			for _, w := range wins {
				paths = append(paths, c.Kernels[w[j]].Module)
			}
			ck := &c.Kernels[wins[0][j]]
			p.Op, p.InputDims, p.InputTypes = ck.Op, ck.InputDims, ck.InputTypes
			p.Module = generalizePaths(paths)
		}
		warns = append(warns, diag.New(diag.CaptureUnchecked, fmt.Sprintf(
			"capture trace %s names no kernels (its launches are runtime calls without a kernel name): layer kind %d's %d positions are named in launch order from %d layer scopes of %d launches, not checked kernel by kernel",
			c.Path, kind, len(at), len(wins), len(at))))
	}
	t.Warnings = append(t.Warnings, warns...)
	return warns
}

// layerGroups splits the launches into runs that share a layer scope: the
// module path up to the outermost component whose number changes between
// neighbouring launches (model.layers.3 → model.layers.4, DecoderLayer_3 →
// DecoderLayer_4). Launches outside any such scope (the embedding, the
// final norm and head) belong to no group.
func layerGroups(ks []tracing.CapturedKernel) [][]int {
	depth := -1
	for i := 1; i < len(ks); i++ {
		a, b := strings.Split(ks[i-1].Module, "."), strings.Split(ks[i].Module, ".")
		for d := 0; d < len(a) && d < len(b); d++ {
			if a[d] != b[d] {
				if hasDigit(a[d]) && stem(a[d]) == stem(b[d]) && (depth < 0 || d < depth) {
					depth = d
				}
				break
			}
		}
	}
	if depth < 0 {
		return nil
	}
	var groups [][]int
	prev := ""
	for i := range ks {
		parts := strings.Split(ks[i].Module, ".")
		if len(parts) <= depth || !hasDigit(parts[depth]) {
			prev = ""
			continue
		}
		key := strings.Join(parts[:depth+1], ".")
		if key != prev {
			groups = append(groups, nil)
			prev = key
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], i)
	}
	return groups
}

func hasDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

// stem is s without its digits: DecoderLayer_3 and DecoderLayer_4 share one.
func stem(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, s)
}

// captureWindows returns the starts of the windows of names that are
// layers of want: every window equal to want when there is one (exact),
// else the windows that start with want's first kernel and agree at more
// than half of its positions.
func captureWindows(names, want []string) (starts []int, exact bool) {
	n := len(want)
	var partial []int
	for i := 0; i+n <= len(names); {
		if !sameKernel(names[i], want[0]) {
			i++
			continue
		}
		same := 0
		for _, m := range windowMatch(names[i:i+n], want) {
			if m >= 0 {
				same++
			}
		}
		switch {
		case same == n:
			starts = append(starts, i)
			i += n
		case same*2 > n:
			partial = append(partial, i)
			i += n
		default:
			i++
		}
	}
	if len(starts) > 0 {
		return starts, true
	}
	return partial, false
}

// windowMatch pairs each wanted position with a captured kernel of the
// window: the one at its own index when the names agree, else the nearest
// unpaired one of the same name. The table orders a layer's positions by
// when they start on the GPU, the capture by launch, and kernels on other
// streams can start in another order than they were launched. -1: none.
func windowMatch(names, want []string) []int {
	m := make([]int, len(want))
	used := make([]bool, len(names))
	for j := range want {
		m[j] = -1
		if sameKernel(names[j], want[j]) {
			m[j], used[j] = j, true
		}
	}
	for j := range want {
		if m[j] >= 0 {
			continue
		}
		for d := 1; d < len(names) && m[j] < 0; d++ {
			for _, k := range [2]int{j - d, j + d} {
				if k >= 0 && k < len(names) && !used[k] && sameKernel(names[k], want[j]) {
					m[j], used[k] = k, true
					break
				}
			}
		}
	}
	return m
}

// sameKernel compares a kernel's name in the execution trace with the
// name its launch gave in the capture trace (one may be mangled).
func sameKernel(a, b string) bool {
	return a == b || (a != "" && b != "" && readableName(a) == readableName(b))
}

func shortKernel(name string) string {
	if len(name) > 60 {
		return name[:60] + "…"
	}
	return name
}

// generalizePaths is the module path the paths share, with the numbers
// that differ between them (layer indices) written *; the first path when
// they differ otherwise, "" when there is none.
func generalizePaths(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	first := splitDigits(paths[0])
	wild := make([]bool, len(first))
	for _, p := range paths[1:] {
		toks := splitDigits(p)
		if len(toks) != len(first) {
			return paths[0]
		}
		for i := range toks {
			if toks[i] == first[i] {
				continue
			}
			if !isDigits(toks[i]) || !isDigits(first[i]) {
				return paths[0]
			}
			wild[i] = true
		}
	}
	var b strings.Builder
	for i, tok := range first {
		if wild[i] {
			b.WriteByte('*')
		} else {
			b.WriteString(tok)
		}
	}
	return b.String()
}

// splitDigits cuts s into alternating runs of digits and non-digits.
func splitDigits(s string) []string {
	var out []string
	start := 0
	for i := 1; i <= len(s); i++ {
		if i == len(s) || isDigit(s[i]) != isDigit(s[start]) {
			out = append(out, s[start:i])
			start = i
		}
	}
	return out
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isDigits(s string) bool { return s != "" && isDigit(s[0]) }
