package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/profile-model/profile-model/profiling/bench"
	"github.com/profile-model/profile-model/profiling/engine"
)

// Numbers from flags are read with their range, so that a value too large
// for its type, or outside what the command can use, is named as out of
// range rather than wrapping into a wrong one or failing later with an
// error about something else.

// seenFlagSet, when set (by tests), is given every flag set a command
// parses, so that its help can be checked against the flags' defaults.
var seenFlagSet func(*flag.FlagSet)

// bounds is the closed range [lo, hi] a numeric flag takes.
type bounds struct{ lo, hi float64 }

// errOutOfRange says that name's value s is outside [lo, hi].
func errOutOfRange(name, s string, b bounds) error {
	if name != "" {
		s = name + " " + s
	}
	return fmt.Errorf("%s: out of range (want %s to %s)", s, fmtBound(b.lo), fmtBound(b.hi))
}

func fmtBound(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// parseIntIn reads s as an integer in b; name (the flag) leads the error.
func parseIntIn(name, s string, b bounds) (int, error) {
	s = strings.TrimSpace(s)
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, errOutOfRange(name, s, b)
	case err != nil:
		return 0, fmt.Errorf("%s %q: not an integer", name, s)
	case float64(n) < b.lo || float64(n) > b.hi:
		return 0, errOutOfRange(name, s, b)
	}
	return int(n), nil
}

// parseFloatIn reads s as a number in b.
func parseFloatIn(name, s string, b bounds) (float64, error) {
	s = strings.TrimSpace(s)
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, errOutOfRange(name, s, b)
	case err != nil || math.IsNaN(v):
		return 0, fmt.Errorf("%s %q: not a number", name, s)
	case v < b.lo || v > b.hi:
		return 0, errOutOfRange(name, s, b)
	}
	return v, nil
}

// parseFlags parses args into fs with the ranges of its numbers checked.
func parseFlags(fs *flag.FlagSet, args []string) error {
	rangedDurations(fs)
	if seenFlagSet != nil {
		seenFlagSet(fs)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	return checkRanges(fs)
}

// checkRanges checks the numeric flags of fs that were given against
// flagRanges: the flag package already calls a value too large for its
// type out of range, this does the same for one no command can use.
func checkRanges(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		b, ok := flagRanges[f.Name]
		if !ok || err != nil {
			return
		}
		var v float64
		switch x := f.Value.(flag.Getter).Get().(type) {
		case int:
			v = float64(x)
		case int64:
			v = float64(x)
		case uint64:
			v = float64(x)
		case float64:
			v = x
		case time.Duration:
			v = x.Seconds()
		default:
			return
		}
		if v < b.lo || v > b.hi || math.IsNaN(v) {
			err = usageError{fs.Name() + ": " + errOutOfRange("--"+f.Name, f.Value.String(), b).Error()}
		}
	})
	return err
}

// flagRanges are the bounds of the numeric flags, by name: a name means
// the same in every command that has it. Durations are checked as they
// are parsed (rangedDurations).
var flagRanges = map[string]bounds{
	// sweeps (bench, run)
	"isl": {1, bench.MaxTokens}, "osl": {1, bench.MaxTokens}, "random-range-ratio": {0, 1},
	"conc-start": {1, bench.MaxConcurrency}, "conc-end": {1, bench.MaxConcurrency}, "num-prompts-mul": {1, bench.MaxPromptsMul},
	"burstiness": {1e-6, 1e6}, "warmups": {0, bench.MaxWarmups}, "profile-steps": {0, 1 << 30},
	// engines (run, serve-sim); a sweep plan's fields have the same bounds
	"port": {0, 65535}, "server-port": {0, 65535}, "tp": {1, engine.MaxTP},
	"max-num-seqs": {0, engine.MaxNumSeqs}, "max-model-len": {0, engine.MaxModelLen}, "max-num-batched-tokens": {1, 1 << 24},
	"time-scale": {engine.MinTimeScale, engine.MaxTimeScale}, "profiler-buffer-mb": {-1, 1 << 20}, "crash-after-requests": {0, 1 << 30},
	"stream-error-rate": {0, 1}, "trace-python-per-step": {-1, 1 << 20}, "rank-skew": {0, 1000}, "profiler-overhead": {0, 100}, "overhead-threshold": {0, 1000},
	"reasoning-tokens": {0, 1 << 24}, "merge-frames": {0, 1 << 16}, "empty-token-every": {0, 1 << 30},
	// traces (synth, trim, kernels, layers, diff)
	"layers": {0, 4096}, "decode-steps": {1, 1 << 24}, "prefill-steps": {0, 1 << 20}, "bs": {1, 1 << 20},
	"target-mb": {0, 1 << 20}, "python-per-step": {-1, 1 << 20},
	"decode": {0, 1 << 24}, "top": {0, 1 << 30}, "rank": {0, 1 << 16},
	// fleet (matrix)
	"count": {1, 1000}, "max-per-matrix": {1, 256},
	// fleet (regress): a threshold must be a number (negative: off)
	"throughput-drop": {math.Inf(-1), math.Inf(1)}, "latency-rise": {math.Inf(-1), math.Inf(1)},
	"kernel-rise": {math.Inf(-1), math.Inf(1)}, "kernel-min-us": {0, math.Inf(1)},
}

// rangedDurations makes every duration flag of fs call a value too large
// for a duration (about 292 years) out of range, and a negative one too:
// the flag package calls both a parse error, or takes the negative.
func rangedDurations(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if _, done := f.Value.(durationValue); done {
			return
		}
		if g, ok := f.Value.(flag.Getter); ok {
			if _, ok := g.Get().(time.Duration); ok {
				f.Value = durationValue{f.Value}
			}
		}
	})
}

type durationValue struct{ flag.Value }

// String is the wrapped value's; the flag package also calls it on a zero
// durationValue (no Value) to tell whether the default is worth printing.
func (d durationValue) String() string {
	if d.Value == nil {
		return time.Duration(0).String()
	}
	return d.Value.String()
}

func (d durationValue) Get() any { return d.Value.(flag.Getter).Get() }

func (d durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	switch {
	case err != nil && durationOverflows(s):
		return errors.New("out of range (want 0s to 2562047h)")
	case err != nil:
		return errors.New("not a duration such as 30s, 250ms or 1h30m")
	case v < 0:
		return errors.New("out of range (want 0s to 2562047h)")
	}
	return d.Value.Set(s)
}

// durationOverflows tells whether s is a well-formed duration whose value
// is too large for time.Duration.
func durationOverflows(s string) bool {
	if _, err := time.ParseDuration(s); err == nil {
		return false
	}
	s = strings.TrimLeft(s, "+-")
	if s == "" {
		return false
	}
	for s != "" {
		i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if i <= 0 {
			return false
		}
		if _, err := strconv.ParseFloat(s[:i], 64); err != nil {
			return false
		}
		s = s[i:]
		j := strings.IndexFunc(s, func(r rune) bool { return r >= '0' && r <= '9' || r == '.' })
		if j < 0 {
			j = len(s)
		}
		switch s[:j] {
		case "ns", "us", "µs", "μs", "ms", "s", "m", "h":
		default:
			return false
		}
		s = s[j:]
	}
	return true
}
