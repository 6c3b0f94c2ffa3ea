//go:build unix

package jsonscan

import (
	"os"
	"syscall"
)

// unblockFIFO ends an open of the FIFO at path that waits for a writer, by
// opening it for writing (without blocking) and closing it at once.
func unblockFIFO(path string) {
	if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		w.Close()
	}
}
