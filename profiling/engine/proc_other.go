//go:build !unix

package engine

import (
	"errors"
	"syscall"
)

var errNoGroups = errors.New("starting an engine process needs Unix process groups; attach to a running server with engine none")

func checkGroups() error { return errNoGroups }

func groupAttr() *syscall.SysProcAttr { return nil }

func signalGroup(pgid int, sig syscall.Signal) error { return errNoGroups }

func groupMembers(pgid int) []int { return nil }

// GroupAlive tells whether a process of group pgid still runs: never here.
func GroupAlive(pgid int) bool { return false }

func processAlive(pid int, name string) bool { return true }

// Identity cannot tell a process here.
func Identity(pid int) (cmdline, start string, ok bool) { return "", "", false }

func leaderIs(pgid int, cmdline, start string) bool { return false }
