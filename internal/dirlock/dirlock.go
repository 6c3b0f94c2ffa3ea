// Package dirlock makes one process at a time write a run or sweep
// directory: two resumes of one sweep once both ran, one failed and
// sweep.json was left inconsistent. The lock is a file, Name, in the
// directory, held with flock for as long as the process writes there (the
// kernel lets go of it when the process dies, however it dies), and names
// its holder so that the second process can say who.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Name is the lock file of a directory.
const Name = "lock"

// ErrHeld is the error of a directory another process writes.
var ErrHeld = errors.New("another process is writing it")

// Lock takes dir's lock for this process, or fails at once with ErrHeld
// naming the holder. what says what the process does ("run --resume").
// release lets go of it and removes the file.
func Lock(dir, what string) (release func(), err error) {
	path := filepath.Join(dir, Name)
	for range 10 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("locking %s: %w", dir, err)
		}
		held, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", dir, err)
		}
		if held {
			holder, _ := os.ReadFile(path)
			f.Close()
			who := strings.TrimSpace(string(holder))
			if who == "" {
				who = "a process that has not yet said who it is"
			}
			return nil, fmt.Errorf("%s: %w: %s; wait for it to end, or stop it (the lock goes with the process)", dir, ErrHeld, who)
		}
		// A holder that let go removed the file after we opened it: ours
		// is then not the directory's lock; take the new one.
		fi, err1 := f.Stat()
		cur, err2 := os.Stat(path)
		if err1 != nil || err2 != nil || !os.SameFile(fi, cur) {
			f.Close()
			continue
		}
		host, _ := os.Hostname()
		line := fmt.Sprintf("pid %d on %s since %s: profile-model %s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339), what)
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt([]byte(line), 0)
		}
		return func() {
			os.Remove(path)
			f.Close() // closing lets go of the flock
		}, nil
	}
	return nil, fmt.Errorf("locking %s: its lock file keeps changing", dir)
}
