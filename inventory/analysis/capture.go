package analysis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/tracing"
)

// FindCapture returns the capture trace of the graph batch size graphBS
// beside an execution trace: in <trace dir>/capture_traces/, the file
// bs_<bs>_q_<maxq>_rank<r>.json.gz of the trace's rank with the smallest
// query length (plain decode), else the older bs_<bs>_rank<r>.json.gz;
// "" when there is none. A trace whose rank its path does not tell is
// rank 0.
func FindCapture(trace string, graphBS int) string {
	if graphBS <= 0 {
		return ""
	}
	dir := filepath.Join(filepath.Dir(trace), tracing.CaptureDir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	rank := max(RankOf(trace).TP, 0)
	type cand struct {
		q    int
		path string
	}
	var found []cand
	for _, e := range ents {
		bs, q, r, ok := tracing.ParseCaptureFileName(e.Name())
		if !ok || e.IsDir() || bs != graphBS || r != rank {
			continue
		}
		found = append(found, cand{q, filepath.Join(dir, e.Name())})
	}
	if len(found) == 0 {
		return ""
	}
	// The older name (no q) last: a current file of the same batch wins.
	slices.SortFunc(found, func(a, b cand) int {
		qa, qb := a.q, b.q
		if qa == 0 {
			qa = 1 << 30
		}
		if qb == 0 {
			qb = 1 << 30
		}
		return qa - qb
	})
	return found[0].path
}

// CaptureMissing says what a capture_traces/ folder beside the trace holds
// when FindCapture finds nothing in it for the graph batch size graphBS, so
// that a capture of the wrong sizes or rank is not ignored silently; "" when
// there is no such folder, a capture was found, or no graph was replayed.
func CaptureMissing(trace string, graphBS int) string {
	if graphBS <= 0 || FindCapture(trace, graphBS) != "" {
		return ""
	}
	dir := filepath.Join(filepath.Dir(trace), tracing.CaptureDir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	rank := max(RankOf(trace).TP, 0)
	var sizes []int
	for _, e := range ents {
		if bs, _, r, ok := tracing.ParseCaptureFileName(e.Name()); ok && !e.IsDir() && r == rank {
			sizes = append(sizes, bs)
		}
	}
	slices.Sort(sizes)
	sizes = slices.Compact(sizes)
	held := "no capture trace of this rank"
	if len(sizes) > 0 {
		s := make([]string, len(sizes))
		for i, bs := range sizes {
			s[i] = strconv.Itoa(bs)
		}
		held = "captures of graph batch sizes " + strings.Join(s, ", ")
	}
	return fmt.Sprintf("%s holds %s (rank %d), none of graph batch size %d, the one the decode steps replayed: positions are not named", dir, held, rank, graphBS)
}

// AddCapture reads the capture trace at path and names the positions of
// the robust decode table with the module path and input shapes of the op
// that launched each kernel (inventory.LayerTable.AddCapture); its
// warnings join the result's. It returns the capture read; a file that is
// not a capture trace (most of its kernel launches ran) is an error.
func (r *Result) AddCapture(ctx context.Context, path string) (*tracing.Capture, error) {
	c, err := tracing.LoadCapture(ctx, path)
	if err != nil {
		return nil, err
	}
	// An execution trace read as one would name nothing, quietly.
	if ok, why := c.IsCapture(); !ok {
		return nil, fmt.Errorf("%s is not a capture trace (%s): pass one of the %s/bs_<bs>_q_<q>_rank<r>.json.gz files an engine started with --mark-trace writes", path, why, tracing.CaptureDir)
	}
	if r.Decode != nil {
		r.Warnings = append(r.Warnings, r.Decode.AddCapture(c)...)
		r.Decode.AssignRoles(r.arch)
	}
	return c, nil
}
