//go:build unix

package tracing_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user + system) this process has used so far;
// ok is false where it cannot be read.
func processCPU() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
