package main

import (
	"context"
	"errors"
	"io"
)

// runSynth is not written yet; its owner replaces this file.
func runSynth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
