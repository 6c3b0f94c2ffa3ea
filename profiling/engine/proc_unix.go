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

// Identity is what tells process pid from a later one given its pid: its
// command line (arguments joined by spaces) and its start time, "boot
// id:clock ticks since boot" from /proc; ok is false where /proc cannot
// say, or the process is gone or a zombie.
func Identity(pid int) (cmdline, start string, ok bool) {
	if pid <= 0 {
		return "", "", false
	}
	p := "/proc/" + strconv.Itoa(pid)
	cmd, err := os.ReadFile(p + "/cmdline")
	if err != nil || len(cmd) == 0 {
		return "", "", false
	}
	stat, err := os.ReadFile(p + "/stat")
	if err != nil {
		return "", "", false
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", "", false
	}
	// "pid (comm) state ppid ...": starttime is field 22, the 20th after comm.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return "", "", false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return "", "", false
	}
	cmdline = strings.TrimRight(strings.ReplaceAll(string(cmd), "\x00", " "), " ")
	return cmdline, strings.TrimSpace(string(boot)) + ":" + f[19], true
}

// leaderIs tells whether group pgid's leader is the process recorded:
// same command line and same start time. Unknown (nothing recorded, or
// /proc cannot say) is not a match.
func leaderIs(pgid int, cmdline, start string) bool {
	if cmdline == "" || start == "" {
		return false
	}
	c, s, ok := Identity(pgid)
	return ok && c == cmdline && s == start
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
