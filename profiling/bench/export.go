package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/profile-model/profile-model/internal/inflate"
)

// What the engines write into their torch profiler directory (docs/engines.md
// names the source of each):
//
//   - ATOM: one directory per rank, rank_<r>, dp<d>_tp<r> with data
//     parallelism, pp<k>_ before either with pipeline parallelism, each
//     holding <model>_ts_<time>.pt.trace.json.gz; the export writes the
//     .json first, then gzips it in place beside it and removes the .json.
//   - vLLM: every file in the directory itself: one per worker,
//     <instance>-rank-<r>.<ns>.pt.trace.json.gz (older releases
//     <host>_<pid>.<ns>...), and one CPU-only trace of the API process,
//     <host>_<pid>.async_llm.<ns>.pt.trace.json.gz, which is never a
//     level's trace.
//   - SGLang: every file in the directory itself,
//     [<prefix>-]<id>-TP-<r>[-DP-<d>][-PP-<p>][-EP-<e>][-<stage>].trace.json.gz.
//
// vLLM's and SGLang's gzip files grow in place as torch writes them, and
// ATOM answers /stop_profile once rank 0 is written: a file is complete
// only when its gzip stream ends with a valid trailer.

// traceName is what a file name in a trace directory says.
type traceName struct {
	rank     rankKey // the rank in the name; zero: none named
	named    bool    // rank comes from the name
	frontEnd bool    // vLLM's API-process trace: CPU only
	done     bool    // a finished .json.gz; else an export under way (.json)
}

// rankKey orders ranks: pipeline stage, data-parallel rank, tensor-parallel rank.
type rankKey struct{ pp, dp, tp int }

func (k rankKey) compare(o rankKey) int {
	return cmp.Or(cmp.Compare(k.pp, o.pp), cmp.Compare(k.dp, o.dp), cmp.Compare(k.tp, o.tp))
}

var (
	atomRankDir = regexp.MustCompile(`^(?:pp(\d+)_)?(?:rank_(\d+)|dp(\d+)_tp(\d+))$`)
	sglangRank  = regexp.MustCompile(`-TP-(\d+)(?:-DP-(\d+))?(?:-PP-(\d+))?`)
	vllmRank    = regexp.MustCompile(`-rank-(\d+)(?:\.|$)`)
)

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// parseRankDir reads an ATOM rank directory's name.
func parseRankDir(name string) (rankKey, bool) {
	m := atomRankDir.FindStringSubmatch(name)
	if m == nil {
		return rankKey{}, false
	}
	k := rankKey{pp: atoi(m[1]), tp: atoi(m[2])}
	if m[3] != "" {
		k.dp, k.tp = atoi(m[3]), atoi(m[4])
	}
	return k, true
}

// classifyTrace says what a file is; ok is false for a file that is no
// trace (capture traces live in their own directory, tables in .txt).
func classifyTrace(name string) (t traceName, ok bool) {
	var base string
	switch {
	case strings.HasSuffix(name, ".trace.json.gz"):
		base, t.done = strings.TrimSuffix(name, ".trace.json.gz"), true
	case strings.HasSuffix(name, ".json"):
		base = strings.TrimSuffix(strings.TrimSuffix(name, ".json"), ".trace")
	default:
		return t, false
	}
	base = strings.TrimSuffix(base, ".pt")
	if strings.Contains(base, ".async_llm.") || strings.HasSuffix(base, ".async_llm") {
		t.frontEnd = true
		return t, true
	}
	if m := sglangRank.FindStringSubmatch(base); m != nil {
		t.rank, t.named = rankKey{tp: atoi(m[1]), dp: atoi(m[2]), pp: atoi(m[3])}, true
	} else if ms := vllmRank.FindAllStringSubmatch(base, -1); ms != nil {
		t.rank, t.named = rankKey{tp: atoi(ms[len(ms)-1][1])}, true
	}
	return t, true
}

// rankDirs lists the per-rank trace directories under dir (ATOM's rank_<r>,
// dp<d>_tp<r>, pp<k>_…) in rank order; a profiler directory without them
// holds its traces itself.
func rankDirs(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the trace directory: %w", err)
	}
	type rd struct {
		path string
		k    rankKey
	}
	var out []rd
	for _, e := range ents {
		if k, ok := parseRankDir(e.Name()); ok && e.IsDir() {
			out = append(out, rd{filepath.Join(dir, e.Name()), k})
		}
	}
	if len(out) == 0 {
		return []string{dir}, nil
	}
	slices.SortFunc(out, func(a, b rd) int { return a.k.compare(b.k) })
	paths := make([]string, len(out))
	for i, r := range out {
		paths[i] = r.path
	}
	return paths, nil
}

// traceFiles maps every trace file (finished .json.gz or unfinished .json)
// in the rank directories of dir to its size. A missing dir is empty: the
// server creates it at the first export.
func traceFiles(dir string) (map[string]int64, error) {
	files := map[string]int64{}
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return files, nil
	}
	ranks, err := rankDirs(dir)
	if err != nil {
		return nil, err
	}
	for _, rd := range ranks {
		ents, err := os.ReadDir(rd)
		if err != nil {
			return nil, fmt.Errorf("reading the trace directory: %w", err)
		}
		for _, e := range ents {
			if _, ok := classifyTrace(e.Name()); e.IsDir() || !ok {
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue // removed meanwhile (a .json after its gzip)
			}
			files[filepath.Join(rd, e.Name())] = info.Size()
		}
	}
	return files, nil
}

// exportWait is one wait for the export that followed /stop_profile.
type exportWait struct {
	dir    string
	before map[string]int64
	ranks  int // ranks expected in a directory without rank directories; < 1: 1
	// complete holds the size at which a file's gzip stream was read to
	// its trailer, so a finished file is read once.
	complete map[string]int64
}

// waitExport waits until the export that followed /stop_profile is
// complete: every rank has a new trace (each rank directory; in a flat
// directory, ranks distinct ranks by name), no new .json is left without
// its .gz, and every new .gz kept its size for one poll and holds a whole
// gzip stream. It returns the new worker traces, in rank order (vLLM's
// API-process trace is never one). When no file is new or changed after
// appear, it stops and says the directory is probably not the server's
// (reported: the directories the server's reply named).
func waitExport(ctx context.Context, dir string, before map[string]int64, ranks int, timeout, poll, appear time.Duration, reported []string) ([]string, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	appeared := false
	var lastSizes map[string]int64
	state := "no trace directory yet"
	w := &exportWait{dir: dir, before: before, ranks: max(ranks, 1), complete: map[string]int64{}}
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	for {
		files, err := traceFiles(dir)
		if err != nil {
			return nil, err
		}
		var ready []string
		ready, state = w.state(files, lastSizes)
		if ready != nil {
			return ready, nil
		}
		lastSizes = files
		for p, size := range files {
			if old, ok := before[p]; !ok || old != size {
				appeared = true
				break
			}
		}
		if !appeared && time.Since(start) >= appear {
			return nil, noTraceError(dir, time.Since(start), reported)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("trace export not complete after %v in %s: %s (a slow export: raise the deadline; none at all: the server was not started with this profiler directory)", timeout, dir, state)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the trace export in %s (%s): %w", dir, state, ctx.Err())
		case <-ticker.C:
		}
	}
}

// rankTraces are the new traces of one rank.
type rankTraces struct {
	k     rankKey
	named bool
	files []string
}

// state returns the new worker traces, in rank order, when the export is
// complete, else nil and what is still missing.
func (w *exportWait) state(files, lastSizes map[string]int64) ([]string, string) {
	dirs, err := rankDirs(w.dir)
	if err != nil {
		return nil, err.Error()
	}
	perDir := dirs[0] != w.dir
	var missing []string
	groups := map[string]*rankTraces{}
	for _, rd := range dirs {
		if perDir {
			k, _ := parseRankDir(filepath.Base(rd))
			groups[rd] = &rankTraces{k: k, named: true}
		}
	}
	for p, size := range files {
		if _, old := w.before[p]; old {
			continue
		}
		rd, name := filepath.Dir(p), filepath.Base(p)
		t, _ := classifyTrace(name)
		if !t.done {
			if _, ok := files[p+".gz"]; !ok {
				missing = append(missing, rel1(w.dir, p)+" without its .gz (export running or died)")
			}
			continue
		}
		if last, ok := lastSizes[p]; !ok || last != size || size == 0 {
			missing = append(missing, rel1(w.dir, p)+" still growing")
		} else if !w.whole(p, size) {
			missing = append(missing, rel1(w.dir, p)+" not a whole gzip stream yet")
		}
		if t.frontEnd {
			continue // waited for, never analysed
		}
		key := rd
		if !perDir {
			key = name // a file without a rank in its name is a rank of its own
			if t.named {
				key = fmt.Sprintf("rank %d/%d/%d", t.rank.pp, t.rank.dp, t.rank.tp)
			}
		}
		g := groups[key]
		if g == nil {
			g = &rankTraces{k: t.rank, named: t.named}
			groups[key] = g
		}
		g.files = append(g.files, p)
	}
	var ordered []*rankTraces
	for key, g := range groups {
		if len(g.files) == 0 {
			missing = append(missing, rel1(w.dir, key)+": no new trace")
			continue
		}
		slices.Sort(g.files)
		ordered = append(ordered, g)
	}
	if !perDir && len(ordered) < w.ranks {
		missing = append(missing, fmt.Sprintf("%d of %d ranks' traces", len(ordered), w.ranks))
	}
	if perDir && len(dirs) < w.ranks {
		missing = append(missing, fmt.Sprintf("%d of %d rank directories", len(dirs), w.ranks))
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, strings.Join(missing, "; ")
	}
	// Ranks named in the file or directory first, in rank order; then
	// files named by no rank, by name.
	slices.SortFunc(ordered, func(a, b *rankTraces) int {
		switch {
		case a.named != b.named:
			if a.named {
				return -1
			}
			return 1
		case a.named:
			if c := a.k.compare(b.k); c != 0 {
				return c
			}
		}
		return strings.Compare(a.files[0], b.files[0])
	})
	var ready []string
	for _, g := range ordered {
		ready = append(ready, g.files...)
	}
	return ready, ""
}

// whole tells whether the gzip file p of size bytes holds a whole gzip
// stream, trailer and checksum included; a file still being written ends
// inside its deflate data.
func (w *exportWait) whole(p string, size int64) bool {
	if w.complete[p] == size {
		return true
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	z, err := inflate.NewReader(f)
	if err == nil {
		_, err = io.Copy(io.Discard, z)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	w.complete[p] = size
	return true
}

// rel1 names p from dir, for the wait's state.
func rel1(dir, p string) string {
	if r, err := filepath.Rel(dir, p); err == nil {
		return r
	}
	return p
}
