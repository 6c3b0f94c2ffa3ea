package report

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/profile-model/profile-model/internal/results"
)

// loadRunInfo reads run.json; a missing or unreadable one gives an empty
// RunInfo and a note (the report then says "not recorded" or takes the
// figure from the traces).
func loadRunInfo(path string) (*results.RunInfo, []string) {
	ri, err := results.LoadRunInfo(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &results.RunInfo{}, []string{"run.json is missing: the run's parameters (engine, TP, flags, lengths, times) are not recorded"}
	case err != nil:
		return &results.RunInfo{}, []string{fmt.Sprintf("run.json could not be read (%v): the run's parameters are not shown", err)}
	}
	var notes []string
	if ri.Status != "" && ri.Status != "ok" && ri.Status != "running" {
		n := "the run ended " + ri.Status
		if ri.Error != "" {
			n += ": " + ri.Error
		}
		notes = append(notes, n)
	}
	for _, n := range ri.Notes {
		notes = append(notes, "run: "+n)
	}
	for _, l := range ri.Levels {
		if l.Error != "" {
			notes = append(notes, fmt.Sprintf("concurrency %d: the trace analysis failed: %s", l.Conc, l.Error))
		}
	}
	return ri, notes
}

// runTimes parses a run's start and end; zero when absent or unreadable.
func runTimes(ri *results.RunInfo) (start, end time.Time) {
	start, _ = time.Parse(time.RFC3339Nano, ri.Start)
	end, _ = time.Parse(time.RFC3339Nano, ri.End)
	return start, end
}

// preflightGPU is the first GPU of the memory pre-flight line, "" when none.
func preflightGPU(ri *results.RunInfo) string {
	line, _, _ := strings.Cut(ri.GPU, "\n")
	return strings.TrimSpace(line)
}
