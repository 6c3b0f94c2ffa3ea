//go:build linux

package engine

import "syscall"

// groupAttr starts the engine as the leader of a new process group, so that
// it and every process it spawns (workers, compile servers) can be signalled
// together, and asks the kernel to send it SIGTERM when this process dies,
// even by SIGKILL: the engine then stops its own workers as on Ctrl-C.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
