package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/profile-model/profile-model/internal/atomicfile"
)

// A named baseline is a merged summary kept under a name in a baselines
// directory (<dir>/<name>.json), so that the fleet compares each night
// with "release-1.2" or "main" rather than with a folder of artifacts that
// expire: regress --baseline NAME, regress --save-baseline NAME. The
// repeats' values travel with it, so the U test works against it as
// against the run directories.

// BaselineFile is a named baseline as stored.
type BaselineFile struct {
	Name    string   `json:"name"`
	Created string   `json:"created"` // UTC, RFC 3339
	Sources []string `json:"sources"` // the result folders it was merged from
	Summary *Summary `json:"summary"`
}

var baselineName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// baselinePath is where the baseline name lives in dir.
func baselinePath(dir, name string) (string, error) {
	if !baselineName.MatchString(name) {
		return "", fmt.Errorf("baseline name %q: use letters, digits, '.', '_' and '-' (e.g. main, release-1.2)", name)
	}
	return filepath.Join(dir, name+".json"), nil
}

// SaveBaseline keeps s under name in dir (created when missing); an
// existing baseline of that name is replaced only with force.
func SaveBaseline(dir, name string, s *Summary, sources []string, now time.Time, force bool) (string, error) {
	path, err := baselinePath(dir, name)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := atomicfile.CheckNew(force, path); err != nil {
		return "", fmt.Errorf("baseline %s exists (%w): choose another name, or replace it with --force", name, err)
	}
	b, err := json.MarshalIndent(BaselineFile{Name: name, Created: now.UTC().Format(time.RFC3339), Sources: sources, Summary: s}, "", "  ")
	if err != nil {
		return "", err
	}
	return path, atomicfile.Write(path, append(b, '\n'))
}

// LoadBaseline reads the baseline name from dir; the error of a missing
// one lists those there are.
func LoadBaseline(dir, name string) (*BaselineFile, error) {
	path, err := baselinePath(dir, name)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		names, _ := Baselines(dir)
		have := "none"
		if len(names) > 0 {
			have = strings.Join(names, ", ")
		}
		return nil, fmt.Errorf("no baseline %q in %s (there: %s); keep one with regress --save-baseline %s RESULTS", name, dir, have, name)
	}
	if err != nil {
		return nil, err
	}
	var f BaselineFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w (save the baseline again)", path, err)
	}
	if f.Summary == nil || len(f.Summary.Sweeps) == 0 {
		return nil, fmt.Errorf("%s: the baseline holds no sweeps (save it again from results that do)", path)
	}
	return &f, nil
}

// Baselines are the names of the baselines in dir, sorted.
func Baselines(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok && !e.IsDir() && baselineName.MatchString(n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}
