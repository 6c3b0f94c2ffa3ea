package report_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/report"
)

// A run directory with level results only (no trace analysis) still gets a
// report: throughput, latency charts, and notes on what is missing.
func ExampleBuild() {
	dir, _ := os.MkdirTemp("", "run")
	defer os.RemoveAll(dir)
	run := results.Run(dir)
	for _, conc := range []int{4, 8} {
		l := &results.Level{SchemaVersion: results.SchemaVersion, ModelID: "org/model", MaxConcurrency: conc,
			NumPrompts: 4 * conc, Completed: 4 * conc, Status: results.StatusOK,
			RequestThroughput: float64(conc), OutputThroughput: 50 * float64(conc), TotalTokenThroughput: 1000 * float64(conc),
			TTFT: results.Stats{Median: 30, Pcts: []results.Pct{{P: 50, Value: 30}, {P: 99, Value: 40}}},
			TPOT: results.Stats{Median: 15, Pcts: []results.Pct{{P: 50, Value: 15}, {P: 99, Value: 18}}},
		}
		f, _ := os.Create(run.LevelResult(conc))
		_ = l.Write(f)
		f.Close()
	}
	rep, err := report.Build(dir, report.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range rep.Files {
		fmt.Println(filepath.Base(f))
	}
	fmt.Println(len(rep.Notes) > 0, "notes on what the run directory lacks")
	// Output:
	// latency.svg
	// throughput.svg
	// throughput_tpot.svg
	// readme.md
	// true notes on what the run directory lacks
}
