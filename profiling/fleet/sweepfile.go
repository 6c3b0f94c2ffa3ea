package fleet

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/profile-model/profile-model/internal/sidefile"
	"github.com/profile-model/profile-model/profiling/engine"
)

// SweepFile is what the matrix needs of a sweep declaration
// (fixtures/sweeps/NAME.json): its name, engine, GPU and whether it reads
// the reference corpus. The harness that runs it checks the rest of the
// declaration, so other fields are read past here.
type SweepFile struct {
	Name       string   `json:"name"`
	Engine     string   `json:"engine"`
	GPU        string   `json:"gpu,omitempty"`
	SimKernels []string `json:"sim_kernels,omitempty"`

	path string
}

// corpusPrefix marks a file of the reference corpus in sim_kernels.
const corpusPrefix = "corpus:"

// Kind is the sweep's engine.
func (s *SweepFile) Kind() engine.Kind { return engine.Kind(s.Engine) }

// NeedsCorpus reports whether the sweep reads the reference corpus.
func (s *SweepFile) NeedsCorpus() bool {
	return slices.ContainsFunc(s.SimKernels, func(p string) bool { return strings.HasPrefix(p, corpusPrefix) })
}

// Path is the declaration file.
func (s *SweepFile) Path() string { return s.path }

// LoadSweepFiles reads every *.json declaration of dir, sorted by name
// (none when dir holds only plans; a folder that is not there is an
// error).
func LoadSweepFiles(dir string) ([]*SweepFile, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("sweeps folder %s: not a folder (%v): give the folder of the sweep declarations, e.g. fixtures/sweeps", dir, err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []*SweepFile
	for _, p := range paths {
		data, err := sidefile.Read(context.Background(), p, "the sweep declaration", sidefile.Small)
		if err != nil {
			return nil, err
		}
		s, err := ParseSweepFile(data, p)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *SweepFile) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// ParseSweepFile reads the matrix's fields of a declaration; path names
// it in errors.
func ParseSweepFile(data []byte, path string) (*SweepFile, error) {
	s := &SweepFile{path: path}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if want := strings.TrimSuffix(filepath.Base(path), ".json"); s.Name != want {
		return nil, fmt.Errorf("%s: name %q: must be the file's base name %q", path, s.Name, want)
	}
	kind, err := engine.ParseKind(s.Engine)
	if err != nil {
		return nil, fmt.Errorf("%s: engine: %w", path, err)
	}
	if kind == engine.None {
		return nil, fmt.Errorf("%s: engine none: a sweep declares the engine it starts", path)
	}
	return s, nil
}
