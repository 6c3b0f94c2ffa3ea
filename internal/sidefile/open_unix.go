//go:build unix

package sidefile

import (
	"os"
	"syscall"
)

// open opens path without blocking: a FIFO's open waits for a writer
// unless O_NONBLOCK is set (the caller then refuses it on its mode).
func open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
