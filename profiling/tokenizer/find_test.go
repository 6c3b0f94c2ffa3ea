package tokenizer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFind(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	tok := []byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`)
	hub := filepath.Join(root, "hub")
	repo := filepath.Join(hub, "models--Org--Model-7B")
	// Two snapshots: refs/main names the older one.
	old := filepath.Join(repo, "snapshots", "aaa111", "tokenizer.json")
	newer := filepath.Join(repo, "snapshots", "bbb222", "tokenizer.json")
	writeFile(t, old, tok)
	writeFile(t, newer, tok)
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, "refs", "main"), []byte("aaa111\n"))
	// A second repo without refs/main: the newest snapshot wins.
	repo2 := filepath.Join(hub, "models--gpt2")
	old2 := filepath.Join(repo2, "snapshots", "r1", "tokenizer.json")
	new2 := filepath.Join(repo2, "snapshots", "r2", "tokenizer.json")
	writeFile(t, old2, tok)
	writeFile(t, new2, tok)
	if err := os.Chtimes(old2, past, past); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(root, "local-model")
	writeFile(t, filepath.Join(local, "tokenizer.json"), tok)
	explicitFile := filepath.Join(root, "other.json")
	writeFile(t, explicitFile, tok)

	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	for _, c := range []struct {
		name, model, explicit string
		env                   map[string]string
		want                  string // "" means ErrNotFound
	}{
		{"explicit file", "Org/Model-7B", explicitFile, nil, explicitFile},
		{"explicit dir", "", local, nil, filepath.Join(local, "tokenizer.json")},
		{"local dir", local, "", nil, filepath.Join(local, "tokenizer.json")},
		{"HF_HUB_CACHE refs/main", "Org/Model-7B", "", map[string]string{"HF_HUB_CACHE": hub, "HF_HOME": "/nonexistent"}, old},
		{"HF_HOME", "Org/Model-7B", "", map[string]string{"HF_HOME": root}, old},
		{"XDG_CACHE_HOME", "gpt2", "", map[string]string{"XDG_CACHE_HOME": filepath.Join(root, "xdg")}, ""},
		{"newest snapshot", "gpt2", "", map[string]string{"HF_HUB_CACHE": hub}, new2},
		{"HOME", "Org/Model-7B", "", map[string]string{"HOME": root}, ""},
		{"unknown model", "Org/Other", "", map[string]string{"HF_HUB_CACHE": hub}, ""},
		{"no model", "", "", map[string]string{"HF_HUB_CACHE": hub}, ""},
	} {
		got, err := findIn(c.model, c.explicit, env(c.env))
		if c.want == "" {
			if !errors.Is(err, errNotFound) {
				t.Errorf("%s: findIn = %q, %v; want ErrNotFound", c.name, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: findIn = %q, %v; want %q", c.name, got, err, c.want)
		}
	}

	// HOME's default cache location.
	writeFile(t, filepath.Join(root, "home", ".cache", "huggingface", "hub", "models--x--y", "snapshots", "r", "tokenizer.json"), tok)
	if got, err := findIn("x/y", "", env(map[string]string{"HOME": filepath.Join(root, "home")})); err != nil || !strings.HasSuffix(got, "models--x--y/snapshots/r/tokenizer.json") {
		t.Errorf("HOME cache: %q, %v", got, err)
	}

	// A missing explicit path is an error of its own, not a fallback.
	_, err := findIn("Org/Model-7B", filepath.Join(root, "missing"), env(map[string]string{"HF_HUB_CACHE": hub}))
	if err == nil || errors.Is(err, errNotFound) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing explicit: %v, want a non-ErrNotFound error naming the path", err)
	}
	// The not-found error says where it looked.
	_, err = findIn("Org/Other", "", env(map[string]string{"HF_HUB_CACHE": hub}))
	if err == nil || !strings.Contains(err.Error(), filepath.Join(hub, "models--Org--Other", "snapshots")) {
		t.Errorf("not found: %v, want the looked-in path", err)
	}
}
