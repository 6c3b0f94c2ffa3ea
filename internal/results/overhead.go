package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/profile-model/profile-model/internal/atomicfile"
)

// DefaultOverheadPct is how much slower (TPOT, in percent) a level may
// run under the profiler than without it before the run says its profiled
// latencies are not the engine's.
const DefaultOverheadPct = 5

// Overhead is overhead.json of a run made with --overhead-check: one
// level run again without the profiler, and the difference of TPOT.
type Overhead struct {
	Conc int `json:"conc"`
	// Mean TPOT of the profiled level and of the same level run again
	// with the profiler off, ms, on the engine's clock; the requests each
	// completed.
	ProfiledTPOTMS   float64 `json:"profiled_tpot_ms"`
	UnprofiledTPOTMS float64 `json:"unprofiled_tpot_ms"`
	ProfiledN        int     `json:"profiled_completed"`
	UnprofiledN      int     `json:"unprofiled_completed"`
	// DiffPct is (profiled − unprofiled) / unprofiled in percent;
	// Flagged when it is above ThresholdPct.
	DiffPct      float64 `json:"diff_pct"`
	ThresholdPct float64 `json:"threshold_pct"`
	Flagged      bool    `json:"flagged"`
	Dir          string  `json:"dir"` // the unprofiled level's results, relative to the run directory
}

// Overhead is the path of the run's overhead check.
func (r Run) Overhead() string { return r.path("overhead.json") }

// WriteOverhead writes o to path.
func WriteOverhead(path string, o *Overhead) error {
	b, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'))
}

// ReadOverhead reads a run's overhead check; nil and no error when the run
// made none.
func ReadOverhead(path string) (*Overhead, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var o Overhead
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("%s: %w (delete it, or run again with --overhead-check)", path, err)
	}
	return &o, nil
}
