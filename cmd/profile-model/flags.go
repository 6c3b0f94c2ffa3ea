package main

import (
	"fmt"
	"strings"
	"time"
)

// windowFlag is a time span given as a Go duration ("30s", "1.5m",
// "250ms") or a plain number of seconds ("30"): the GPU-event windows of
// synth and serve-sim take the same kind of value.
type windowFlag struct{ d *time.Duration }

func (f windowFlag) String() string {
	if f.d == nil {
		return "0s"
	}
	return f.d.String()
}

func (f windowFlag) Set(s string) error {
	d, err := parseWindow(s)
	if err != nil {
		return err
	}
	*f.d = d
	return nil
}

func parseWindow(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return 0, fmt.Errorf("%q is negative", s)
		}
		return d, nil
	}
	if durationOverflows(s) {
		return 0, fmt.Errorf("%q: out of range (want 0s to 2562047h)", s)
	}
	sec, err := parseFloatIn("", s, bounds{0, 1e9})
	switch {
	case err != nil && strings.Contains(err.Error(), "out of range"):
		return 0, fmt.Errorf("%q: out of range (want 0 to 1000000000 seconds)", s)
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration (30s, 250ms, 1.5m) or a number of seconds", s)
	}
	return time.Duration(sec * float64(time.Second)), nil
}
