package tracing

import (
	"encoding/binary"
	"slices"
)

// sourceLaunchPeriod: steps cut from the period of the launch sequence
// (graph replays and eager kernels), when no annotation or step function
// said where they are.
const sourceLaunchPeriod = "launch_period"

// An engine step launches the same things in the same order every time:
// the same graph pieces with the same eager kernels (attention, input
// copies, the sampler) between them. On a fast GPU the idle gaps between
// graph pieces are as long as those between steps, so gaps cannot cut the
// steps; the repetition can. The launch sequence is read as tokens (a graph
// replay is one token named by its kernels, an eager kernel one token named
// by its name), its period is the step, and the rotation of the period that
// leaves the fewest irregular stretches (prefills, a changed batch) is
// where steps begin.

const (
	periodWindow   = 1 << 13 // tokens the period is sought in (bounds the cost on large traces)
	periodMinMatch = 0.25    // share of graph positions that must repeat at the period (a prefill every other step leaves a third)
	periodMaxDepth = 2       // irregular stretches searched again for their own period
)

// launchToken is one launch in time order: a graph replay or an eager kernel.
type launchToken struct {
	id    uint64 // what was launched: graph tokens have the top bit set
	first int32  // its first kernel
	graph int32  // index into Trace.Graphs, -1 for an eager kernel
}

func (k launchToken) isGraph() bool { return k.graph >= 0 }

// periodSteps forms steps from the period of the launch sequence; it
// reports false, forming nothing, when the sequence has no period whose
// typical step holds several graph launches and eager kernels (piecewise
// graphs).
func periodSteps(t *Trace) bool {
	if len(t.Graphs) < 4 || len(t.Kernels) < 8 {
		return false
	}
	toks := launchTokens(t)
	gap := idleBefore(t)
	var cuts []tokenRun
	segmentTokens(toks, gap, 0, len(toks), 0, &cuts)
	steps := make([][]int32, 0, len(cuts))
	periodic := 0
	for _, c := range cuts {
		if c.periodic {
			periodic++
		}
		steps = append(steps, tokenKernels(t, toks[c.lo:c.hi]))
	}
	if periodic < 3 || !piecewise(t, steps) {
		return false
	}
	for _, ks := range steps {
		kind := StepPrefill
		if slices.ContainsFunc(ks, func(k int32) bool { return t.Kernels[k].Graph >= 0 }) {
			kind = StepDecode
		}
		addStep(t, Step{Kind: kind, Source: sourceLaunchPeriod, Kernels: ks})
	}
	finishSteps(t)
	return true
}

// tokenRun is a run of tokens [lo, hi) that forms one step; periodic when
// it is one whole period.
type tokenRun struct {
	lo, hi   int
	periodic bool
}

// launchTokens reads the kernels as launches in time order.
func launchTokens(t *Trace) []launchToken {
	graphIDs := map[string]uint64{}
	var key []byte
	var names []int32
	seen := make([]bool, len(t.Graphs))
	toks := make([]launchToken, 0, len(t.Kernels)/2)
	for i := range t.Kernels {
		k := &t.Kernels[i]
		if k.Graph < 0 {
			toks = append(toks, launchToken{id: uint64(k.NameID)<<2 | uint64(k.Kind), first: int32(i), graph: -1})
			continue
		}
		if seen[k.Graph] {
			continue
		}
		seen[k.Graph] = true
		// A replay is named by the multiset of its kernels' names: the
		// order across its streams can differ from one replay to the next.
		names = names[:0]
		for _, gk := range t.Graphs[k.Graph].Kernels {
			names = append(names, t.Kernels[gk].NameID)
		}
		slices.Sort(names)
		key = key[:0]
		for _, n := range names {
			key = binary.LittleEndian.AppendUint32(key, uint32(n))
		}
		id, ok := graphIDs[string(key)]
		if !ok {
			id = 1<<63 | uint64(len(graphIDs))
			graphIDs[string(key)] = id
		}
		toks = append(toks, launchToken{id: id, first: int32(i), graph: k.Graph})
	}
	return toks
}

// idleBefore is the GPU's idle time before each kernel (all streams of the
// trace: a kernel that overlaps keeps it busy).
func idleBefore(t *Trace) []int64 {
	gap := make([]int64, len(t.Kernels))
	end := t.Kernels[0].End()
	for i := 1; i < len(t.Kernels); i++ {
		k := &t.Kernels[i]
		gap[i] = max(0, k.Start-end)
		end = max(end, k.End())
	}
	return gap
}

// tokenKernels returns the kernels of a run of tokens, in start order.
func tokenKernels(t *Trace, toks []launchToken) []int32 {
	var ks []int32
	for _, tk := range toks {
		if tk.isGraph() {
			ks = append(ks, t.Graphs[tk.graph].Kernels...)
		} else {
			ks = append(ks, tk.first)
		}
	}
	slices.Sort(ks)
	return ks
}

// segmentTokens cuts toks[lo:hi] into steps: whole periods, and the
// irregular stretches between them, each searched again for a period of
// its own (a later batch size runs other kernels) and else one step.
func segmentTokens(toks []launchToken, gap []int64, lo, hi, depth int, out *[]tokenRun) {
	seq := toks[lo:hi]
	word, ok := findPeriod(seq)
	if !ok {
		*out = append(*out, tokenRun{lo, hi, false})
		return
	}
	p := len(word)
	start := bestRotation(seq, word, gap)
	step := append(slices.Clone(word[start:]), word[:start]...)
	irr := lo
	for i := lo; i < hi; {
		if i+p <= hi && sameIDs(toks[i:i+p], step) {
			if irr < i {
				irregular(toks, gap, irr, i, p, depth, out)
			}
			*out = append(*out, tokenRun{i, i + p, true})
			i += p
			irr = i
			continue
		}
		i++
	}
	if irr < hi {
		irregular(toks, gap, irr, hi, p, depth, out)
	}
}

// irregular adds the stretch [lo, hi) between whole periods of length p:
// searched for a period of its own when it could hold three, else one step.
func irregular(toks []launchToken, gap []int64, lo, hi, p, depth int, out *[]tokenRun) {
	if depth+1 < periodMaxDepth && hi-lo >= 3*p {
		segmentTokens(toks, gap, lo, hi, depth+1, out)
		return
	}
	*out = append(*out, tokenRun{lo, hi, false})
}

func countGraphs(toks []launchToken) int {
	n := 0
	for _, tk := range toks {
		if tk.isGraph() {
			n++
		}
	}
	return n
}

func sameIDs(a []launchToken, w []launchToken) bool {
	for i := range a {
		if a[i].id != w[i].id {
			return false
		}
	}
	return true
}

// findPeriod returns one period of seq's launch sequence: the word of
// launches one engine step makes. The candidates are the usual spacings of
// each graph: a piece that runs once per step recurs one step later, the
// pieces inside the layers recur a layer later. Among the candidates whose
// period holds at least two graph launches (a layer's holds one), the one
// whose graph launches repeat (at least periodMinMatch of the positions
// that hold one equal the one a period later) with the fewest breaks (runs
// of positions that do not) is the step: a layer's period breaks at every
// step, the step's only where an irregular step (a prefill) interrupts it.
// Positions without a graph launch do not count: an eager prefill is long
// and has a period of its own (its layer).
func findPeriod(seq []launchToken) ([]launchToken, bool) {
	from := slices.IndexFunc(seq, launchToken.isGraph)
	if from < 0 {
		return nil, false
	}
	w := seq[max(0, from-64):]
	w = w[:min(len(w), periodWindow)]
	var best []launchToken
	bestBreaks := 0
	for _, p := range graphSpacings(w) {
		word, ok := periodWord(w, p)
		if !ok || countGraphs(word) < 2 {
			continue
		}
		counted, matched, breaks := 0, 0, 0
		inBreak := false
		for i := 0; i+p < len(w); i++ {
			if !w[i].isGraph() && !w[i+p].isGraph() {
				continue
			}
			counted++
			if w[i].id == w[i+p].id {
				matched++
				inBreak = false
			} else if !inBreak {
				breaks++
				inBreak = true
			}
		}
		if float64(matched) < periodMinMatch*float64(counted) {
			continue
		}
		if best == nil || breaks < bestBreaks {
			best, bestBreaks = word, breaks
		}
	}
	return best, best != nil
}

// graphSpacings returns, in increasing order, the usual distance (the most
// common, the shorter on a tie) between consecutive replays of each graph
// that w replays at least three times.
func graphSpacings(w []launchToken) []int {
	last := map[uint64]int{}
	hist := map[uint64]map[int]int{}
	for i, tk := range w {
		if !tk.isGraph() {
			continue
		}
		if j, ok := last[tk.id]; ok {
			if hist[tk.id] == nil {
				hist[tk.id] = map[int]int{}
			}
			hist[tk.id][i-j]++
		}
		last[tk.id] = i
	}
	var out []int
	for _, h := range hist {
		mode, n, total := 0, 0, 0
		for d, c := range h {
			total += c
			if c > n || (c == n && d < mode) {
				mode, n = d, c
			}
		}
		if total >= 2 && mode >= 2 && !slices.Contains(out, mode) {
			out = append(out, mode)
		}
	}
	slices.Sort(out)
	return out
}

// periodWord returns the first p launches of w that the next p repeat.
func periodWord(w []launchToken, p int) ([]launchToken, bool) {
	for s := 0; s+2*p <= len(w); s++ {
		if sameIDs(w[s:s+p], w[s+p:s+2*p]) {
			return w[s : s+p], true
		}
	}
	return nil, false
}

// bestRotation chooses where in the period a step begins: the rotation
// under which the most whole periods match. A wrong one loses the step on
// each side of every irregular stretch (a prefill), as an engine's steps
// end before a prefill and begin after it. Only the rotations that move a
// boundary across launches a prefill shares with the decode steps tie
// (eager ones: input copies at the start, the sampler at the end); among
// them, the one after the longest typical GPU idle time (the host's work
// between steps; the tie is among those eager launches, not the graph
// pieces whose gaps can be as long).
func bestRotation(seq, word []launchToken, gap []int64) int {
	p := len(word)
	w := seq[:min(len(seq), 2*periodWindow)]
	best, bestMatched := 0, -1
	var bestGap int64
	rot := make([]launchToken, p)
	gaps := make([]int64, 0, len(w)/p+1)
	for r := range p {
		copy(rot, word[r:])
		copy(rot[p-r:], word[:r])
		gaps = gaps[:0]
		for i := 0; i < len(w); {
			if i+p <= len(w) && sameIDs(w[i:i+p], rot) {
				gaps = append(gaps, gap[w[i].first])
				i += p
				continue
			}
			i++
		}
		slices.Sort(gaps)
		var med int64
		if len(gaps) > 0 {
			med = gaps[len(gaps)/2]
		}
		if len(gaps) > bestMatched || (len(gaps) == bestMatched && med > bestGap) {
			best, bestMatched, bestGap = r, len(gaps), med
		}
	}
	return best
}
