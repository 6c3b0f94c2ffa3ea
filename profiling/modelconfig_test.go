package profiling

import (
	"os"
	"path/filepath"
	"testing"
)

// TestHubConfig: a model named org/name is found in the Hugging Face
// cache layout, the snapshot refs/main names first; a model not there, or a
// name that is not org/name, is not.
func TestHubConfig(t *testing.T) {
	hub := t.TempDir()
	t.Setenv("HF_HUB_CACHE", hub)
	repo := filepath.Join(hub, "models--Org--Model-7B")
	for _, snap := range []string{"aaa", "bbb"} {
		if err := os.MkdirAll(filepath.Join(repo, "snapshots", snap), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, "snapshots", snap, "config.json"), []byte(`{"model_type":"`+snap+`"}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(repo, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte("bbb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(repo, "snapshots", "bbb", "config.json")
	if got := findModelConfig("", "Org/Model-7B", t.TempDir()); got != want {
		t.Errorf("found %q, want %q (the refs/main snapshot)", got, want)
	}
	if got := findModelConfig("", "Org/Other", t.TempDir()); got != "" {
		t.Errorf("a model not in the cache: found %q", got)
	}
	if got := findModelConfig("", "Model-7B", t.TempDir()); got != "" {
		t.Errorf("a name without an organisation: found %q", got)
	}
	if got := findModelConfig("given.json", "Org/Model-7B", ""); got != "given.json" {
		t.Errorf("--config given: %q", got)
	}
}

// TestHubConfigStaysInRepo: a refs/main holding "../../.." names no
// snapshot, so a config.json outside the model's repository is never used
// (it once was).
func TestHubConfigStaysInRepo(t *testing.T) {
	root := t.TempDir()
	hub := filepath.Join(root, "hub")
	t.Setenv("HF_HUB_CACHE", hub)
	repo := filepath.Join(hub, "models--Org--Model-7B")
	if err := os.MkdirAll(filepath.Join(repo, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte("../../.."), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(repo, "snapshots", "../../..", "config.json")
	if err := os.WriteFile(outside, []byte(`{"model_type":"elsewhere"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := findModelConfig("", "Org/Model-7B", t.TempDir()); got != "" {
		t.Errorf("refs/main ../../..: found %q, outside the repository", got)
	}
}

func TestSimOwnTables(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--block-size", "16"}, false},
		{[]string{"--layers", "4"}, true},
		{[]string{"--kernels=a.csv"}, true},
	} {
		if got := simOwnTables(c.args); got != c.want {
			t.Errorf("%q: %v, want %v", c.args, got, c.want)
		}
	}
}
