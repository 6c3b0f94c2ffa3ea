//go:build unix

package engine

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// checkGroups says whether engine processes can be started here.
func checkGroups() error { return nil }

// signalGroup sends sig to every process of group pgid; a group that is
// already gone is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// GroupAlive tells whether a process of group pgid still runs.
func GroupAlive(pgid int) bool { return pgid > 0 && len(groupMembers(pgid)) > 0 }

// processAlive tells whether pid runs (not a zombie) and, where /proc
// says, runs a command whose line holds name: a pid reused by another
// program is not the process that was recorded.
func processAlive(pid int, name string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if _, state, ok := procGroup(pid); ok && (state == 'Z' || state == 'X') {
		return false
	}
	if cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil {
		return strings.Contains(string(cmd), name)
	}
	return true
}

// groupNames tells whether a running process of group pgid has name in
// its command line (true where /proc cannot say).
func groupNames(pgid int, name string) bool {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		return true
	}
	for _, pid := range groupMembers(pgid) {
		if cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && strings.Contains(string(cmd), name) {
			return true
		}
	}
	return false
}

// groupMembers lists the processes of group pgid that still run. Zombies
// (exited, not yet reaped by their parent) hold no memory and do not count.
// Where /proc is missing it can only say whether the group exists: it
// returns [pgid] then.
func groupMembers(pgid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		if syscall.Kill(-pgid, 0) == nil {
			return []int{pgid}
		}
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, state, ok := procGroup(pid); ok && g == pgid && state != 'Z' && state != 'X' {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procGroup reads the process group and state of pid from /proc/PID/stat.
func procGroup(pid int) (pgid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	g, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, 0, false
	}
	return g, f[0][0], true
}
