package roofline

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/modelconfig"
	"github.com/profile-model/profile-model/inventory"
)

// Point is one position of a decode layer against the GPU's roof.
type Point struct {
	Pos       int     `json:"pos"`
	LayerKind int     `json:"layer_kind"`
	Label     string  `json:"label"` // the position's role label
	Role      string  `json:"role"`
	TimeUS    float64 `json:"time_us"` // measured, per layer
	Work
	TFLOPS    float64 `json:"tflops"`    // achieved
	TBS       float64 `json:"tbs"`       // achieved, TB/s
	Intensity float64 `json:"intensity"` // FLOPs per byte
	Bound     string  `json:"bound"`     // "memory" or "compute"
	// PctRoof is the share of the roof reached: the time the position
	// would take at the GPU's peak (its FLOPs at the compute peak or its
	// bytes at the bandwidth, whichever is longer) over its measured time.
	PctRoof float64 `json:"pct_roofline"`
	GainUS  float64 `json:"gain_us"` // measured time − time at the roof
}

// Table is the roofline of one level's decode layer.
type Table struct {
	GPU    Peak    `json:"gpu"`
	Step   Step    `json:"step"`
	Points []Point `json:"points"`
	// Missing says why a position has no point ("pos 7 MoE_sort (sort):
	// work not modelled").
	Missing []string `json:"missing,omitempty"`
	// Refused says why a position's figures were left out as impossible:
	// not numbers, or faster than the peak allows where the work is not
	// an estimate ("pos 5 QKV (154% of the roof: ...)").
	Refused []string `json:"refused,omitempty"`
}

// Compute puts every position of the decode table t whose role's work is
// modelled against the GPU's peak p.
func Compute(t *inventory.LayerTable, a *modelconfig.Architecture, s Step, p Peak) *Table {
	out := &Table{GPU: p, Step: s}
	labels := t.Labels()
	for i, pos := range t.Positions {
		if a != nil && a.Attention == "MLA" && pos.RoleSource == inventory.RoleFromInferred && mlaUnsure[pos.Role] {
			// The structure of a latent-attention layer puts W_UK last
			// before attention and W_UV first after it: the GEMMs read as
			// QKV and O-proj are those, or not; a capture trace names them.
			out.Missing = append(out.Missing, fmt.Sprintf("pos %d %s (MLA: role inferred from the layer's structure; a capture trace names the projections)", pos.Pos, labels[i]))
			continue
		}
		w, ok := Of(pos.Role, pos.Category, a, s)
		if !ok || pos.AvgUS <= 0 || (w.FLOPs == 0 && w.Bytes == 0) {
			out.Missing = append(out.Missing, fmt.Sprintf("pos %d %s", pos.Pos, labels[i]))
			continue
		}
		pt := point(pos, labels[i], w, s, p)
		// MoE positions count the experts uniform routing touches and
		// attention the mean context: skew or shorter contexts put them
		// above 100% (the report says so); other work is what the step
		// must move at least.
		estimated := strings.Contains(pos.Category, "MoE") || pos.Role == inventory.RoleAttention
		if bad := impossible(pt, p, estimated); bad != "" {
			// Printed, the figure would be believed.
			out.Refused = append(out.Refused, fmt.Sprintf("pos %d %s (%s)", pos.Pos, labels[i], bad))
			continue
		}
		out.Points = append(out.Points, pt)
	}
	return out
}

// maxEstimatedPct is the most % of roofline an estimated position (MoE,
// attention) may show: skewed routing or short contexts explain a few
// times the roof, not more.
const maxEstimatedPct = 1000

// impossible says why a point cannot be right, "" when it can.
func impossible(pt Point, p Peak, estimated bool) string {
	for _, v := range []float64{pt.PctRoof, pt.TFLOPS, pt.TBS, pt.GainUS} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "not a number: check the config and the peaks"
		}
	}
	if pt.PctRoof > 100 && (!estimated || pt.PctRoof > maxEstimatedPct) {
		return fmt.Sprintf("%.3g%% of the roof: faster than %s's peak allows, so the config, the batch size or the role does not match what ran, or the peak is too low", pt.PctRoof, p.GPU)
	}
	return ""
}

// mlaUnsure are the roles the layer's structure gives the GEMMs around
// latent attention, which may be its absorbed products instead.
var mlaUnsure = map[string]bool{inventory.RoleQKV: true, inventory.RoleOProj: true, "Q": true, "K": true, "V": true}

// Annotate gives each position of lt that has a point its roofline
// columns (the layer CSV's), matched by position and layer kind.
func (t *Table) Annotate(lt *inventory.LayerTable) {
	if t == nil || lt == nil {
		return
	}
	type key struct{ pos, kind int }
	at := map[key]int{}
	for i, p := range lt.Positions {
		at[key{p.Pos, p.LayerKind}] = i
	}
	for _, pt := range t.Points {
		if i, ok := at[key{pt.Pos, pt.LayerKind}]; ok {
			lt.Positions[i].Roof = &inventory.Roof{TBS: pt.TBS, TFLOPS: pt.TFLOPS, Intensity: pt.Intensity, Bound: pt.Bound, PctRoof: pt.PctRoof}
		}
	}
}

func point(pos inventory.Position, label string, w Work, s Step, p Peak) Point {
	sec := pos.AvgUS * 1e-6
	peakF := p.Vector
	if w.Matrix {
		peakF = p.BF16
		if pos.Role != inventory.RoleAttention {
			peakF = p.Matrix(s.Weights)
		}
	}
	pt := Point{Pos: pos.Pos, LayerKind: pos.LayerKind, Label: label, Role: pos.Role, TimeUS: pos.AvgUS, Work: w,
		TFLOPS: w.FLOPs / sec / 1e12, TBS: w.Bytes / sec / 1e12}
	if w.Bytes > 0 {
		pt.Intensity = w.FLOPs / w.Bytes
	}
	tCompute, tMemory := 0.0, w.Bytes/(p.HBM*1e12)
	if peakF > 0 {
		tCompute = w.FLOPs / (peakF * 1e12)
	}
	roof := math.Max(tCompute, tMemory)
	pt.Bound = "memory"
	if tCompute > tMemory {
		pt.Bound = "compute"
	}
	pt.PctRoof = 100 * roof / sec
	pt.GainUS = pos.AvgUS - roof*1e6
	return pt
}

// MostToGain is the point with the most time to gain (measured − roof).
func (t *Table) MostToGain() (Point, bool) {
	if t == nil || len(t.Points) == 0 {
		return Point{}, false
	}
	return slices.MaxFunc(t.Points, func(a, b Point) int { return cmp.Compare(a.GainUS, b.GainUS) }), true
}

// CheckDims compares the input dims a capture trace gave each GEMM
// position with the analytical shape of its role: a mismatch is a warning
// naming the position (the config, the batch or the role is not what the
// engine ran).
func CheckDims(t *inventory.LayerTable, a *modelconfig.Architecture, s Step) []diag.Warning {
	var out []diag.Warning
	labels := t.Labels()
	for i, pos := range t.Positions {
		if pos.InputDims == "" {
			continue
		}
		w, ok := Of(pos.Role, pos.Category, a, s)
		if !ok || w.K == 0 {
			continue
		}
		k, n, ok := gemmDims(pos.InputDims)
		if !ok {
			continue
		}
		if !(k == w.K && n == w.N) {
			out = append(out, diag.New(diag.CaptureMismatch, fmt.Sprintf(
				"roofline: pos %d %s: the capture trace's GEMM is %d → %d, the model config gives %d → %d for its role: its FLOPs and bytes are not trusted", pos.Pos, labels[i], k, n, w.K, w.N)))
		}
	}
	return out
}

// gemmDims reads K (in) and N (out) from a matrix product's input dims:
// [[M,K],[K,N]] (mm) or [[M,K],[N,K]] (linear: the weight as stored).
func gemmDims(s string) (k, n int, ok bool) {
	var ds [][]int
	if err := json.Unmarshal([]byte(s), &ds); err != nil || len(ds) < 2 || len(ds[0]) != 2 || len(ds[1]) != 2 {
		return 0, 0, false
	}
	x, w := ds[0], ds[1]
	switch {
	case w[0] == x[1]:
		return w[0], w[1], true
	case w[1] == x[1]:
		return w[1], w[0], true
	}
	return 0, 0, false
}
