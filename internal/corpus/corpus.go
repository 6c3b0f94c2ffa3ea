// Package corpus locates the reference corpus of real traces and outputs
// (../shared/corpus beside the project) for tests. A user's fresh clone does
// not have it, so tests that need it skip with a message.
package corpus

import (
	"os"
	"path/filepath"
)

// envVar overrides where the corpus is looked for.
const envVar = "PROFILE_MODEL_CORPUS"

// requireVar, set to 1 (as CI does), turns every skip for want of the
// corpus into a failure, so a green run always means the real traces were
// checked.
const requireVar = "PROFILE_MODEL_REQUIRE_CORPUS"

// required reports whether the corpus must be present.
func required() bool { return os.Getenv(requireVar) == "1" }

// TB is the part of testing.TB these helpers use; taking it as an
// interface keeps package testing out of the binary, which calls Find.
type TB interface {
	Helper()
	Skipf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// skip skips the test, or fails it when the corpus is required.
func skip(t TB, format string, args ...any) {
	t.Helper()
	if required() {
		t.Fatalf(format+": failing, as "+requireVar+"=1 requires the corpus", args...)
	}
	t.Skipf(format+": skipping the checks on real traces", args...)
}

// Find returns the corpus directory, or "" when there is none: $PROFILE_MODEL_CORPUS,
// else ../shared/corpus next to the module root (found from the working directory).
func Find() string {
	if d := os.Getenv(envVar); d != "" {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
		return ""
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			d := filepath.Join(dir, "..", "shared", "corpus")
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				return d
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Dir returns the corpus directory or skips the test, saying why.
func Dir(t TB) string {
	t.Helper()
	d := Find()
	if d == "" {
		skip(t, "reference corpus not found (../shared/corpus beside the project, or $%s)", envVar)
	}
	return d
}

// Path returns a file of the corpus (e.g. "traces/x.json.gz") or skips.
func Path(t TB, rel string) string {
	t.Helper()
	p := filepath.Join(Dir(t), rel)
	if _, err := os.Stat(p); err != nil {
		skip(t, "corpus file %s absent: %v", rel, err)
	}
	return p
}
