package analysis

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/profiling/synth"
)

func TestLevelFileRoundTrip(t *testing.T) {
	r := synthResult(t, synth.GenerateOptions{BS: 4, DecodeSteps: 6, PrefillSteps: 2, Layers: 6})
	f := NewLevelFile(r)
	require.Equal(t, levelFileVersion, f.SchemaVersion)
	require.Equal(t, "trace.json", f.Trace)
	require.Equal(t, "trace.json", f.Summary.Path, "no directory: a copied run reads the same")
	require.Equal(t, 4, f.DecodeBS())
	require.NotNil(t, f.Decode)
	require.NotNil(t, f.Prefill)
	require.NotNil(t, f.Inventory)
	require.Equal(t, 6, f.StepTime.DecodeSteps)
	require.Equal(t, StepTimes(r.Trace, r.Decode), f.StepTime)

	path := filepath.Join(t.TempDir(), LevelFileName)
	require.NoError(t, f.Write(path))
	got, err := LoadLevelFile(path)
	require.NoError(t, err)
	if d := cmp.Diff(f, got, cmpopts.EquateEmpty()); d != "" {
		t.Fatalf("round trip (-wrote +read):\n%s", d)
	}
	// Writing what was read gives the same bytes.
	again := filepath.Join(t.TempDir(), LevelFileName)
	require.NoError(t, got.Write(again))
	a, _ := os.ReadFile(path)
	b, _ := os.ReadFile(again)
	require.Equal(t, string(a), string(b))
}

func TestLevelFileCapsIrregular(t *testing.T) {
	lt := &inventory.LayerTable{Positions: []inventory.Position{}}
	for i := range maxIrregular + 5 {
		lt.Irregular = append(lt.Irregular, inventory.IrregularLayer{Step: i})
	}
	got := levelTable(lt)
	require.Len(t, got.Irregular, maxIrregular)
	require.Equal(t, maxIrregular+5, got.IrregularLayers)
	require.Len(t, lt.Irregular, maxIrregular+5, "the analysis keeps them all")
}

func TestLoadLevelFileErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ name, doc, want string }{
		{"not json", `{`, "not a level analysis file"},
		{"not an object", `[1]`, "not a level analysis file"},
		{"no schema", `{"trace": "x"}`, "no schema_version"},
		{"newer", `{"schema_version": 99}`, "schema_version 99 is newer than this tool reads (1): update profile-model"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name+".json")
			require.NoError(t, os.WriteFile(p, []byte(tt.doc), 0o644))
			_, err := LoadLevelFile(p)
			require.ErrorContains(t, err, p+": ")
			require.ErrorContains(t, err, tt.want)
		})
	}
	// Unknown keys are ignored.
	p := filepath.Join(dir, "future.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"schema_version": 1, "trace": "t", "new_key": {"a": 1}}`), 0o644))
	f, err := LoadLevelFile(p)
	require.NoError(t, err)
	require.Equal(t, "t", f.Trace)
}

// ATOM's detailed annotations (sqsq=, sqsk=, sk=) are kept per step in
// analysis.json, and read back.
func TestLevelFileStepDetails(t *testing.T) {
	r := synthResult(t, synth.GenerateOptions{BS: 4, DecodeSteps: 3, PrefillSteps: 1, Layers: 2})
	require.Empty(t, NewLevelFile(r).StepDetails, "no label carries them")
	last := len(r.Trace.Steps) - 1
	r.Trace.Steps[last].Fields.Detail = "sqsq=4 sqsk=4224 sk=1056"
	f := NewLevelFile(r)
	require.Equal(t, []StepDetail{{Step: last, Kind: string(r.Trace.Steps[last].Kind), BS: r.Trace.Steps[last].BS,
		Fields: map[string]string{"sqsq": "4", "sqsk": "4224", "sk": "1056"}}}, f.StepDetails)
	path := filepath.Join(t.TempDir(), LevelFileName)
	require.NoError(t, f.Write(path))
	got, err := LoadLevelFile(path)
	require.NoError(t, err)
	require.Equal(t, f.StepDetails, got.StepDetails)
}
