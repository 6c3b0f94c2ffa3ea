package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/profile-model/profile-model/internal/sidefile"
)

// IndexSchemaVersion is the version of sweep.json this package writes.
const IndexSchemaVersion = 1

// Pair and level statuses of sweep.json, besides a level's own status
// (ok, trace_incomplete, failed, interrupted).
const (
	StatusPending     = "pending"     // not run yet
	StatusRunning     = "running"     // under way (or the sweep was killed)
	StatusOK          = "ok"          // every level ok
	StatusFailed      = "failed"      // the engine never served, died, or a level failed
	StatusInterrupted = "interrupted" // stopped by a signal
	StatusSkipped     = "skipped"     // not run: --fail-fast stopped the sweep first
)

// Index is sweep.json: the sweep directory's table of contents.
type Index struct {
	SchemaVersion int    `json:"schema_version"`
	Tool          string `json:"tool"`
	Plan          string `json:"plan"` // plan.json
	Status        string `json:"status"`
	Start         string `json:"start"`
	End           string `json:"end,omitempty"`
	Error         string `json:"error,omitempty"`
	// Servers say where each server variant's log and traces are.
	Servers []ServerEntry `json:"servers"`
	Pairs   []PairEntry   `json:"pairs"`
	Dropped []Dropped     `json:"dropped,omitempty"`
}

// ServerEntry is one server variant in the sweep directory.
type ServerEntry struct {
	Name    string   `json:"name"`
	Dir     string   `json:"dir"` // relative to the sweep directory
	Command string   `json:"command,omitempty"`
	Env     []string `json:"env,omitempty"`
	GPUs    int      `json:"gpus"` // TP × DP
	Starts  int      `json:"starts"`
	Error   string   `json:"error,omitempty"` // why it did not serve, when it did not
	// Version and Commit are the installed engine's, as read before its
	// start (empty for the simulated engine).
	Version string `json:"version,omitempty"`
	Commit  string `json:"commit,omitempty"`
}

// PairEntry is one pair: its run directory and the status of each level.
type PairEntry struct {
	Server string       `json:"server"`
	Bench  string       `json:"bench"`
	Dir    string       `json:"dir"` // the run directory, relative to the sweep directory
	Status string       `json:"status"`
	Error  string       `json:"error,omitempty"`
	Levels []LevelEntry `json:"levels"`
}

// LevelEntry is one concurrency level of a pair.
type LevelEntry struct {
	Conc   int    `json:"conc"`
	Status string `json:"status"`
	// Why a level on disk was found incomplete or invalid (and is run again).
	Invalid string `json:"invalid,omitempty"`
}

// Name is server/bench.
func (e *PairEntry) Name() string { return e.Server + "/" + e.Bench }

// Write writes the index as indented JSON.
func (x *Index) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(x)
}

// IndexFile is sweep.json of a sweep directory.
func IndexFile(dir string) string { return filepath.Join(dir, "sweep.json") }

// PlanFile is plan.json of a sweep directory.
func PlanFile(dir string) string { return filepath.Join(dir, "plan.json") }

// IsSweep reports whether dir is a sweep directory (it holds sweep.json).
func IsSweep(dir string) bool {
	st, err := os.Stat(IndexFile(dir))
	return err == nil && st.Mode().IsRegular()
}

// LoadIndex reads sweep.json.
func LoadIndex(path string) (*Index, error) {
	data, err := sidefile.Read(context.Background(), path, "the sweep index", sidefile.Small)
	if err != nil {
		return nil, err
	}
	var x Index
	if err := json.Unmarshal(data, &x); err != nil {
		return nil, fmt.Errorf("%s: not a sweep.json: %w", path, err)
	}
	if x.SchemaVersion > IndexSchemaVersion {
		return nil, fmt.Errorf("%s: schema_version %d is newer than this tool reads (%d): update profile-model", path, x.SchemaVersion, IndexSchemaVersion)
	}
	return &x, nil
}
