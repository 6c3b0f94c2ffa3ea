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
// abandoned. When the engine's process group recorded there still runs,
// led by the very process run started (same command line and start time:
// a group id reused by another program is never touched), it says so and
// how to stop it, or, with cleanup, stops it (SIGTERM, then SIGKILL after
// defaultStopGrace); for a run marked abandoned before too. A group that
// run.json does not identify (recorded before it did, or without /proc)
// is only named, never signalled. It returns what it found, "" when dir holds no
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
	alive := GroupAlive(pgid)
	engineLeft := alive && leaderIs(pgid, info.Engine.LeaderCmdline, info.Engine.LeaderStart)
	// Recorded without its leader's identity: the group may be the
	// engine's or a later one's; cleanup cannot tell, so it stops nothing.
	unknown := alive && !engineLeft && (info.Engine.LeaderCmdline == "" || info.Engine.LeaderStart == "")
	var msg string
	switch {
	case info.Status == StatusAbandoned && (engineLeft || unknown):
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
	case unknown:
		return msg + fmt.Sprintf("; process group %d still runs, but run.json does not identify its engine (command line and start time), so --cleanup leaves it alone: check it with `ps -g %d` and stop it with `kill -- -%d` if it is the engine", pgid, pgid, pgid), nil
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
