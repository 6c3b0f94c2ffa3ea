package kernelmodel

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// invRow is one kernel of a whole-trace inventory (kernel,count,total_us,...;
// names cut at 80 characters).
type invRow struct {
	name    string
	count   int
	totalUS float64
}

func readInventory(t *testing.T, path string) []invRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var rows []invRow
	for i, r := range recs[1:] {
		if len(r) < 3 {
			t.Fatalf("%s: row %d: %d fields, want kernel,count,total_us,...", path, i+2, len(r))
		}
		n, err1 := strconv.Atoi(r[1])
		tot, err2 := strconv.ParseFloat(r[2], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: row %d: count %q, total_us %q are not numbers", path, i+2, r[1], r[2])
		}
		rows = append(rows, invRow{r[0], n, tot})
	}
	return rows
}

// prefillAnchor is a recorded run whose prefill steps anchor the prefill
// kernels' cost against tokens.
type prefillAnchor struct {
	isl, conc int
	// oneEach: its prefill steps are taken as one prompt each (mean tokens
	// per step = the mean input); otherwise the trace holds all the run's
	// prompts (mean tokens per step = num_prompts × mean input / steps).
	oneEach bool
}

// prefillAnchors: the inventories with prefill steps. isl1024 conc8 (3
// prefill steps among 42) and isl8192 conc16 (16 prefill steps, which
// cannot hold the run's 50 prompts of 7.3k tokens under a 16384-token step
// budget) are taken as one prompt per step; isl1024 conc16 holds the whole
// run (330 sampler calls = 290 decode + 40 prefill steps) so its 40 steps
// hold the 50 prompts. isl1024 conc32 is left out: there every prefill
// kernel, launch-bound ones included (top-k, RoPE, embedding), takes 15-20x
// its time at conc 16 per call, which no token count explains.
var prefillAnchors = []prefillAnchor{{1024, 8, true}, {1024, 16, false}, {8192, 16, true}}

var numPromptsRe = regexp.MustCompile(`num_prompts=(\d+)`)

// prefillShare is the mean time per prefill call of the kernel whose full
// name is full: its inventory row's calls and time less the decode layers'
// share (positions of the decode table with the same row, times the decode
// layers of the trace, at the table's average).
func prefillShare(t *testing.T, inv []invRow, table []layerRow, decodeLayers int, full string, match func(string) bool) (float64, int) {
	t.Helper()
	var calls int
	var total float64
	var rowNames []string
	for _, r := range inv {
		if match(r.name) {
			calls += r.count
			total += r.totalUS
			rowNames = append(rowNames, r.name)
		}
	}
	if len(rowNames) == 0 {
		return 0, 0
	}
	for _, p := range table {
		for _, n := range rowNames {
			if strings.HasPrefix(p.Kernel, n) {
				calls -= decodeLayers
				total -= float64(decodeLayers) * p.AvgUS
				break
			}
		}
	}
	if calls <= 0 {
		t.Fatalf("kernel %.60q: no prefill calls left after the decode share", full)
	}
	return total / float64(calls), calls
}

// prefillFit is a prefill-layer kernel's cost against tokens, fitted over
// the anchors.
type prefillFit struct {
	a, b float64
	note string
}

// fitPrefillKernels fits a + b*x for each prefill-layer row (x: tokens per
// step, or tokens x mean prompt length for attention) by least squares
// over the anchors, b >= 0 and a >= 1 µs.
func fitPrefillKernels(t *testing.T, dir string, tables map[int][]layerRow, rows []extraRow) []prefillFit {
	t.Helper()
	type point struct{ x, y float64 }
	pts := make([][]point, len(rows))
	var toks []string
	for _, an := range prefillAnchors {
		base := fmt.Sprintf("level3_isl%d_conc%d", an.isl, an.conc)
		inv := readInventory(t, filepath.Join(dir, base+"_kernels.csv"))
		log := filepath.Join(dir, base+"_bench.log")
		in, _ := benchMeans(t, log)
		var fmha, pa int
		for _, r := range inv {
			switch {
			case strings.HasPrefix(r.name, "aiter::fmha_fwd"):
				fmha += r.count
			case strings.HasPrefix(r.name, "aiter::pa_bf16"):
				pa += r.count
			}
		}
		steps := float64(fmha) / 62
		if steps < 1 {
			t.Fatalf("%s: no prefill steps (no fmha_fwd)", base)
		}
		tokens := in
		if !an.oneEach {
			data, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			m := numPromptsRe.FindSubmatch(data)
			if m == nil {
				t.Fatalf("%s: no num_prompts", log)
			}
			n, _ := strconv.Atoi(string(m[1]))
			tokens = float64(n) * in / steps
		}
		toks = append(toks, fmt.Sprintf("%.0f", tokens))
		for i, r := range rows {
			match := func(n string) bool { return strings.HasPrefix(r.name, n) }
			if r.short == "GEMM_BF16 (rocBLAS)" { // the router: every S_B GEMM the decode layer does not run
				match = func(n string) bool {
					return strings.HasPrefix(n, "Cijk_Alik_Bljk_S_B_") && !strings.Contains(n, "_MT16x16x")
				}
			}
			perLayer := false
			if r.short == "MoE_sort_P0" { // some runs split it into clear-workspace, P0 and P1 kernels
				perLayer = true
				match = func(n string) bool {
					return strings.Contains(n, "MoeSortingMultiPhaseKernel_P0") || strings.Contains(n, "MoeSortingMultiPhaseKernel_P1") ||
						strings.Contains(n, "MoeSortingClearWorkspace")
				}
			}
			avg, calls := prefillShare(t, inv, tables[an.conc], pa, r.name, match)
			if perLayer {
				avg *= float64(calls) / float64(fmha)
			}
			if avg <= 0 {
				t.Fatalf("%s: no prefill time for %s", base, r.short)
			}
			x := tokens
			if r.basis == "attn" {
				x = tokens * in
			}
			pts[i] = append(pts[i], point{x, avg})
		}
	}
	fits := make([]prefillFit, len(rows))
	for i := range rows {
		var sx, sy, sxx, sxy float64
		for _, p := range pts[i] {
			sx += p.x
			sy += p.y
			sxx += p.x * p.x
			sxy += p.x * p.y
		}
		n := float64(len(pts[i]))
		b := (n*sxy - sx*sy) / (n*sxx - sx*sx)
		a := (sy - b*sx) / n
		if b < 0 {
			a, b = sy/n, 0
		}
		if a < 1 {
			a = 1
			b = 0
			for _, p := range pts[i] {
				b += (p.y - a) * p.x
			}
			b = max(b/sxx, 0)
		}
		var obs []string
		for _, p := range pts[i] {
			obs = append(obs, fmt.Sprintf("%.3g", p.y))
		}
		fits[i] = prefillFit{a: a, b: b, note: fmt.Sprintf("prefill anchors at %s tokens/step: %s us per call", strings.Join(toks, ", "), strings.Join(obs, ", "))}
	}
	return fits
}
