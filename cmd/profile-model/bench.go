package main

import (
	"context"
	"errors"
	"io"
)

// runBench is not written yet; its owner replaces this file.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
