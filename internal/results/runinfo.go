package results

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// RunInfoSchemaVersion is the version of run.json this package writes.
const RunInfoSchemaVersion = 1

// RunInfo is run.json: everything needed to know what a run was and to
// rebuild its report from the run directory alone.
type RunInfo struct {
	SchemaVersion int    `json:"schema_version"`
	Tool          string `json:"tool"` // profile-model version line
	Status        string `json:"status"`
	Error         string `json:"error,omitempty"`
	Start         string `json:"start"`         // UTC, RFC 3339
	End           string `json:"end,omitempty"` // UTC, RFC 3339
	// PID and Host are the profile-model process that runs the run: a run
	// still "running" whose process is gone was killed (abandoned).
	PID  int    `json:"pid,omitempty"`
	Host string `json:"host,omitempty"`

	Engine EngineInfo `json:"engine"`
	Sweep  SweepInfo  `json:"sweep"`

	// ModelConfig is the model's config.json copied into the run
	// directory (a file name relative to it), "" when none was found.
	ModelConfig string `json:"model_config,omitempty"`
	// GPU is the GPU memory pre-flight as one line per GPU.
	GPU string `json:"gpu,omitempty"`
	// Telemetry says how the GPUs' power, clocks and memory were sampled
	// over each level (the tool, its arguments and period), or why not.
	Telemetry string `json:"telemetry,omitempty"`
	// GPUPrice is the price of one GPU-hour in US dollars (--gpu-price),
	// which the report turns into cost per million tokens; 0: none given.
	GPUPrice float64 `json:"gpu_price_usd_per_hour,omitempty"`
	// Traces says where the level traces are: written by the engine into
	// traces/ of the run directory, or left in the server's own profiler
	// directory (engine none) and listed per level.
	Traces string      `json:"traces"`
	Notes  []string    `json:"notes,omitempty"`
	Levels []LevelInfo `json:"levels"`
}

// EngineInfo is how the engine was run.
type EngineInfo struct {
	Kind         string   `json:"kind"` // atom, vllm, sglang, sim, none
	Model        string   `json:"model"`
	TP           int      `json:"tp"`
	URL          string   `json:"url"`
	KVCacheDType string   `json:"kv_cache_dtype,omitempty"`
	MaxNumSeqs   int      `json:"max_num_seqs,omitempty"`
	MaxModelLen  int      `json:"max_model_len,omitempty"`
	Level        *int     `json:"level,omitempty"` // torch.compile level; nil: the engine's default
	EnforceEager bool     `json:"enforce_eager,omitempty"`
	CaptureSizes []int    `json:"cudagraph_capture_sizes,omitempty"`
	ExtraArgs    []string `json:"extra_args,omitempty"`
	Command      string   `json:"command,omitempty"` // as a shell line
	Env          []string `json:"env,omitempty"`     // the variables the tool set, K=V
	Dir          string   `json:"dir,omitempty"`
	TimeScale    float64  `json:"time_scale,omitempty"` // simulated engine: its clock runs this many times faster than the trace's
	// Version and Commit are the installed engine's, as read before it
	// started: its package version, and its checkout's commit when run
	// from one (empty for the simulated engine and engine none).
	Version string `json:"version,omitempty"`
	Commit  string `json:"commit,omitempty"`
	// PGID is the engine's process group (its main process leads it),
	// recorded as soon as it starts; 0 for engine none.
	PGID int `json:"pgid,omitempty"`
	// LeaderCmdline and LeaderStart identify the group's leader (the
	// engine's main process, pid PGID) as it started: its command line
	// and its start time ("boot id:clock ticks since boot", from /proc).
	// Cleanup stops the group only when both still match: a pid reused
	// by another program is never signalled. Empty where /proc is not.
	LeaderCmdline string `json:"leader_cmdline,omitempty"`
	LeaderStart   string `json:"leader_start,omitempty"`
}

// SweepInfo is the client side of the run.
type SweepInfo struct {
	Endpoint      string  `json:"endpoint"`
	ISL           int     `json:"isl"`
	OSL           int     `json:"osl"`
	RangeRatio    float64 `json:"random_range_ratio"`
	RangeRule     string  `json:"random_range_rule,omitempty"` // sglang or vllm; "": sglang, before it was recorded
	Concurrencies []int   `json:"concurrencies"`
	NumPromptsMul int     `json:"num_prompts_mul"`
	Seed          uint64  `json:"seed"`
}

// LevelInfo is one level's place in the run directory.
type LevelInfo struct {
	Conc     int      `json:"conc"`
	Status   string   `json:"status"`
	DecodeBS int      `json:"decode_bs,omitempty"`
	Result   string   `json:"result"`           // conc{N}.json, relative to the run directory
	Dir      string   `json:"dir,omitempty"`    // levels/conc{N}, relative
	Traces   []string `json:"traces,omitempty"` // as the engine wrote them
	Files    []string `json:"files,omitempty"`  // analysis files, relative
	Device   string   `json:"device,omitempty"` // GPU name from the trace
	Error    string   `json:"error,omitempty"`  // why the level's analysis failed
}

// Write writes r as indented JSON.
func (r *RunInfo) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// LoadRunInfo reads run.json.
func LoadRunInfo(path string) (*RunInfo, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r RunInfo
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: not a run.json: %w", path, err)
	}
	if r.SchemaVersion > RunInfoSchemaVersion {
		return nil, fmt.Errorf("%s: schema_version %d is newer than this tool reads (%d): update profile-model", path, r.SchemaVersion, RunInfoSchemaVersion)
	}
	return &r, nil
}

// ModelConfig is the copy of the model's config.json in a run directory.
func (r Run) ModelConfig() string { return r.path("config.json") }
