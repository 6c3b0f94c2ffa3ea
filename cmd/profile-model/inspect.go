package main

import (
	"context"
	"errors"
	"io"
)

// runInspect is not written yet; its owner replaces this file.
func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
