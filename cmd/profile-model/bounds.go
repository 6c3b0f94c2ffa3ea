package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/profile-model/profile-model/profiling/bench"
)

// addBounds adds the flags that bound how long the client waits, so that
// no default can hang: --stall-timeout and --level-timeout.
func (f *sweepFlags) addBounds(fs *flag.FlagSet) {
	f.stall = fs.Duration("stall-timeout", bench.DefaultStallTimeout, "fail a request (kind stall) when no byte comes from the server for this long, waiting for the response or the next event; probes too; 0: none")
	f.levelTimeout = &levelTimeoutFlag{}
	fs.Var(f.levelTimeout, "level-timeout", "deadline of each level's requests, warmups included (not the trace export), and of the probes before the first level; auto: 5m + per wave of concurrency requests 30s + 250ms per output token (+ the sending time at --request-rate); 0: none (default auto)")
}

// stallTimeout maps --stall-timeout (0: none) to the sweep's (< 0: none).
func (f *sweepFlags) stallTimeout() time.Duration {
	if *f.stall <= 0 {
		return -1
	}
	return *f.stall
}

// levelTimeoutFlag is --level-timeout: auto (derived from each level's
// size), a duration, or 0 for none. d is the sweep's value: 0 auto, < 0
// none.
type levelTimeoutFlag struct{ d time.Duration }

func (f *levelTimeoutFlag) String() string {
	switch {
	case f == nil || f.d == 0:
		return "auto"
	case f.d < 0:
		return "0"
	}
	return f.d.String()
}

func (f *levelTimeoutFlag) Set(s string) error {
	if s == "auto" {
		f.d = 0
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("want auto, 0 (none) or a duration such as 20m")
	}
	if d == 0 {
		d = -1
	}
	f.d = d
	return nil
}
