package inventory

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/diag"
	"github.com/profile-model/profile-model/tracing"
)

// CaptureHeader is the robust per-layer CSV's header when a capture trace
// named the positions: the compatible columns, then where each kernel
// comes from.
var CaptureHeader = append(append([]string(nil), LayerHeader...), "module", "op", "input_dims", "input_types")

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
	_ = w.Write(CaptureHeader)
	for _, p := range t.Positions {
		_ = w.Write([]string{strconv.Itoa(p.Pos), p.ShortName, p.Kernel, f1(p.AvgUS), f1(p.StdUS), f1(p.MinUS), f1(p.MaxUS), f1(p.Pct), strconv.Itoa(p.Count),
			p.Module, p.Op, p.InputDims, p.InputTypes})
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
	for i := range c.Kernels {
		names[i] = c.Kernels[i].Name
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
		for j, i := range at {
			var paths []string
			p := &t.Positions[i]
			for _, w := range wins {
				ck := &c.Kernels[w+j]
				if !sameKernel(ck.Name, want[j]) {
					continue
				}
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
		for j := range want {
			if sameKernel(names[i+j], want[j]) {
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

// sameKernel compares a kernel's name in the execution trace with the
// name its launch gave in the capture trace (one may be mangled).
func sameKernel(a, b string) bool {
	return a == b || (a != "" && b != "" && Demangle(a) == Demangle(b))
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
