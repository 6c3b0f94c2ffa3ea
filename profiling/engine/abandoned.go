package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/results"
)

// StatusAbandoned marks in run.json a run whose profile-model process was
// killed before it could say how the run ended.
const StatusAbandoned = "abandoned"

// Abandoned looks at the run directory dir: when its run.json says the
// run is still running but the profile-model process that runs it (on
// this host) is gone, the run was killed, and run.json is marked
// abandoned. When the engine's process group recorded there still runs
// (a process of it names the model: a group id reused by another program
// is not touched), it says so and how to stop it, or, with cleanup, stops
// it (SIGTERM, then SIGKILL after defaultStopGrace); for a run marked
// abandoned before too. It returns what it found, "" when dir holds no
// such run.
func Abandoned(ctx context.Context, dir string, cleanup bool) (string, error) {
	path := results.Run(dir).RunInfo()
	info, err := results.LoadRunInfo(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	host, _ := os.Hostname()
	if info.PID == 0 || info.Host != host {
		return "", nil
	}
	pgid := info.Engine.PGID
	engineLeft := GroupAlive(pgid) && groupNames(pgid, info.Engine.Model)
	var msg string
	switch {
	case info.Status == StatusAbandoned && engineLeft:
		msg = fmt.Sprintf("%s: run abandoned earlier", dir)
	case info.Status != "running" || processAlive(info.PID, "profile-model"):
		return "", nil
	default:
		info.Status = StatusAbandoned
		info.Error = fmt.Sprintf("the profile-model process (pid %d) ended before the run did: it was killed, or its machine stopped", info.PID)
		if err := atomicfile.WriteFunc(path, info.Write); err != nil {
			return "", err
		}
		msg = fmt.Sprintf("%s: run abandoned (its profile-model process %d is gone); run.json now says so", dir, info.PID)
	}
	switch {
	case !engineLeft:
		return msg, nil
	case !cleanup:
		return msg + fmt.Sprintf("; its %s engine (process group %d) still runs: stop it with `kill -- -%d`, or pass --cleanup", info.Engine.Kind, pgid, pgid), nil
	}
	if err := stopGroup(ctx, pgid, defaultStopGrace); err != nil {
		return msg, fmt.Errorf("%s: stopping its engine (process group %d): %w", dir, pgid, err)
	}
	return msg + fmt.Sprintf("; its %s engine (process group %d) was stopped", info.Engine.Kind, pgid), nil
}

// stopGroup sends SIGTERM to group pgid and SIGKILL when it still runs
// after grace.
func stopGroup(ctx context.Context, pgid int, grace time.Duration) error {
	if err := signalGroup(pgid, syscall.SIGTERM); err != nil {
		return err
	}
	deadline := time.Now().Add(grace)
	for GroupAlive(pgid) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return signalGroup(pgid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}
