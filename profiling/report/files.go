package report

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/internal/results"
)

// filesSection is the index of the run directory: what each file holds.
// Files are listed by the names a run writes (and the traces as run.json
// recorded them), so a copy of the run without its traces gives the same
// index.
func (v *view) filesSection(b *md) {
	b.p("## Files\n\n")
	rd := results.Run(v.r.dir)
	exists := func(path string) bool { _, err := os.Stat(path); return err == nil }
	var rows [][]string
	add := func(path, what string) {
		rel, err := filepath.Rel(v.r.dir, path)
		if err != nil {
			rel = path
		}
		rows = append(rows, []string{code(filepath.ToSlash(rel)), what})
	}
	add(rd.Readme(), "this report (`profile-model report RUN_DIR` rewrites it from the files below)")
	for _, c := range v.charts() {
		add(filepath.Join(v.r.dir, c.file), "chart")
	}
	for _, f := range []struct{ path, what string }{
		{rd.RunInfo(), "how the run was made: engine, flags, sweep, levels"},
		{rd.Summary(), "one row per level: throughput and latency percentiles"},
		{rd.Bench(), "the levels in benchstat format"},
		{rd.ServerLog(), "the engine's output"},
	} {
		if exists(f.path) {
			add(f.path, f.what)
		}
	}
	if name := v.r.info.ModelConfig; name != "" {
		add(filepath.Join(v.r.dir, name), "the model's config.json (as run.json records it)")
	}
	for _, l := range v.r.levels {
		if exists(rd.LevelResult(l.Conc)) {
			add(rd.LevelResult(l.Conc), "the client's results of concurrency "+itoa(l.Conc))
		}
	}
	for _, li := range v.r.info.Levels {
		for _, f := range li.Files {
			add(filepath.Join(v.r.dir, f), "trace analysis of concurrency "+itoa(li.Conc))
		}
		for _, t := range li.Traces {
			if !filepath.IsAbs(t) && !strings.HasPrefix(t, "..") {
				add(filepath.Join(v.r.dir, t), "profiler trace of concurrency "+itoa(li.Conc))
			}
		}
	}
	b.table([]string{"file", "what it holds"}, "ll", rows)
}

func itoa(n int) string { return strconv.Itoa(n) }
