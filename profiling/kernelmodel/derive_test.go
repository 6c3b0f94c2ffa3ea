package kernelmodel

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/internal/units"
)

var update = flag.Bool("update", false, "rewrite data/atom_minimax_m25.csv from the corpus")

const dataHeader = `# The project's kernel model of an ATOM MiniMax-M2.5 (MoE, 256 experts, top-8,
# 62 layers, fp8 KV cache) step on one MI355X. Written by TestDerivedModelData
# (go test ./kernelmodel -run TestDerivedModelData -update) from the corpus:
# * section=layer: one row per decode-layer position (and per kernel variant
#   the tables show at that position, with the batch sizes it applies to),
#   fitted over conc{4,8,16,32}_layer.csv: avg_us = a + b*x by least squares,
#   x = batch size (basis bs) or, for the MoE expert GEMMs, the expected
#   number of distinct experts 256*(1-(1-8/256)^bs) (basis experts); b >= 0.
#   std_frac = mean std/avg, min_frac/max_frac = median min/avg, max/avg.
#   Paged attention grows by ctx_us_per_token per token of mean context
#   beyond ref_ctx, from the isl8192 vs isl1024 inventories at conc 8 and 16
#   (contexts: bench logs' mean input + half the mean output).
# * prep, prologue, epilogue, sample and prefill_{prologue,epilogue,sample}:
#   kernels of level3_isl1024_conc8_kernels.csv that are not in the decode
#   layer, a constant at their avg there. Names cut at 80 characters in the
#   inventories are completed from the full names of the layer tables.
# * section=prefill_layer: avg_us = a + b*x per call, x = tokens of the step
#   (basis tokens) or tokens x mean prompt length (basis attn), fitted by
#   least squares (b >= 0, a >= 1) over three inventories with prefill steps:
#   isl1024 conc8 (3 prefill steps among 42, one prompt each: 928 tokens),
#   isl1024 conc16 (the whole run: 50 prompts in 40 steps, 1160 tokens) and
#   isl8192 conc16 (16 steps, one prompt each: 7312 tokens; 50 prompts of
#   7.3k cannot fit 16 steps of a 16384-token budget, so the trace holds part
#   of the run). A kernel's time per prefill call is its inventory total less
#   the decode layers' share (decode layers = paged-attention calls, at the
#   per-layer table's avg), over the calls left. isl1024 conc32 is left out:
#   there every prefill kernel, launch-bound ones (top-k, RoPE, embedding)
#   included, takes 15-20x its conc-16 time per call, which no token count
#   explains.
# * graph_gap_us: the GPU's idle time before each kernel replayed from the
#   decode graph. A recorded level's median ITL is one decode step (most
#   tokens come from decode steps); less the model's kernel time of a decode
#   step at the level's concurrency and mean context and less step_gap_us,
#   over the step's kernels, it is one gap. The median over the 7 levels.
# * step_gap_us: host time between steps, stated (150 us), not derived: the
#   logs cannot tell it from the launch gaps (both are GPU idle time).
# * output_lag: how far into the next step a step's sampled tokens reach the
#   clients (ATOM returns a forward's tokens with the next forward's call
#   and streams them while it runs). Stated (0.65), set by the profiled
#   sweep of TestCalibrationAgainstRecorded (make calibrate): at 0 the sim's
#   median TTFT at isl1024 conc32 is 39% under the recorded one (the
#   recorded median sits behind a second prefill step: its first cohort's
#   tokens wait for the next cohort's prefill), at 1 the TTFTs at conc 4-16
#   are 15-30% over, at 0.5 isl1024 conc32 stays 19% under.
# * intake_us_per_token: the front end's time per prompt token before the
#   scheduler sees a request (ATOM's API process tokenizes the prompt and
#   hands it to the engine core over ZMQ); each request pays it on its own.
#   Stated (0.5 us, 4 ms for an 8k prompt), set by the same sweep: at 0 a
#   replacement request reaches the scheduler at the step boundary after
#   its predecessor's last token and isl8192 conc4 TTFT is 22% under, TPOT
#   15% over; any intake of a few ms lets the requests that finish during a
#   prefill queue up behind it, as the recorded p99 ITL (409 ms, more than
#   one prefill) shows they did. At 2 us and more, isl8192 conc16 TTFT goes
#   20% over.
`

// extraRow is a non-layer kernel: where it runs and where its timing comes from.
type extraRow struct {
	spec
	note string
}

func extraRows(layerName func(short string, bsHint int) string) []extraRow {
	fixed := func(sec, short, name, launch string, avg, std float64, note string) extraRow {
		return extraRow{spec{section: sec, bsMin: 1, bsMax: 1 << 20, short: short, name: name, launch: launch, basis: "const", a: avg, stdFrac: std, minFrac: 0.85, maxFrac: 1.4}, note}
	}
	// Prefill-layer kernels: a + b*x, fitted by fitPrefillKernels.
	scaled := func(short, name, launch, basis string) extraRow {
		return extraRow{spec{section: "prefill_layer", bsMin: 1, bsMax: 1 << 20, short: short, name: name, launch: launch, basis: basis, stdFrac: 0.05, minFrac: 0.85, maxFrac: 1.3}, ""}
	}
	finalNorm := strings.Replace(layerName("RMSNorm+Quant", 8), "256, 16, true, false, true, 1>", "256, 16, false, false, true, 1>", 1)
	lmHead := "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x16x512_MI16x16x1_SN_LDSB1_AFC0" + suffixAfter(layerName("GEMM_BF16 (rocBLAS)", 16), "_AFC0")
	router := "Cijk_Alik_Bljk_S_B_Bias_HA_S_SAV_UserArgs_MT32x32x256_MI16x16x1_SN_LDSB1_AFC0" + suffixAfter(layerName("GEMM_BF16 (rocBLAS)", 16), "_AFC0")
	sampler := "aiter::mix_sample_outer_exponential_kernel<std::bfloat16_t, 1024, 64, 4, true>(std::bfloat16_t const*, float const*, int*, float*, int, int, int)"
	sortP0 := layerName("MoE_sort_P0", 32)
	sortP23 := layerName("MoE_sort_P23", 32)
	inv := "level3_isl1024_conc8_kernels.csv"
	return []extraRow{
		fixed("prep", "", "__amd_rocclr_copyBuffer", "hipMemcpyAsync", 5.6, 0.05, inv+": avg 5.6, once per decode step"),
		fixed("prep", "", "kv_indices_generate_kernel", "hipLaunchKernel", 5.0, 0.05, inv+": avg 5.0, once per decode step"),
		fixed("prologue", "Embedding", "triton_poi_fused_embedding_0", "hipModuleLaunchKernel", 5.7, 0.05, inv+": avg 5.7, once per step"),
		fixed("epilogue", "RMSNorm+Quant", finalNorm, "hipLaunchKernel", 5.6, 0.05, inv+": avg 5.6, once per step (final norm)"),
		fixed("epilogue", "GEMM_BF16 (rocBLAS)", lmHead, "hipExtModuleLaunchKernel", 185.9, 0.02, inv+": avg 185.9 (lm_head)"),
		fixed("sample", "Sampling", sampler, "hipLaunchKernel", 50.6, 0.03, inv+": avg 50.6, eager after the graph"),
		fixed("prefill_prologue", "Embedding", "triton_poi_fused_embedding_0", "hipModuleLaunchKernel", 5.7, 0.05, inv+": avg 5.7"),
		scaled("FlashAttn", "aiter::fmha_fwd_hd128_bf16_causal_group", "hipModuleLaunchKernel", "attn"),
		scaled("FP8_quant", layerName("FP8_quant", 8), "hipLaunchKernel", "tokens"),
		scaled("GEMM_FP8 (CK dense)", layerName("GEMM_FP8 (CK dense)", 16), "hipLaunchKernel", "tokens"),
		scaled("RMSNorm+Quant", layerName("RMSNorm+Quant", 8), "hipLaunchKernel", "tokens"),
		scaled("Triton_copy", layerName("Triton_copy", 8), "hipModuleLaunchKernel", "tokens"),
		scaled("GEMM_BF16 (rocBLAS)", router, "hipExtModuleLaunchKernel", "tokens"),
		scaled("MoE_gate (topk)", layerName("MoE_gate (topk)", 8), "hipLaunchKernel", "tokens"),
		scaled("MoE_sort_P0", sortP0, "hipLaunchKernel", "tokens"),
		scaled("MoE_sort_P23", sortP23, "hipLaunchKernel", "tokens"),
		scaled("FP8_quant", layerName("FP8_quant", 8), "hipLaunchKernel", "tokens"),
		scaled("MoE_GEMM_fused (ASM)", "aiter::fmoe_bf16_blockscaleFp8_g1u1_vs_silu_32x384", "hipModuleLaunchKernel", "tokens"),
		scaled("RMSNorm+Quant", layerName("RMSNorm+Quant", 8), "hipLaunchKernel", "tokens"),
		scaled("FP8_quant", layerName("FP8_quant", 8), "hipLaunchKernel", "tokens"),
		scaled("GEMM_FP8 (CK dense)", layerName("GEMM_FP8 (CK dense)", 16), "hipLaunchKernel", "tokens"),
		scaled("RMSNorm_triton", "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_split_with_sizes_1", "hipModuleLaunchKernel", "tokens"),
		scaled("RMSNorm_triton", "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_split_with_sizes_2", "hipModuleLaunchKernel", "tokens"),
		scaled("RoPE", layerName("RoPE", 8), "hipLaunchKernel", "tokens"),
		scaled("KV_cache_quant", layerName("KV_cache_quant", 8), "hipLaunchKernel", "tokens"),
		fixed("prefill_epilogue", "RMSNorm+Quant", finalNorm, "hipLaunchKernel", 5.6, 0.05, inv+": avg 5.6 (final norm)"),
		fixed("prefill_epilogue", "GEMM_BF16 (rocBLAS)", lmHead, "hipExtModuleLaunchKernel", 185.9, 0.02, inv+": avg 185.9 (lm_head)"),
		fixed("prefill_sample", "Sampling", sampler, "hipLaunchKernel", 50.6, 0.03, inv+": avg 50.6"),
	}
}

func suffixAfter(s, sep string) string {
	if i := strings.Index(s, sep); i >= 0 {
		return s[i+len(sep):]
	}
	return ""
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

type slotObs struct {
	bs  int
	row layerRow
}

// deriveLayerSpecs fits the decode-layer rows from the four tables.
func deriveLayerSpecs(t *testing.T, dir string) ([]spec, []string, map[int][]layerRow) {
	t.Helper()
	tables := map[int][]layerRow{}
	var sizes []int
	for _, bs := range []int{4, 8, 16, 32} {
		rows, err := readLayerCSV(filepath.Join(dir, fmt.Sprintf("conc%d_layer.csv", bs)))
		if err != nil {
			t.Fatal(err)
		}
		tables[bs] = rows
		sizes = append(sizes, bs)
	}
	// Slots: short name + occurrence; a slot missing from a table is
	// inserted after the previous slot of the table that has it.
	var order []string
	obs := map[string][]slotObs{}
	for _, bs := range sizes {
		seen := map[string]int{}
		prev := -1
		for _, r := range tables[bs] {
			key := fmt.Sprintf("%s#%d", r.ShortName, seen[r.ShortName])
			seen[r.ShortName]++
			i := slices.Index(order, key)
			if i < 0 {
				i = prev + 1
				order = slices.Insert(order, i, key)
			}
			prev = i
			obs[key] = append(obs[key], slotObs{bs, r})
		}
	}
	var specs []spec
	var notes []string
	for _, key := range order {
		o := obs[key]
		short := o[0].row.ShortName
		basis := "bs"
		x := func(bs int) float64 { return float64(bs) }
		if strings.HasPrefix(short, "MoE_GEMM") {
			basis = "experts"
			x = func(bs int) float64 { return activeExperts(float64(bs)) }
		}
		var sx, sy, sxx, sxy float64
		var stdF, minF, maxF []float64
		for _, p := range o {
			xv := x(p.bs)
			sx += xv
			sy += p.row.AvgUS
			sxx += xv * xv
			sxy += xv * p.row.AvgUS
			stdF = append(stdF, p.row.StdUS/p.row.AvgUS)
			minF = append(minF, p.row.MinUS/p.row.AvgUS)
			maxF = append(maxF, p.row.MaxUS/p.row.AvgUS)
		}
		n := float64(len(o))
		a, b := sy/n, 0.0
		if len(o) > 1 {
			b = (n*sxy - sx*sy) / (n*sxx - sx*sx)
			a = (sy - b*sx) / n
			if b < 0 {
				a, b = sy/n, 0
			}
		}
		var sum float64
		for _, v := range stdF {
			sum += v
		}
		// Kernel variants: consecutive tables with the same name.
		type variant struct {
			name string
			hi   int
		}
		var vars []variant
		for _, p := range o {
			if len(vars) > 0 && vars[len(vars)-1].name == p.row.Kernel {
				vars[len(vars)-1].hi = p.bs
				continue
			}
			vars = append(vars, variant{p.row.Kernel, p.bs})
		}
		// Batch-size ranges: a variant holds up to the last size it was
		// seen at; the slot starts after the last table without it.
		first := slices.Index(sizes, o[0].bs)
		last := slices.Index(sizes, o[len(o)-1].bs)
		for i, v := range vars {
			lo := 1
			switch {
			case i > 0:
				lo = vars[i-1].hi + 1
			case first > 0:
				lo = sizes[first-1] + 1
			}
			hi := v.hi
			if i == len(vars)-1 && last == len(sizes)-1 {
				hi = 1 << 20
			}
			var seen []string
			for _, p := range o {
				if p.row.Kernel == v.name {
					seen = append(seen, strconv.Itoa(p.bs))
				}
			}
			specs = append(specs, spec{
				section: "layer", bsMin: lo, bsMax: hi, short: short, name: v.name,
				launch: launchFor(v.name), basis: basis, a: round(a, 4), b: round(b, 5),
				stdFrac: round(sum/n, 4), minFrac: round(median(minF), 4), maxFrac: round(median(maxF), 4),
			})
			notes = append(notes, fmt.Sprintf("fit over conc{%s}; name seen at conc{%s}", joinBS(o), strings.Join(seen, ",")))
		}
	}
	return specs, notes, tables
}

func joinBS(o []slotObs) string {
	var s []string
	for _, p := range o {
		s = append(s, strconv.Itoa(p.bs))
	}
	return strings.Join(s, ",")
}

var meanRe = regexp.MustCompile(`mean=([0-9.]+)`)

// benchContext is the mean context of a run: mean input + half the mean output.
func benchContext(t *testing.T, path string) float64 {
	t.Helper()
	in, out := benchMeans(t, path)
	return in + out/2
}

// benchMeans reads a bench log's mean input and output lengths.
func benchMeans(t *testing.T, path string) (in, out float64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		line := sc.Text()
		m := meanRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		switch {
		case strings.Contains(line, "input_lens") && in == 0:
			in = v
		case strings.Contains(line, "output_lens") && out == 0:
			out = v
		}
	}
	if in == 0 || out == 0 {
		t.Fatalf("%s: no input/output length statistics", path)
	}
	return in, out
}

// inventoryAvg is the avg_us of the first kernel starting with prefix.
func inventoryAvg(t *testing.T, path, prefix string) float64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, prefix) {
			f := strings.Split(line, ",")
			v, err := strconv.ParseFloat(f[len(f)-2], 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", path, line, err)
			}
			return v
		}
	}
	t.Fatalf("%s: no kernel %q", path, prefix)
	return 0
}

func deriveModelData(t *testing.T) []byte {
	dir := corpus.Dir(t)
	adir := filepath.Join(dir, "atom-minimax-m2.5")
	specs, notes, tables := deriveLayerSpecs(t, adir)
	// Paged attention's context slope.
	ref := benchContext(t, filepath.Join(adir, "level3_isl1024_conc8_bench.log"))
	long := benchContext(t, filepath.Join(adir, "level3_isl8192_conc8_bench.log"))
	var slope float64
	for _, c := range []int{8, 16} {
		short := inventoryAvg(t, filepath.Join(adir, fmt.Sprintf("level3_isl1024_conc%d_kernels.csv", c)), "aiter::pa_bf16")
		lng := inventoryAvg(t, filepath.Join(adir, fmt.Sprintf("level3_isl8192_conc%d_kernels.csv", c)), "aiter::pa_bf16")
		slope += (lng - short) / (long - ref) / 2
	}
	for i := range specs {
		if strings.Contains(specs[i].name, "pa_bf16") {
			specs[i].ctx = round(slope, 6)
		}
	}
	layerName := func(short string, bs int) string {
		for _, r := range tables[bs] {
			if r.ShortName == short {
				return r.Kernel
			}
		}
		t.Fatalf("no %q in conc%d_layer.csv", short, bs)
		return ""
	}
	extras := extraRows(layerName)
	var prefill []extraRow
	for _, e := range extras {
		if e.section == "prefill_layer" {
			prefill = append(prefill, e)
		}
	}
	fits := fitPrefillKernels(t, adir, tables, prefill)
	for _, e := range extras {
		// Every non-layer kernel must be one the inventories show.
		if !inInventories(t, adir, e.name) {
			t.Errorf("kernel %.60q is in no level3 inventory", e.name)
		}
		if e.section == "prefill_layer" {
			f := fits[0]
			fits = fits[1:]
			e.a, e.b, e.note = f.a, f.b, f.note
		}
		e.a, e.b = round(e.a, 4), round(e.b, 9)
		specs = append(specs, e.spec)
		notes = append(notes, e.note)
	}
	m := &Model{Layers: 62, RefCtx: round(ref, 2), StepGap: stepGap, OutputLag: outputLag, IntakeUSPerToken: intakeUSPerToken, specs: specs}
	m.GraphGapUS = deriveGraphGap(t, adir, m)
	var buf bytes.Buffer
	if err := writeModelData(&buf, dataHeader, m, specs, notes); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func inInventories(t *testing.T, dir, name string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "level3_*_kernels.csv"))
	cut := name
	if len(cut) > 80 {
		cut = cut[:80]
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte(cut)) || bytes.Contains(data, []byte(strings.ReplaceAll(cut, `"`, `""`))) {
			return true
		}
	}
	return false
}

// stepGap is the host time between steps that the model states rather than
// derives: the recorded logs cannot tell it from the launch gaps inside a
// step (both are GPU idle time), so the derivation puts the rest of the
// idle time into the launch gaps.
var stepGap = units.Micros(150)

// outputLag and intakeUSPerToken are stated, not derived from the corpus:
// the calibration sweep set them (see the data file's header).
const (
	outputLag        = 0.65
	intakeUSPerToken = 0.5
)

var itlMedianRe = regexp.MustCompile(`Median ITL \(ms\):\s+([0-9.]+)`)
var concRe = regexp.MustCompile(`_conc(\d+)_`)

// deriveGraphGap is the mean launch gap of a kernel replayed from the
// decode graph. At each recorded level most inter-token gaps are decode
// steps, so the median ITL is a decode step's wall time: less the model's
// kernel time of a decode step at the level's concurrency and mean context,
// and the step gap, spread over the step's kernels, it is one launch gap.
// The median over the levels, at least 0.05 µs.
func deriveGraphGap(t *testing.T, dir string, m *Model) float64 {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "level3_isl*_conc*_bench.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("%s: no level3 bench logs (%v)", dir, err)
	}
	var gaps []float64
	for _, log := range logs {
		data, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		mm := itlMedianRe.FindSubmatch(data)
		cm := concRe.FindStringSubmatch(filepath.Base(log))
		if mm == nil || cm == nil {
			t.Fatalf("%s: no median ITL or concurrency", log)
		}
		itl, _ := strconv.ParseFloat(string(mm[1]), 64)
		conc, _ := strconv.Atoi(cm[1])
		runs := m.DecodeStep(conc, int(benchContext(t, log)*float64(conc)), nil)
		var kern float64
		for _, r := range runs {
			if r.Stream == 0 {
				kern += float64(r.Dur) / 1000
			}
		}
		gaps = append(gaps, (itl*1000-kern-float64(m.StepGap)/1000)/float64(len(runs)))
	}
	return round(max(median(gaps), 0.05), 3)
}

// TestDerivedModelData checks that the embedded data file is exactly what
// the derivation from the corpus gives (and rewrites it with -update).
func TestDerivedModelData(t *testing.T) {
	got := deriveModelData(t)
	if *update {
		if err := atomicfile.Write(filepath.Join("data", "atom_minimax_m25.csv"), got); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(got, defaultData) {
		t.Fatalf("data/atom_minimax_m25.csv differs from its derivation from the corpus; rerun with -update and review the diff")
	}
}
