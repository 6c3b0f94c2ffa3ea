//go:build unix && !linux

package engine

import "syscall"

// groupAttr starts the engine as the leader of a new process group, so that
// it and every process it spawns (workers, compile servers) can be signalled
// together. There is no parent-death signal here: an engine outlives a
// SIGKILL of this process, and the next run finds it (Abandoned).
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
