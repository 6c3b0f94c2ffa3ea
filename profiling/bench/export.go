package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

const traceSuffix = ".pt.trace.json.gz"

// rankDirs lists the per-rank trace directories under dir (ATOM's rank_<r>
// and dp<d>_tp<r>); a profiler directory without them holds its traces
// itself.
func rankDirs(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the trace directory: %w", err)
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() && (strings.HasPrefix(n, "rank_") || strings.HasPrefix(n, "dp") && strings.Contains(n, "_tp")) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	if len(out) == 0 {
		out = []string{dir}
	}
	return out, nil
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
			n := e.Name()
			if e.IsDir() || !(strings.HasSuffix(n, ".json.gz") || strings.HasSuffix(n, ".json")) {
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue // removed meanwhile (a .json after its gzip)
			}
			files[filepath.Join(rd, n)] = info.Size()
		}
	}
	return files, nil
}

// waitExport waits until the export that followed /stop_profile is
// complete: every rank directory has a new *.pt.trace.json.gz, no new .json
// is left without its .gz, and the new .gz files kept their size for one
// poll (gzip is done). It returns the new traces, one or more per rank.
// When no file is new or changed after appear, it stops and says the
// directory is probably not the server's (reported: the directories the
// server's reply named).
func waitExport(ctx context.Context, dir string, before map[string]int64, timeout, poll, appear time.Duration, reported []string) ([]string, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	appeared := false
	var lastSizes map[string]int64
	state := "no trace directory yet"
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	for {
		files, err := traceFiles(dir)
		if err != nil {
			return nil, err
		}
		var ready []string
		ready, state = exportState(dir, files, before, lastSizes)
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

// exportState returns the new traces when the export is complete, else nil
// and what is still missing.
func exportState(dir string, files, before, lastSizes map[string]int64) ([]string, string) {
	ranks, err := rankDirs(dir)
	if err != nil {
		return nil, err.Error()
	}
	var ready, missing []string
	for _, rd := range ranks {
		var gz []string
		for p := range files {
			if _, old := before[p]; old || filepath.Dir(p) != rd {
				continue
			}
			switch {
			case strings.HasSuffix(p, traceSuffix):
				if size, ok := lastSizes[p]; !ok || size != files[p] || size == 0 {
					missing = append(missing, filepath.Base(rd)+": "+filepath.Base(p)+" still growing")
				}
				gz = append(gz, p)
			case strings.HasSuffix(p, ".json"):
				if _, ok := files[p+".gz"]; !ok {
					missing = append(missing, filepath.Base(rd)+": "+filepath.Base(p)+" without its .gz (export running or died)")
				}
			}
		}
		if len(gz) == 0 {
			missing = append(missing, filepath.Base(rd)+": no new "+traceSuffix)
		}
		ready = append(ready, gz...)
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, strings.Join(missing, "; ")
	}
	slices.Sort(ready)
	return ready, ""
}
