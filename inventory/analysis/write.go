package analysis

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory"
)

// Write writes the tables the result holds to the files named in f (a name
// left empty is not written) and returns the paths written, in the order
// decode, prefill, compat, kernels, categories. Each file is written
// atomically; tables without positions are not written.
func (r *Result) Write(f results.TraceFiles) ([]string, error) {
	var wrote []string
	write := func(path string, data []byte) error {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("creating the output directory: %w", err)
		}
		return atomicfile.Write(path, data)
	}
	table := func(path string, lt *inventory.LayerTable) error {
		if path == "" || lt == nil || len(lt.Positions) == 0 {
			return nil
		}
		if err := write(path, lt.CSV()); err != nil {
			return err
		}
		wrote = append(wrote, path)
		return nil
	}
	for _, t := range []struct {
		path string
		lt   *inventory.LayerTable
	}{{f.Layer, r.Decode}, {f.PrefillLayer, r.Prefill}, {f.CompatLayer, r.Compat}} {
		if err := table(t.path, t.lt); err != nil {
			return wrote, err
		}
	}
	if r.Inventory != nil {
		categories := func(w io.Writer) error { _, err := w.Write(r.Inventory.CategoriesCSV()); return err }
		for _, c := range []struct {
			path string
			data func(io.Writer) error
		}{{f.Kernels, r.Inventory.WriteKernelsCSV}, {f.Categories, categories}} {
			if c.path == "" {
				continue
			}
			if err := os.MkdirAll(filepath.Dir(c.path), 0o755); err != nil {
				return wrote, fmt.Errorf("creating the output directory: %w", err)
			}
			if err := atomicfile.WriteFunc(c.path, c.data); err != nil {
				return wrote, err
			}
			wrote = append(wrote, c.path)
		}
	}
	return wrote, nil
}
