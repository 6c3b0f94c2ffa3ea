package sidefile

import (
	"context"
	"path/filepath"
	"strings"
)

// HubSnapshot is the snapshot directory of a Hugging Face cache repository
// (models--ORG--NAME) that its refs/main names, false when refs/main is
// absent, unreadable or names anything but one directory of snapshots/
// (a refs/main holding "../../.." must not lead outside the repository).
func HubSnapshot(ctx context.Context, repo string) (string, bool) {
	ref, err := Read(ctx, filepath.Join(repo, "refs", "main"), "the Hugging Face cache's refs/main", 4096)
	if err != nil {
		return "", false
	}
	rev := strings.TrimSpace(string(ref))
	if rev == "" || rev == "." || rev == ".." || strings.ContainsAny(rev, "/\\\x00") || filepath.Base(rev) != rev {
		return "", false
	}
	return filepath.Join(repo, "snapshots", rev), true
}
