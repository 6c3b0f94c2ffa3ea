//go:build unix

package atomicfile

import (
	"errors"
	"os"
	"syscall"
)

// processAlive tells whether a process with this id exists (one of another
// user counts: signal 0 is refused, not unanswered).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ownFile tells a file of the current user.
func ownFile(info os.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
