package layering

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// layers, bottom to top: the top-level folder of a package path gives its
// layer.
var layers = []string{"internal", "tracing", "inventory", "profiling", "cmd"}

func layerOf(rel string) int {
	top, _, _ := strings.Cut(rel, "/")
	for i, l := range layers {
		if l == top {
			return i
		}
	}
	return -1
}

// moduleRoot is the folder holding go.mod, above this package's.
func moduleRoot(t *testing.T) (root, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if m, ok := strings.CutPrefix(line, "module "); ok {
					return dir, strings.TrimSpace(m)
				}
			}
			t.Fatalf("%s: no module line", filepath.Join(dir, "go.mod"))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// imports lists, for every non-test Go file of the module, the project
// packages it imports: file (relative to root) → import paths relative to
// the module.
func imports(t *testing.T, root, module string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if q, ok := strings.CutPrefix(p, module+"/"); ok {
				out[filepath.ToSlash(rel)] = append(out[filepath.ToSlash(rel)], q)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNothingImportsUpward: no package imports a package of a higher
// layer, and every project package is in a layer.
func TestNothingImportsUpward(t *testing.T) {
	root, module := moduleRoot(t)
	files := imports(t, root, module)
	if len(files) == 0 {
		t.Fatal("no file imports a project package: the walk found nothing")
	}
	for file, ims := range files {
		from := layerOf(file)
		if from < 0 && !strings.HasPrefix(file, "scripts/") {
			t.Errorf("%s: not in a layer (%s); move it under one of them", file, strings.Join(layers, ", "))
			continue
		}
		for _, im := range ims {
			to := layerOf(im)
			switch {
			case to < 0:
				t.Errorf("%s imports %s, which is in no layer (%s)", file, im, strings.Join(layers, ", "))
			case from >= 0 && to > from:
				t.Errorf("%s (layer %s) imports %s (layer %s, above it): layers go %s, bottom to top; move the shared code down",
					file, layers[from], im, layers[to], strings.Join(layers, " → "))
			}
		}
	}
}

// TestLayerOf: the check would see an upward import.
func TestLayerOf(t *testing.T) {
	for path, want := range map[string]int{
		"internal/results/level.go": 0, "tracing/trim": 1, "inventory/analysis": 2,
		"profiling/bench/sweep.go": 3, "cmd/profile-model": 4, "scripts/freeport": -1,
	} {
		if got := layerOf(path); got != want {
			t.Errorf("layerOf(%q) = %d, want %d", path, got, want)
		}
	}
	if layerOf("tracing/x.go") >= layerOf("profiling/synth") {
		t.Error("tracing must lie below profiling")
	}
}
