package analysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/inventory/roofline"
	"github.com/profile-model/profile-model/tracing"
)

// levelFileVersion is the schema version of the level analysis file this
// package writes.
const levelFileVersion = 1

// LevelFileName is the name of a level's analysis file in its directory
// (levels/conc{N}/ of a run).
const LevelFileName = "analysis.json" // results.Run.LevelAnalysis names it in a run directory

// maxIrregular is how many irregular layers a level file keeps per table
// (all are counted): enough to show how they differ, small enough that a
// trace with thousands of them does not bloat the file.
const maxIrregular = 20

// LevelFile is the analysis of one level's trace as the run report reads it
// back: everything the report needs, so that a report is rebuilt from the
// run directory alone, without the traces. It holds the inspect summary,
// the robust decode and prefill tables, the kernel inventory with category
// totals per decode step and per layer, the step-time reconciliation and
// the warnings.
type LevelFile struct {
	SchemaVersion int    `json:"schema_version"`
	Trace         string `json:"trace"` // the trace's file name, without its directory
	// Summary is the inspect summary; its path is the file name alone, so
	// a copied run directory reads the same.
	Summary   tracing.Summary      `json:"summary"`
	Decode    *LevelTable          `json:"decode,omitempty"`
	Prefill   *LevelTable          `json:"prefill,omitempty"`
	Inventory *inventory.Inventory `json:"inventory,omitempty"`
	StepTime  StepTime             `json:"step_time"`
	// StepDetails are the steps whose labels carry ATOM's detailed
	// annotation (ATOM_ENABLE_DETAILED_ANNOTATION=1: sqsq=, sqsk=, sk=),
	// in step order; absent when no step does.
	StepDetails []StepDetail   `json:"step_details,omitempty"`
	Warnings    []diag.Warning `json:"warnings"`
	// Roofline is each decode position against the GPU's peaks (nil when
	// it cannot be computed; RooflineNote says why). The run fills it in.
	Roofline     *roofline.Table `json:"roofline,omitempty"`
	RooflineNote string          `json:"roofline_note,omitempty"`
	// PrefillRoofline is the same for the prefill table's positions, a
	// prefill step's work from its prompt tokens.
	PrefillRoofline     *roofline.Table `json:"prefill_roofline,omitempty"`
	PrefillRooflineNote string          `json:"prefill_roofline_note,omitempty"`
	// SpeedOfLight is the least time a decode step of the level could
	// take at the GPU's peaks and its measured step as a multiple of it
	// (nil when it cannot be computed; SpeedOfLightNote says why).
	SpeedOfLight     *roofline.SpeedOfLight `json:"speed_of_light,omitempty"`
	SpeedOfLightNote string                 `json:"speed_of_light_note,omitempty"`
}

// StepDetail is one step's detailed-annotation fields, as its label wrote
// them.
type StepDetail struct {
	Step   int               `json:"step"` // index among the trace's steps
	Kind   string            `json:"kind"`
	BS     int               `json:"bs"`
	Fields map[string]string `json:"fields"` // sqsq, sqsk, sk -> value as written
}

// stepDetails collects the detailed-annotation fields of a trace's steps.
func stepDetails(tr *tracing.Trace) []StepDetail {
	var out []StepDetail
	for i, st := range tr.Steps {
		if st.Fields.Detail == "" {
			continue
		}
		d := StepDetail{Step: i, Kind: string(st.Kind), BS: st.BS, Fields: map[string]string{}}
		for _, part := range strings.Fields(st.Fields.Detail) {
			if k, v, ok := strings.Cut(part, "="); ok {
				d.Fields[k] = v
			}
		}
		out = append(out, d)
	}
	return out
}

// LevelTable is a robust layer table with its irregular layers cut to the
// first maxIrregular; IrregularLayers counts them all.
type LevelTable struct {
	inventory.LayerTable
	IrregularLayers int `json:"irregular_layers"`
}

// DecodeBS is the level's decode batch size read from its trace (0 when
// unknown).
func (f *LevelFile) DecodeBS() int { return f.Summary.DecodeBS }

// NewLevelFile makes the level file of an analysis; the result must hold
// the trace (Result.Trace) for the step times.
func NewLevelFile(r *Result) *LevelFile {
	f := &LevelFile{SchemaVersion: levelFileVersion, Trace: filepath.Base(r.Path), Summary: r.Summary,
		Decode: levelTable(r.Decode), Prefill: levelTable(r.Prefill), Inventory: r.Inventory,
		Warnings: slices.Clone(r.Warnings)}
	f.Summary.Path = f.Trace
	if r.Trace != nil {
		f.StepTime = StepTimes(r.Trace, r.Decode)
		f.StepDetails = stepDetails(r.Trace)
	}
	return f
}

func levelTable(t *inventory.LayerTable) *LevelTable {
	if t == nil {
		return nil
	}
	lt := &LevelTable{LayerTable: *t, IrregularLayers: len(t.Irregular)}
	if len(t.Irregular) > maxIrregular {
		lt.Irregular = slices.Clone(t.Irregular[:maxIrregular])
	}
	return lt
}

// Write writes the level file to path atomically, as indented JSON.
func (f *LevelFile) Write(path string) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return atomicfile.Write(path, b.Bytes())
}

// LoadLevelFile reads a level file. Unknown keys are ignored; a file from a
// newer release than this one reads is an error that says so.
func LoadLevelFile(path string) (*LevelFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := parseLevelFile(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// parseLevelFile parses a level file document.
func parseLevelFile(data []byte) (*LevelFile, error) {
	var f LevelFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("not a level analysis file (%w); rewrite it with profile-model run, or remove it", err)
	}
	if f.SchemaVersion > levelFileVersion {
		return nil, fmt.Errorf("schema_version %d is newer than this tool reads (%d): update profile-model", f.SchemaVersion, levelFileVersion)
	}
	if f.SchemaVersion == 0 {
		return nil, fmt.Errorf("no schema_version: not a level analysis file")
	}
	return &f, nil
}
