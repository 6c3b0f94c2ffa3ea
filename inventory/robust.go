package inventory

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/tracing"
)

// The robust layer finder. Per step:
//
//  1. The kernels of the step's main stream (the one with the most kernels)
//     become a sequence of name ids.
//  2. The period P of that sequence is the shift with the most equal pairs
//     ids[i] == ids[i+P]; P covers one layer, or one group of alternating
//     layers (sliding + full attention: 17 + 18 kernels).
//  3. In one period from the middle of the step, the most common number of
//     occurrences of a name is k, the number of layers in a period. Every
//     name occurring exactly k times is a candidate layer anchor; each
//     candidate slices the step at its occurrences, and the candidate whose
//     slices agree best (most layers equal to their kind's most common
//     sequence, the configured layer count first) wins. What precedes the
//     first layer is the prologue, what follows the last one the epilogue.
//  4. Kernels on other streams join the layer whose time window holds their
//     start, so a kernel that only some layers run shows as irregular.
//
// Across all steps, the k most common layer sequences are the layer kinds;
// every other layer is irregular, aligned to its closest kind (longest
// common subsequence), and reported with what differs.

type interner struct {
	ids   map[string]int32
	names []string
}

func (in *interner) id(name string) int32 {
	if id, ok := in.ids[name]; ok {
		return id
	}
	id := int32(len(in.names))
	in.ids[name] = id
	in.names = append(in.names, name)
	return id
}

type span struct{ start, end int }

// structure is where the layers of one main-stream sequence are.
type structure struct {
	layers []span
	k      int
}

// seqKey makes a map key of an id sequence.
func seqKey(ids []int32) string {
	return string(appendSeqKey(make([]byte, 0, len(ids)*4), ids))
}

func appendSeqKey(b []byte, ids []int32) []byte {
	for _, id := range ids {
		b = binary.LittleEndian.AppendUint32(b, uint32(id))
	}
	return b
}

// seqKeys makes the map keys of id sequences like seqKey, in a reused
// buffer, and keeps each distinct sequence (its key and its ids) once:
// the layers of a trace repeat a few sequences tens of thousands of times.
type seqKeys struct {
	buf  []byte
	seen map[string]seqEntry
}

type seqEntry struct {
	key string
	ids []int32
}

// key returns the key of ids and a canonical copy of ids (shared: not to
// be modified).
func (sk *seqKeys) key(ids []int32) (string, []int32) {
	sk.buf = appendSeqKey(sk.buf[:0], ids)
	if e, ok := sk.seen[string(sk.buf)]; ok { // no allocation for the lookup
		return e.key, e.ids
	}
	if sk.seen == nil {
		sk.seen = map[string]seqEntry{}
	}
	e := seqEntry{string(sk.buf), slices.Clone(ids)}
	sk.seen[e.key] = e
	return e.key, e.ids
}

type rawLayer struct {
	step, index int
	kernels     []int32 // trace kernel indices in start order
	ids         []int32
	key         string
	start       int64 // ns, start of its first main-stream kernel
}

// stepsOfKinds counts tr's steps of the given kinds that have kernels,
// and their kernels.
func stepsOfKinds(tr *tracing.Trace, kinds []tracing.StepKind) (steps, kernels int) {
	for i := range tr.Steps {
		if n := len(tr.Steps[i].Kernels); n > 0 && slices.Contains(kinds, tr.Steps[i].Kind) {
			steps++
			kernels += n
		}
	}
	return steps, kernels
}

func robustLayers(ctx context.Context, tr *tracing.Trace, kinds []tracing.StepKind, opt LayerOptions) (*LayerTable, error) {
	cl := opt.classes(tr)
	t := &LayerTable{Mode: ModeRobust, StepKind: string(kinds[0]), Irregular: []IrregularLayer{}, LayersHist: map[int]int{}, KernelsPerLayer: []int{}, Positions: []Position{}}
	classOf := cl.Classify
	// Token mixers by name id (mixNone, mixAttention, mixLinear): linear
	// and softmax attention in one period are two kinds of layer.
	mixer := make([]int8, len(tr.Names))
	mixerOf := func(id int32) int8 {
		if int(id) >= len(mixer) {
			return mixNone
		}
		if mixer[id] == 0 {
			mixer[id] = mixNone + 1
			name := tr.Names[id]
			switch k := kindOf(classOf(name).Category); {
			case k != kReduce && isLinearAttention(name):
				mixer[id] = mixLinear + 1
			case k == kAttn:
				mixer[id] = mixAttention + 1
			}
		}
		return mixer[id] - 1
	}
	cache := map[string]*structure{}
	var keys seqKeys
	kCount := map[int]int{}
	var all []rawLayer
	first := true
	var main, side []int32
	var ids, lids []int32
	var stepNS, layerNS int64 // kernel time of the steps and of their layers
	var convNS int64          // of their convolutions and group norms
	// Convolutions (but a linear-attention layer's conv1d) and group norms
	// are what diffusion and vision models run and decoders do not; the
	// name decides which to ask the classifier about. An engine's decode
	// and prefill steps are a language model's: only the steps of a plain
	// forward (profiler steps, graph replays) are looked at.
	checkVisual := !slices.ContainsFunc(kinds, func(k tracing.StepKind) bool {
		return k == tracing.StepDecode || k == tracing.StepPrefill || k == tracing.StepMixed
	})
	visual := make([]int8, len(tr.Names))
	isVisual := func(id int32) bool {
		if int(id) >= len(visual) {
			return false
		}
		if visual[id] == 0 {
			visual[id] = 1
			n := strings.ToLower(tr.Names[id])
			if (strings.Contains(n, "conv") || strings.Contains(n, "groupnorm") || strings.Contains(n, "group_norm") ||
				strings.Contains(n, "cudnn") || strings.Contains(n, "igemm_")) && !strings.Contains(n, "conv1d") {
				if c := classOf(tr.Names[id]).Category; c == "Convolution" || c == "GroupNorm" {
					visual[id] = 2
				}
			}
		}
		return visual[id] == 2
	}
	streamCount := map[int32]int{}
	for si := range tr.Steps {
		st := &tr.Steps[si]
		if !slices.Contains(kinds, st.Kind) || len(st.Kernels) == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t.Steps++
		clear(streamCount)
		// Kernels come in runs on one stream: one map update per run.
		run, runN := int32(0), 0
		for _, k := range st.Kernels {
			kk := &tr.Kernels[k]
			if kk.Kind != tracing.KindKernel {
				continue
			}
			stepNS += kk.Dur
			if checkVisual && isVisual(kk.NameID) {
				convNS += kk.Dur
			}
			if runN > 0 && kk.Stream != run {
				streamCount[run] += runN
				runN = 0
			}
			run = kk.Stream
			runN++
		}
		if runN > 0 {
			streamCount[run] += runN
		}
		var mainStream int32
		best := -1
		for s, c := range streamCount {
			if c > best || (c == best && s < mainStream) {
				mainStream, best = s, c
			}
		}
		main, side, ids = main[:0], side[:0], ids[:0]
		for _, k := range st.Kernels {
			kk := &tr.Kernels[k]
			if kk.Kind != tracing.KindKernel {
				continue
			}
			if kk.Stream == mainStream {
				main = append(main, k)
				ids = append(ids, kk.NameID)
			} else {
				side = append(side, k)
			}
		}
		key, _ := keys.key(ids)
		s, ok := cache[key]
		if !ok {
			s = findStructure(ids, opt.NumLayers, mixerOf)
			cache[key] = s
		}
		if s == nil {
			t.LayersHist[0]++
			continue
		}
		kCount[s.k] += len(s.layers)
		t.LayersHist[len(s.layers)]++
		if all == nil {
			// Sized once from the first step: a dense serving trace has
			// tens of thousands of layers, and growing the list copied
			// it over and over (0.1 s of a 1M-kernel trace's analysis).
			// Each layer holds a kernel at least, which bounds a
			// first step with more layers than the rest.
			steps, kernels := stepsOfKinds(tr, kinds)
			all = make([]rawLayer, 0, min(len(s.layers)*steps, kernels))
		}
		layers := make([][]int32, len(s.layers))
		starts := make([]int64, len(s.layers))
		for j, sp := range s.layers {
			layers[j] = append(make([]int32, 0, sp.end-sp.start+2), main[sp.start:sp.end]...)
			starts[j] = tr.Kernels[main[sp.start]].Start
		}
		// Side-stream kernels that start once the last layer's main-stream
		// kernels are done belong to the epilogue (a sampler on its own
		// stream), as do those after the first epilogue kernel.
		last := s.layers[len(s.layers)-1]
		epiStart := int64(0)
		for _, k := range main[last.start:last.end] {
			epiStart = max(epiStart, tr.Kernels[k].End())
		}
		if last.end < len(main) {
			epiStart = min(epiStart, tr.Kernels[main[last.end]].Start)
		}
		lastEnd := last.end
		pro := append([]int32(nil), main[:s.layers[0].start]...)
		epi := append([]int32(nil), main[lastEnd:]...)
		for _, k := range side {
			at := tr.Kernels[k].Start
			j, found := slices.BinarySearch(starts, at)
			if !found {
				j--
			}
			switch {
			case j < 0:
				pro = append(pro, k)
			case j == len(layers)-1 && at >= epiStart:
				epi = append(epi, k)
			default:
				layers[j] = append(layers[j], k)
			}
		}
		for j, l := range layers {
			// Main-stream kernels in order, then each other stream's in
			// order: overlapping streams start in a different order from
			// layer to layer, but each stream keeps its own.
			nMain := s.layers[j].end - s.layers[j].start
			slices.SortStableFunc(l[nMain:], func(a, b int32) int {
				return cmp.Or(cmp.Compare(tr.Kernels[a].Stream, tr.Kernels[b].Stream), cmp.Compare(a, b))
			})
			lids = lids[:0]
			for _, k := range l {
				lids = append(lids, tr.Kernels[k].NameID)
				layerNS += tr.Kernels[k].Dur
			}
			key, canon := keys.key(lids)
			all = append(all, rawLayer{step: si, index: j, kernels: l, ids: canon, key: key, start: starts[j]})
		}
		if first {
			first = false
			slices.Sort(pro)
			slices.Sort(epi)
			for _, k := range pro {
				t.Prologue = append(t.Prologue, classOf(tr.KernelName(int(k))).ShortName)
			}
			for _, k := range epi {
				t.Epilogue = append(t.Epilogue, classOf(tr.KernelName(int(k))).ShortName)
				cl.epilogue = append(cl.epilogue, epilogueKernel{t.StepKind, tr.KernelName(int(k)), tr.LaunchOp(int(k))})
			}
		}
	}
	t.Layers = mostCommon(t.LayersHist)
	if t.Steps == 0 {
		t.Warnings = append(t.Warnings, diag.New(diag.NoSteps, fmt.Sprintf("no %s steps with kernels in the trace", t.StepKind)))
		return t, nil
	}
	if len(all) == 0 {
		t.Warnings = append(t.Warnings, diag.New(diag.NoLayers, fmt.Sprintf("no repeating layer found in %d %s steps", t.Steps, t.StepKind)))
		return t, nil
	}
	if opt.NumLayers > 0 && t.Layers != opt.NumLayers && t.Layers != opt.NumLayers+opt.MTPLayers {
		t.Warnings = append(t.Warnings, diag.New(diag.LayerCount, fmt.Sprintf("found %d layers per %s step, the model config says num_hidden_layers = %d", t.Layers, t.StepKind, opt.NumLayers)))
	}
	if n := t.LayersHist[0]; n > 0 {
		t.Warnings = append(t.Warnings, diag.New(diag.IrregularLayers, fmt.Sprintf("%d of %d %s steps have no repeating layer", n, t.Steps, t.StepKind)))
	}
	if len(t.LayersHist) > 1 {
		t.Warnings = append(t.Warnings, diag.New(diag.IrregularLayers, fmt.Sprintf("the number of layers differs between %s steps: %v (layers: steps)", t.StepKind, t.LayersHist)))
	}
	k := mostCommon(kCount)
	if len(opt.LayerKinds) == t.Layers {
		// The config's kinds, when the step has its layers: DeepSeek's
		// first dense layers are a kind, not irregular MoE layers.
		k = max(k, len(distinct(opt.LayerKinds)))
	}
	kindOfLayer := classify(t, all, k, tr, cl)
	nameKinds(t, all, kindOfLayer, opt.LayerKinds)
	if stepNS > 0 && 2*layerNS < stepNS {
		t.Warnings = append(t.Warnings, diag.New(diag.LayerCoverage, fmt.Sprintf("the layers cover %.0f%% of the %s steps' kernel time: what repeats is not the model's layers, or most of the work is outside them", 100*float64(layerNS)/float64(stepNS), t.StepKind)))
	}
	why := notLLM(t.Positions)
	if why == "" && stepNS > 0 && 100*convNS > stepNS {
		why = fmt.Sprintf("convolutions and group norms take %.1f%% of its steps' kernel time", 100*float64(convNS)/float64(stepNS))
	}
	if why != "" && tr.Kind != tracing.KindCapture { // a capture trace says what it is
		t.Warnings = append(t.Warnings, diag.New(diag.NotLLM, "these layers are not a language model's ("+why+"): the table and its roles describe what repeats, not a decoder layer"))
	}
	return t, nil
}

// distinct returns the distinct strings of s in first-seen order.
func distinct(s []string) []string {
	var out []string
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// notLLM says why a layer table is not a language model's, "" when it
// may be: no attention of any kind in its layers, or the convolutions and
// group norms of a diffusion or vision model.
func notLLM(ps []Position) string {
	if len(ps) == 0 {
		return ""
	}
	attn := false
	for i := range ps {
		p := &ps[i]
		n, c := strings.ToLower(p.Kernel), strings.ToLower(p.Category)
		switch {
		case strings.Contains(c, "convolution") && !strings.Contains(n, "conv1d"):
			// Mamba and Gated DeltaNet layers run a short causal conv1d.
			return "convolutions in its layers"
		case strings.Contains(n, "group_norm") || strings.Contains(n, "groupnorm"):
			return "group norms in its layers"
		}
		attn = attn || kindOfPos(p) == kAttn
	}
	if !attn {
		return "no attention kernel in any layer"
	}
	return ""
}

// nameKinds names the layer kinds and counts their layers per step: from
// the config's kind of each layer when the step has the config's number
// of layers (warning when the kernels group the layers otherwise), else,
// when a kind runs a linear-attention kernel, from the kernels.
func nameKinds(t *LayerTable, all []rawLayer, kindOfLayer []int, config []string) {
	n := len(t.KernelsPerLayer)
	if n < 2 {
		return
	}
	names := make([]string, n)
	if len(config) > 0 && len(config) == t.Layers {
		votes := make([]map[string]int, n)
		for i := range votes {
			votes[i] = map[string]int{}
		}
		for i, l := range all {
			if l.index < len(config) {
				votes[kindOfLayer[i]][config[l.index]]++
			}
		}
		off, total := 0, 0
		for c, v := range votes {
			best := 0
			for name, cnt := range v {
				total += cnt
				if cnt > best || cnt == best && name < names[c] {
					names[c], best = name, cnt
				}
			}
			off += -best
			for _, cnt := range v {
				off += cnt
			}
		}
		if off > 0 {
			t.Warnings = append(t.Warnings, diag.New(diag.LayerKinds, fmt.Sprintf("%d of %d layers run the kernels of another kind than the model config's layer kinds say", off, total)))
		}
	} else {
		linear := false
		for _, p := range t.Positions {
			if isLinearAttention(p.Kernel) {
				names[p.LayerKind], linear = "linear_attention", true
			}
		}
		if !linear {
			return
		}
		for _, p := range t.Positions {
			if names[p.LayerKind] == "" && kindOf(p.Category) == kAttn {
				names[p.LayerKind] = "full_attention"
			}
		}
	}
	t.KindNames = names
	count := make([]int, n)
	for _, c := range kindOfLayer {
		count[c]++
	}
	t.KindLayers = make([]int, n)
	for c := range count {
		t.KindLayers[c] = int(math.Round(float64(count[c]) / float64(max(t.Steps, 1))))
	}
}

// mostCommon returns the key with the highest count (the smaller key on a tie).
func mostCommon(h map[int]int) int {
	best, bc := 0, -1
	for k, c := range h {
		if c > bc || (c == bc && k < best) {
			best, bc = k, c
		}
	}
	return best
}

// classify finds the layer kinds (the k most common sequences), assigns
// every layer to one, and fills positions and irregular layers. It
// returns the kind of each layer of all.
func classify(t *LayerTable, all []rawLayer, k int, tr *tracing.Trace, cl *Classifier) []int {
	classOf := cl.Classify
	names := tr.Names // the layers' ids are name indices
	count := map[string]int{}
	firstSeen := map[string]int{}
	for i, l := range all {
		if _, ok := firstSeen[l.key]; !ok {
			firstSeen[l.key] = i
		}
		count[l.key]++
	}
	keys := make([]string, 0, len(count))
	for key := range count {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(count[b], count[a]), cmp.Compare(firstSeen[a], firstSeen[b]))
	})
	k = max(1, min(k, len(keys)))
	kindKeys := keys[:k]
	kindOf := map[string]int{}
	for i, key := range kindKeys {
		kindOf[key] = i
	}
	// Assign each layer; irregular layers go to the most similar kind.
	assigned := make([]int, len(all))
	for i, l := range all {
		if c, ok := kindOf[l.key]; ok {
			assigned[i] = c
			continue
		}
		bestKind, bestSim := 0, -1.0
		for c, key := range kindKeys {
			if sim := similarity(l.ids, all[firstSeen[key]].ids); sim > bestSim {
				bestKind, bestSim = c, sim
			}
		}
		assigned[i] = bestKind
	}
	// Number kinds by first appearance, so the first layer of a step is kind 0.
	order := []int{}
	renum := map[int]int{}
	for _, c := range assigned {
		if _, ok := renum[c]; !ok {
			renum[c] = len(order)
			order = append(order, c)
		}
	}
	cons := make([][]int32, len(order))
	st := make([][]stats, len(order))
	for newKind, c := range order {
		ref := all[firstSeen[kindKeys[c]]]
		cons[newKind] = ref.ids
		st[newKind] = make([]stats, len(ref.ids))
		for p, kidx := range ref.kernels {
			st[newKind][p].name = tr.KernelName(int(kidx))
			st[newKind][p].stream = tr.Kernels[kidx].Stream
		}
		t.KernelsPerLayer = append(t.KernelsPerLayer, len(ref.ids))
	}
	offset := make([][]float64, len(order))
	for c := range st {
		offset[c] = make([]float64, len(st[c]))
	}
	short := func(name string) string { return classOf(name).ShortName }
	var extraAt [][][]int // per irregular layer and diff: positions of the kernels that started after it
	for i, l := range all {
		kind := renum[assigned[i]]
		if _, regular := kindOf[l.key]; regular {
			for p, kidx := range l.kernels {
				st[kind][p].add(tr.Kernels[kidx].Dur)
				offset[kind][p] += float64(tr.Kernels[kidx].Start - l.start)
			}
			continue
		}
		match := align(l.ids, cons[kind])
		for gi, p := range match {
			if p >= 0 {
				st[kind][p].add(tr.Kernels[l.kernels[gi]].Dur)
				offset[kind][p] += float64(tr.Kernels[l.kernels[gi]].Start - l.start)
			}
		}
		irr := IrregularLayer{Step: l.step, Layer: l.index, Kind: kind, Kernels: len(l.ids)}
		var later [][]int
		for _, d := range diffs(match, len(cons[kind])) {
			ld := LayerDiff{Op: d.op, Pos: d.pos}
			var after []int
			if d.got >= 0 {
				kk := &tr.Kernels[l.kernels[d.got]]
				ld.Kernel, ld.Stream = short(tr.NameOf(kk)), kk.Stream
				for gi, p := range match {
					if p >= 0 && tr.Kernels[l.kernels[gi]].Start > kk.Start {
						after = append(after, p)
					}
				}
			}
			later = append(later, after)
			if d.op != "extra" {
				ld.Want = short(names[cons[kind][d.pos]])
				if d.op == "missing" {
					ld.Stream = st[kind][d.pos].stream
				}
			}
			if d.op == "differs" {
				cl.pending = append(cl.pending, [2]string{tr.KernelName(int(l.kernels[d.got])), names[cons[kind][d.pos]]})
			}
			if d.op != "extra" && d.op != "missing" && ld.Kernel == ld.Want {
				// Same short name, another instance (e.g. a GEMM tuned for
				// another batch size): only the full names tell them apart.
				ld.KernelFull, ld.WantFull = readableName(tr.KernelName(int(l.kernels[d.got]))), readableName(names[cons[kind][d.pos]])
			}
			irr.Diffs = append(irr.Diffs, ld)
		}
		t.Irregular = append(t.Irregular, irr)
		extraAt = append(extraAt, later)
	}
	// Alternating kinds run the same layer with some kernels swapped
	// (sliding and full attention): what one runs where the other runs a
	// known kernel is a position hint.
	for c := 1; c < len(cons); c++ {
		for _, d := range diffs(align(cons[c], cons[0]), len(cons[0])) {
			if d.op == "differs" {
				a, b := names[cons[c][d.got]], names[cons[0][d.pos]]
				cl.pending = append(cl.pending, [2]string{a, b}, [2]string{b, a})
			}
		}
	}
	// Show each kind's positions in the order they start on the GPU (mean
	// offset from the layer's start), which interleaves the streams.
	for c := range st {
		perm := make([]int, len(st[c])) // display index -> position
		for i := range perm {
			perm[i] = i
		}
		mean := func(p int) float64 { return offset[c][p] / float64(max(st[c][p].n, 1)) }
		slices.SortStableFunc(perm, func(a, b int) int { return cmp.Compare(mean(a), mean(b)) })
		at := make([]int, len(perm)+1) // position -> display index
		at[len(perm)] = len(perm)
		sorted := make([]stats, len(perm))
		for i, p := range perm {
			at[p] = i
			sorted[i] = st[c][p]
		}
		st[c] = sorted
		for i := range t.Irregular {
			if t.Irregular[i].Kind != c {
				continue
			}
			for j := range t.Irregular[i].Diffs {
				d := &t.Irregular[i].Diffs[j]
				if d.Op != "extra" {
					d.Pos = at[d.Pos]
					continue
				}
				// An extra kernel sits before the first of its layer's
				// kernels that started after it.
				d.Pos = len(perm)
				for _, p := range extraAt[i][j] {
					d.Pos = min(d.Pos, at[p])
				}
			}
		}
	}
	t.Positions = positions(st, classOf, short)
	t.WallUS = wallTime(tr, all, kindOf, renum, len(order))
	for i, c := range assigned {
		assigned[i] = renum[c]
	}
	return assigned
}

// wallTime is the time one layer of each kind keeps the GPU busy, a kernel
// that overlaps another on another stream counted once: the union of the
// kernel intervals of the kind's regular layers (those that run exactly
// its kernels), divided by their number. Nil unless streams overlap by
// more than 0.1% of the kernels' time. Layers come in time order, so the
// union is merged as they come, each layer's kernels in start order.
func wallTime(tr *tracing.Trace, all []rawLayer, kindOf map[string]int, renum map[int]int, kinds int) []float64 {
	type run struct {
		end                int64
		union, sum, layers int64
	}
	acc := make([]run, kinds)
	var byStart []int32
	byTime := func(x, y int32) int { return cmp.Compare(tr.Kernels[x].Start, tr.Kernels[y].Start) }
	for _, l := range all {
		c, regular := kindOf[l.key]
		if !regular {
			continue
		}
		a := &acc[renum[c]]
		a.layers++
		ks := l.kernels
		if !slices.IsSortedFunc(ks, byTime) {
			// The side streams' kernels follow the main stream's.
			byStart = append(byStart[:0], ks...)
			slices.SortFunc(byStart, byTime)
			ks = byStart
		}
		for _, k := range ks {
			kr := &tr.Kernels[k]
			start, end := kr.Start, kr.End()
			a.sum += kr.Dur
			switch {
			case start >= a.end:
				a.union += end - start
			case end > a.end:
				a.union += end - a.end
			default:
				continue
			}
			a.end = end
		}
	}
	overlap := false
	for _, a := range acc {
		overlap = overlap || float64(a.union) < 0.999*float64(a.sum)
	}
	if !overlap {
		return nil
	}
	out := make([]float64, kinds)
	for c, a := range acc {
		out[c] = float64(a.union) / 1e3 / float64(max(a.layers, 1))
	}
	return out
}

// Token mixer kinds of a kernel name.
const (
	mixNone int8 = iota
	mixAttention
	mixLinear
)

// findStructure finds the layers of one main-stream id sequence, or nil.
// mixerOf (nil: none known) says which names are token mixers.
func findStructure(ids []int32, numLayers int, mixerOf func(int32) int8) *structure {
	n := len(ids)
	p := bestPeriod(ids)
	if p == 0 {
		return nil
	}
	c0 := min(max(0, n/2-p/2), n-p)
	counts := map[int32]int{}
	var window []int32
	for _, id := range ids[c0 : c0+p] {
		if counts[id] == 0 {
			window = append(window, id)
		}
		counts[id]++
	}
	// A hybrid model (linear-attention layers between full-attention
	// ones): a period holds m layers of unlike kinds, which share their
	// MLP but not their token mixer.
	if mixerOf != nil {
		if m, linear, attention := mixerGroups(ids[c0:c0+p], mixerOf); linear && attention && m >= 2 {
			if s := layoutHybrid(ids, window, counts, m, numLayers); s != nil {
				return s
			}
		}
	}
	// k layers per period: names shared by alternating layers occur k
	// times, names of one kind once. Try the counts that explain the most
	// kernels of the period first; a k > 1 must give kinds that look alike.
	weight := map[int]int{}
	for _, c := range counts {
		weight[c] += c
	}
	ks := make([]int, 0, len(weight))
	for c := range weight {
		ks = append(ks, c)
	}
	slices.SortFunc(ks, func(a, b int) int { return cmp.Or(cmp.Compare(weight[b], weight[a]), cmp.Compare(a, b)) })
	for _, k := range ks {
		var best *structure
		var bestScore [4]int
		for _, a := range window {
			if counts[a] != k {
				continue
			}
			s, score := layoutByAnchor(ids, a, k, numLayers, true)
			if s == nil {
				continue
			}
			if best == nil || slices.Compare(score[:], bestScore[:]) > 0 {
				best, bestScore = s, score
			}
		}
		if best != nil {
			return best
		}
	}
	return nil
}

// bestPeriod is the shift with the most equal pairs, 0 when nothing repeats
// at least twice.
func bestPeriod(ids []int32) int {
	n := len(ids)
	lim := min(n, 1<<15)
	bestP, bestScore := 0, 0
	for p := 1; p <= min(n/2, 4096); p++ {
		score := 0
		for i := 0; i+p < lim; i++ {
			if ids[i] == ids[i+p] {
				score++
			}
		}
		if score > bestScore {
			bestP, bestScore = p, score
		}
	}
	if bestScore < bestP {
		return 0
	}
	return bestP
}

// mixerGroups counts the token mixers of one period (runs of mixer
// kernels, cyclically: a decode attention and its second kernel are one)
// and says whether linear and softmax attention lead any.
func mixerGroups(period []int32, mixerOf func(int32) int8) (groups int, linear, attention bool) {
	p := len(period)
	for i, id := range period {
		if m := mixerOf(id); m != mixNone && mixerOf(period[(i-1+p)%p]) == mixNone {
			groups++
			linear = linear || m == mixLinear
			attention = attention || m == mixAttention
		}
	}
	return groups, linear, attention
}

// layoutHybrid lays out the m unlike layers of each period of a hybrid
// model: sliced at a name every layer runs once (one of its MLP's), then
// shifted so that each layer starts where the kinds start to differ (the
// token mixer's part) and ends with the MLP they share; the first layer,
// which the shift leaves before the first slice, is taken back when it
// matches a kind. The structure's k is the number of distinct kinds.
func layoutHybrid(ids, window []int32, counts map[int32]int, m, numLayers int) *structure {
	var best *structure
	var bestScore [4]int
	for _, a := range window {
		if counts[a] != m {
			continue
		}
		s, score := layoutByAnchor(ids, a, m, numLayers, false)
		if s != nil && (best == nil || slices.Compare(score[:], bestScore[:]) > 0) {
			best, bestScore = s, score
		}
	}
	if best == nil {
		return nil
	}
	// The kinds: each residue class's most common sequence, once each.
	var kinds [][]int32
	for c := range m {
		cnt := map[string]int{}
		var top []int32
		for i := c; i < len(best.layers); i += m {
			sp := best.layers[i]
			key := seqKey(ids[sp.start:sp.end])
			cnt[key]++
			if top == nil || cnt[key] > cnt[seqKey(top)] {
				top = ids[sp.start:sp.end]
			}
		}
		if !slices.ContainsFunc(kinds, func(k []int32) bool { return slices.Equal(k, top) }) {
			kinds = append(kinds, top)
		}
	}
	if len(kinds) < 2 {
		return nil
	}
	// What all kinds start with is the MLP of the layer before.
	shift := len(kinds[0])
	for _, k := range kinds[1:] {
		l := 0
		for l < min(len(k), len(kinds[0])) && k[l] == kinds[0][l] {
			l++
		}
		shift = min(shift, l)
	}
	for _, k := range kinds {
		if shift >= len(k) {
			return nil
		}
	}
	rotated := make([][]int32, len(kinds))
	for i, k := range kinds {
		rotated[i] = append(slices.Clone(k[shift:]), k[:shift]...)
	}
	matches := func(sp span) bool {
		for _, k := range rotated {
			if sp.start >= 0 && sp.end <= len(ids) && slices.Equal(ids[sp.start:sp.end], k) {
				return true
			}
		}
		return false
	}
	alike := func(sp span) bool {
		for _, k := range rotated {
			if similarity(ids[sp.start:sp.end], k) >= 0.5 {
				return true
			}
		}
		return false
	}
	var layers []span
	first := best.layers[0].start + shift
	for _, k := range rotated {
		if sp := (span{first - len(k), first}); matches(sp) {
			layers = append(layers, sp)
			break
		}
	}
	for _, sp := range best.layers {
		sp = span{sp.start + shift, min(sp.end+shift, len(ids))}
		if sp.end > sp.start && alike(sp) {
			layers = append(layers, sp)
		}
	}
	if len(layers) < 2 {
		return nil
	}
	return &structure{layers: layers, k: len(kinds)}
}

// layoutByAnchor slices ids at the occurrences of anchor a; the score ranks
// layouts (higher is better): the configured layer count, more layers, more
// regular ones, an earlier first layer. With alikeKinds, the k kinds must
// look alike (variants of one layer).
func layoutByAnchor(ids []int32, a int32, k, numLayers int, alikeKinds bool) (*structure, [4]int) {
	var occ []int
	for i, id := range ids {
		if id == a {
			occ = append(occ, i)
		}
	}
	if len(occ) < 2 {
		return nil, [4]int{}
	}
	spans := make([]span, len(occ))
	for i := range occ {
		if i+1 < len(occ) {
			spans[i] = span{occ[i], occ[i+1]}
			continue
		}
		ref := spans[i-1]
		if i-k >= 0 {
			ref = spans[i-k]
		}
		spans[i] = span{occ[i], min(len(ids), occ[i]+ref.end-ref.start)}
	}
	key := func(s span) string { return seqKey(ids[s.start:s.end]) }
	// The most common sequence of each kind (slice i is of kind i mod k),
	// and one slice that has it.
	cons := make([]string, k)
	consAt := make([]span, k)
	for c := 0; c < k; c++ {
		cnt := map[string]int{}
		bestN := 0
		for i := c; i < len(spans); i += k {
			kk := key(spans[i])
			cnt[kk]++
			if cnt[kk] > bestN {
				cons[c], consAt[c], bestN = kk, spans[i], cnt[kk]
			}
		}
	}
	// Alternating kinds are variants of one layer (sliding and full
	// attention, dense and MoE MLP), not unrelated halves of it.
	for c := 1; c < k && alikeKinds; c++ {
		a, b := consAt[0], consAt[c]
		if similarity(ids[a.start:a.end], ids[b.start:b.end]) < 0.5 {
			return nil, [4]int{}
		}
	}
	unlike := func(i int) bool {
		if key(spans[i]) == cons[i%k] {
			return false
		}
		ref := consAt[i%k]
		return similarity(ids[spans[i].start:spans[i].end], ids[ref.start:ref.end]) < 0.5
	}
	// A first or last slice that looks nothing like a layer is prologue or
	// epilogue (the anchor kernel also runs there).
	// With the configured layer count, a first or last layer of another
	// kind (DeepSeek's first dense layers among MoE ones) stays a layer.
	lo, hi := 0, len(spans)
	if hi-lo > 2 && unlike(lo) && hi-lo != numLayers {
		lo++
	}
	if hi-lo > 2 && unlike(hi-1) && hi-lo != numLayers {
		hi--
	}
	regular := 0
	for i := lo; i < hi; i++ {
		if key(spans[i]) == cons[i%k] {
			regular++
		}
	}
	if regular < 2 {
		return nil, [4]int{}
	}
	configured := 0
	if numLayers > 0 && hi-lo == numLayers {
		configured = 1
	}
	return &structure{layers: spans[lo:hi], k: k}, [4]int{configured, hi - lo, regular, -spans[lo].start}
}

// similarity is the longest common subsequence over the longer length.
func similarity(a, b []int32) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	m := align(a, b)
	n := 0
	for _, p := range m {
		if p >= 0 {
			n++
		}
	}
	return float64(n) / float64(max(len(a), len(b)))
}

// align matches got against want along a longest common subsequence:
// match[i] is the position in want of got[i], or -1.
func align(got, want []int32) []int {
	n, m := len(got), len(want)
	// lcs[i][j] = LCS of got[i:], want[j:]
	lcs := make([]int32, (n+1)*(m+1))
	at := func(i, j int) *int32 { return &lcs[i*(m+1)+j] }
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if got[i] == want[j] {
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
		case j < m && got[i] == want[j]:
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

type diff struct {
	op  string
	pos int // position in want
	got int // index in got, -1 for missing
}

// diffs lists what differs given an alignment: in each gap between matched
// kernels, pairs of unmatched kernels are "differs", the rest "extra" or
// "missing".
func diffs(match []int, wantLen int) []diff {
	var out []diff
	gi, wj := 0, 0
	flush := func(gEnd, wEnd int) {
		for gi < gEnd && wj < wEnd {
			out = append(out, diff{"differs", wj, gi})
			gi++
			wj++
		}
		for ; gi < gEnd; gi++ {
			out = append(out, diff{"extra", wj, gi})
		}
		for ; wj < wEnd; wj++ {
			out = append(out, diff{"missing", wj, -1})
		}
	}
	for i, p := range match {
		if p < 0 {
			continue
		}
		flush(i, p)
		gi, wj = i+1, p+1
	}
	flush(len(match), wantLen)
	return out
}
