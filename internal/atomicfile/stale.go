package atomicfile

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A temporary file is named .BASE.tmp-PID-RANDOM: the process that writes
// it is in its name, so that a later run can tell a file left by a killed
// writer from one being written now.
func tempPrefix(base string, pid int) string {
	return "." + base + ".tmp-" + strconv.Itoa(pid) + "-"
}

// tempPID returns the writer's process id from a temporary file's name,
// false for a name this package does not make.
func tempPID(name string) (int, bool) {
	if !strings.HasPrefix(name, ".") {
		return 0, false
	}
	k := strings.LastIndex(name, ".tmp-")
	if k < 0 {
		return 0, false
	}
	pidText, random, ok := strings.Cut(name[k+len(".tmp-"):], "-")
	if !ok || random == "" || strings.Trim(random, "0123456789") != "" {
		return 0, false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// removeStale removes the temporary files in dir that a writer of this
// package left when it was killed: its process is gone, and the file is
// ours (same user). Files of live writers, of other users, and of other
// programs are left alone; errors are ignored (it is tidying only).
func removeStale(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, ok := tempPID(e.Name())
		if !ok || !e.Type().IsRegular() || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if info, err := e.Info(); err == nil && ownFile(info) {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
