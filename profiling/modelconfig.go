package profiling

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/profile-model/profile-model/internal/sidefile"
)

// simOwnTables says whether the simulated engine was given kernel tables or
// a layer count of its own: then its built-in model's config does not
// describe what it serves.
func simOwnTables(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		for _, f := range []string{"--kernels", "--layers", "-kernels", "-layers"} {
			if a == f || strings.HasPrefix(a, f+"=") {
				return true
			}
		}
		return false
	})
}

// hubConfig finds a model's config.json in the Hugging Face cache
// (HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub): the
// snapshot refs/main names, else any snapshot; "" when none.
func hubConfig(model string) string {
	org, name, ok := strings.Cut(model, "/")
	if !ok || strings.Contains(name, "/") {
		return ""
	}
	hub := os.Getenv("HF_HUB_CACHE")
	if hub == "" {
		if home := os.Getenv("HF_HOME"); home != "" {
			hub = filepath.Join(home, "hub")
		} else if h, err := os.UserHomeDir(); err == nil {
			hub = filepath.Join(h, ".cache", "huggingface", "hub")
		}
	}
	repo := filepath.Join(hub, "models--"+org+"--"+name)
	var snaps []string
	if snap, ok := sidefile.HubSnapshot(context.Background(), repo); ok {
		snaps = append(snaps, snap)
	}
	more, _ := filepath.Glob(filepath.Join(repo, "snapshots", "*"))
	for _, d := range append(snaps, more...) {
		p := filepath.Join(d, "config.json")
		if sidefile.Stat(p, "the model config", sidefile.Small) == nil {
			return p
		}
	}
	return ""
}
