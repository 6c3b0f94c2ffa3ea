package main

import (
	"context"
	"errors"
	"io"
)

// runServeSim is not written yet; its owner replaces this file.
func runServeSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
