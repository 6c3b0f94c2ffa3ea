//go:build unix

package bench

import (
	"syscall"
	"time"
)

// clientCPU is the CPU time (user + system) the client's process has used
// so far, -1 where it cannot be read.
func clientCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
