package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/ from what the commands print")

// goldenTraces are generated once per test binary: small ATOM-style traces
// (3 layers, 12 decode steps) with a fixed seed, so the commands' output is
// the same on every machine.
var goldenTraces struct {
	once  sync.Once
	dir   string
	err   error
	clean func()
}

var goldenVariants = map[string][]string{
	"atom":      nil,
	"alternate": {"--alternate"},
	"streams":   {"--two-streams"},
	"eager":     {"--eager-decode"},
}

func goldenTrace(t *testing.T, variant string) (dir, path string) {
	t.Helper()
	goldenTraces.once.Do(func() {
		d, err := os.MkdirTemp("", "golden-traces")
		if err != nil {
			goldenTraces.err = err
			return
		}
		goldenTraces.dir = d
		for name, extra := range goldenVariants {
			args := append([]string{"synth", "--out", filepath.Join(d, name+".json.gz"), "--layers", "3",
				"--decode-steps", "12", "--prefill-steps", "1", "--bs", "8", "--seed", "3", "--python-per-step", "5"}, extra...)
			var stderr bytes.Buffer
			if err := run(context.Background(), args, &bytes.Buffer{}, &stderr); err != nil {
				goldenTraces.err = err
				return
			}
		}
	})
	if goldenTraces.err != nil {
		t.Fatalf("generating the golden traces: %v", goldenTraces.err)
	}
	return goldenTraces.dir, filepath.Join(goldenTraces.dir, variant+".json.gz")
}

func TestMain(m *testing.M) {
	// The test binary stands in for profile-model when a test starts it as
	// an engine (run --engine sim --server-exe <test binary>).
	if os.Getenv("PROFILE_MODEL_TEST_MAIN") == "1" {
		main()
		return
	}
	code := m.Run()
	for _, d := range []string{goldenTraces.dir, diffFixtures.dir} {
		if d != "" {
			os.RemoveAll(d)
		}
	}
	os.Exit(code)
}

// TestGolden runs each command on a generated trace and compares what it
// prints with testdata/golden/<case>.stdout and .stderr (go test -update
// rewrites them). Temporary paths print as $TRACES and $OUT.
func TestGolden(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		variant string
		args    []string // $TRACE and $OUT are replaced
		wantErr bool
	}{
		{name: "inspect", variant: "atom", args: []string{"inspect", "$TRACE"}},
		{name: "inspect-json", variant: "atom", args: []string{"inspect", "--json", "$TRACE"}},
		{name: "layers", variant: "atom", args: []string{"layers", "$TRACE", "--out", "$OUT"}},
		{name: "layers-json", variant: "atom", args: []string{"layers", "$TRACE", "--out", "$OUT", "--json"}},
		{name: "layers-compat", variant: "atom", args: []string{"layers", "$TRACE", "--mode", "compat", "--csv", "$OUT/t.csv"}},
		{name: "layers-alternate", variant: "alternate", args: []string{"layers", "$TRACE", "--out", "$OUT"}},
		{name: "layers-two-streams", variant: "streams", args: []string{"layers", "$TRACE", "--out", "$OUT"}},
		{name: "layers-eager", variant: "eager", args: []string{"layers", "$TRACE", "--out", "$OUT"}},
		{name: "kernels", variant: "atom", args: []string{"kernels", "$TRACE", "--out", "$OUT/new/dir", "--top", "8"}},
		{name: "inspect-missing", variant: "atom", args: []string{"inspect", "$OUT/no-such.json.gz"}, wantErr: true},
		{name: "inspect-several-json", variant: "atom", args: []string{"inspect", "--json", "$TRACE", "$OUT/no-such.json.gz", "$TRACES/eager.json.gz"}, wantErr: true},
		{name: "inspect-ndjson", variant: "atom", args: []string{"inspect", "--ndjson", "$TRACE", "$TRACES/alternate.json.gz"}},
		{name: "layers-csv-stdout", variant: "atom", args: []string{"layers", "$TRACE", "--csv", "-"}},
		{name: "kernels-csv-stdout", variant: "atom", args: []string{"kernels", "$TRACE", "--csv", "-"}},
		{name: "layers-bad-mode", variant: "atom", args: []string{"layers", "$TRACE", "--mode", "fast"}, wantErr: true},
		{name: "layers-compat-no-anchor", variant: "atom", args: []string{"layers", "$TRACE", "--mode", "compat", "--anchor", "no_such_kernel", "--out", "$OUT"}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			traces, trace := goldenTrace(t, tc.variant)
			out := t.TempDir()
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.NewReplacer("$TRACES", traces, "$TRACE", trace, "$OUT", out).Replace(a)
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), args, &stdout, &stderr)
			if err != nil {
				stderr.WriteString("profile-model: " + err.Error() + "\n")
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v\nstderr:\n%s", err, tc.wantErr, stderr.String())
			}
			mask := strings.NewReplacer(traces, "$TRACES", out, "$OUT")
			for _, f := range []struct {
				ext string
				got string
			}{{".stdout", mask.Replace(stdout.String())}, {".stderr", mask.Replace(stderr.String())}} {
				path := filepath.Join("testdata", "golden", tc.name+f.ext)
				if *update {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, []byte(f.got), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./cmd/profile-model -run TestGolden -update to create it)", err)
				}
				if d := cmp.Diff(string(want), f.got); d != "" {
					t.Errorf("%s differs from the golden file (-want +got; go test -update rewrites it after you read this diff):\n%s", path, d)
				}
			}
		})
	}
}
