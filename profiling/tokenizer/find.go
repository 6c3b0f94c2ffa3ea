package tokenizer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/profile-model/profile-model/internal/sidefile"
)

// errNotFound says no tokenizer.json was found for a model; the bench then
// calibrates prompt lengths from the server instead.
var errNotFound = errors.New("tokenizer.json not found")

// Find locates the tokenizer.json for model, reading the environment.
// See findIn.
func Find(model, explicit string) (string, error) {
	return findIn(model, explicit, os.Getenv)
}

// findIn locates the tokenizer.json for model. An explicit file, or directory
// holding tokenizer.json, wins and is an error if missing. Otherwise model is
// tried as a local directory (engines accept a path as the model), then as a
// Hugging Face hub id in the local cache: $HF_HUB_CACHE, else $HF_HOME/hub,
// else $XDG_CACHE_HOME/huggingface/hub, else $HOME/.cache/huggingface/hub,
// under models--{org}--{name}/snapshots/<rev>/, preferring the revision in
// refs/main, else the newest snapshot. When nothing is found the error wraps
// errNotFound and says where it looked.
func findIn(model, explicit string, getenv func(string) string) (string, error) {
	if explicit != "" {
		p, ok := tokenizerFile(explicit)
		if !ok {
			return "", fmt.Errorf("tokenizer: %s is neither a tokenizer.json file nor a directory holding one", explicit)
		}
		return p, nil
	}
	if model == "" {
		return "", fmt.Errorf("%w: no model named", errNotFound)
	}
	var looked []string
	if fi, err := os.Stat(model); err == nil && fi.IsDir() {
		if p, ok := tokenizerFile(model); ok {
			return p, nil
		}
		looked = append(looked, model)
	}
	cache := hubCache(getenv)
	if cache == "" {
		return "", fmt.Errorf("%w for model %q (looked in %s; no Hugging Face cache directory: HOME is unset)", errNotFound, model, strings.Join(append(looked, "-"), ", "))
	}
	repo := filepath.Join(cache, "models--"+strings.ReplaceAll(strings.Trim(model, "/"), "/", "--"))
	looked = append(looked, filepath.Join(repo, "snapshots"))
	if p, ok := snapshotFile(repo); ok {
		return p, nil
	}
	return "", fmt.Errorf("%w for model %q (looked in %s)", errNotFound, model, strings.Join(looked, ", "))
}

func hubCache(getenv func(string) string) string {
	if d := getenv("HF_HUB_CACHE"); d != "" {
		return d
	}
	if d := getenv("HF_HOME"); d != "" {
		return filepath.Join(d, "hub")
	}
	if d := getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "huggingface", "hub")
	}
	if d := getenv("HOME"); d != "" {
		return filepath.Join(d, ".cache", "huggingface", "hub")
	}
	return ""
}

// snapshotFile finds tokenizer.json in the snapshot named by refs/main, else
// in the snapshot whose tokenizer.json is newest.
func snapshotFile(repo string) (string, bool) {
	snaps := filepath.Join(repo, "snapshots")
	if snap, ok := sidefile.HubSnapshot(context.Background(), repo); ok {
		if p, ok := tokenizerFile(snap); ok {
			return p, true
		}
	}
	entries, err := os.ReadDir(snaps)
	if err != nil {
		return "", false
	}
	best, bestTime := "", int64(0)
	for _, e := range entries {
		p := filepath.Join(snaps, e.Name(), "tokenizer.json")
		fi, err := os.Stat(p) // follows the cache's symlinks into blobs
		if err != nil || fi.IsDir() {
			continue
		}
		if t := fi.ModTime().UnixNano(); best == "" || t > bestTime {
			best, bestTime = p, t
		}
	}
	return best, best != ""
}

// tokenizerFile accepts a tokenizer.json file or a directory holding one.
func tokenizerFile(p string) (string, bool) {
	fi, err := os.Stat(p)
	if err != nil {
		return "", false
	}
	if !fi.IsDir() {
		return p, true
	}
	f := filepath.Join(p, "tokenizer.json")
	if fi, err := os.Stat(f); err == nil && !fi.IsDir() {
		return f, true
	}
	return "", false
}

// FindLocal loads the served model's own tokenizer when one is found
// locally (a model directory or the Hugging Face cache), returning it and
// its path. Not found is not an error: it returns a nil Counter and a note
// saying where it looked, and the caller calibrates instead.
func FindLocal(model string) (tok Counter, path, note string, err error) {
	path, err = Find(model, "")
	if errors.Is(err, errNotFound) {
		return nil, "", err.Error(), nil
	}
	if err != nil {
		return nil, "", "", err
	}
	t, err := Load(path)
	if err != nil {
		return nil, "", "", err
	}
	return t, path, "", nil
}
