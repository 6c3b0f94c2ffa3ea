package report

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// RunInfo is the part of a run's run.json that the report reads. The run
// writes more; every field here may be absent (the report then says "not
// recorded" or takes the figure from the traces).
type RunInfo struct {
	Model        string            `json:"model"`
	Engine       string            `json:"engine"`         // atom, vllm, sglang, sim, none
	TP           int               `json:"tp"`             // tensor parallel size
	KVCacheDtype string            `json:"kv_cache_dtype"` // e.g. fp8, auto
	Level        *int              `json:"level"`          // compilation level; nil: the engine's default
	EnforceEager bool              `json:"enforce_eager"`  // CUDA/HIP graphs disabled
	MaxNumSeqs   int               `json:"max_num_seqs"`   // the engine's batch limit
	Flags        []string          `json:"flags"`          // other engine flags, as given
	ISL          int               `json:"isl"`            // requested input length
	OSL          int               `json:"osl"`            // requested output length
	GPU          string            `json:"gpu"`            // from the GPU tool; the trace's device name wins
	Command      []string          `json:"engine_command"` // the engine's command line (argv)
	ModelConfig  string            `json:"model_config"`   // the model's config.json copied into the run directory, relative to it
	TimeScale    float64           `json:"time_scale"`     // simulated engine: its clock runs this many times faster than the trace's
	Start        string            `json:"start_time"`     // RFC 3339
	End          string            `json:"end_time"`       // RFC 3339
	Versions     map[string]string `json:"versions"`       // tool and engine versions
}

// DefaultModelConfig is where a run keeps a copy of the model's
// config.json, when run.json names none.
const DefaultModelConfig = "model_config.json"

// loadRunInfo reads run.json leniently: a key of the wrong type is skipped
// with a note; a missing file gives an empty RunInfo and a note.
func loadRunInfo(path string) (*RunInfo, []string) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return &RunInfo{}, []string{"run.json is missing: the run's parameters (engine, TP, flags, lengths, times) are not recorded"}
	}
	if err != nil {
		return &RunInfo{}, []string{fmt.Sprintf("run.json could not be read (%v): the run's parameters are not shown", err)}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return &RunInfo{}, []string{fmt.Sprintf("run.json is not a JSON object (%v): the run's parameters are not shown", err)}
	}
	ri := &RunInfo{}
	var notes []string
	get := func(key string, dst any) {
		v, ok := raw[key]
		if !ok || string(v) == "null" {
			return
		}
		if err := json.Unmarshal(v, dst); err != nil {
			notes = append(notes, fmt.Sprintf("run.json: key %q could not be read (%v); ignored", key, err))
		}
	}
	get("model", &ri.Model)
	get("engine", &ri.Engine)
	get("tp", &ri.TP)
	get("kv_cache_dtype", &ri.KVCacheDtype)
	get("level", &ri.Level)
	get("enforce_eager", &ri.EnforceEager)
	get("max_num_seqs", &ri.MaxNumSeqs)
	get("flags", &ri.Flags)
	get("isl", &ri.ISL)
	get("osl", &ri.OSL)
	get("gpu", &ri.GPU)
	get("engine_command", &ri.Command)
	get("model_config", &ri.ModelConfig)
	get("time_scale", &ri.TimeScale)
	get("start_time", &ri.Start)
	get("end_time", &ri.End)
	get("versions", &ri.Versions)
	return ri, notes
}

// times parses the start and end times; zero when absent or unreadable.
func (ri *RunInfo) times() (start, end time.Time) {
	start, _ = time.Parse(time.RFC3339Nano, ri.Start)
	end, _ = time.Parse(time.RFC3339Nano, ri.End)
	return start, end
}
