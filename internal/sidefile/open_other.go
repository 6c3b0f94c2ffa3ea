//go:build !unix

package sidefile

import (
	"fmt"
	"os"
)

// open refuses what is not a regular file before opening it.
func open(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", path, ErrNotRegular)
	}
	return os.Open(path)
}
