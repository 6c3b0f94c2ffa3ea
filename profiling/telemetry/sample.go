package telemetry

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Sample is one reading of one GPU. A figure the tool did not give
// ("N/A", "[Not Supported]") is NaN.
type Sample struct {
	GPU        int
	At         time.Time // when it was read (the tool's clock where it gives one)
	PowerW     float64
	SMClockMHz float64
	MemClkMHz  float64
	TempC      float64
	UtilPct    float64
	MemUsedMiB float64
	MemTotMiB  float64
	// Limits are the limits holding the clocks at this reading ("power
	// cap", "thermal", ...); empty when none.
	Limits []string
}

// newSample is a sample with every figure unknown.
func newSample(gpu int, at time.Time) Sample {
	n := math.NaN()
	return Sample{GPU: gpu, At: at, PowerW: n, SMClockMHz: n, MemClkMHz: n, TempC: n, UtilPct: n, MemUsedMiB: n, MemTotMiB: n}
}

// Limit names, as the report prints them.
const (
	LimitPower      = "power cap"
	LimitPowerBrake = "power brake"
	LimitThermal    = "thermal"
	LimitHWSlowdown = "hardware slowdown"
	LimitAppClocks  = "application clocks setting"
	LimitProchot    = "PROCHOT"
	// LimitUnnamed: the tool says the clocks are held but not by what
	// (amd-smi's throttle_status on GPUs without violation counters).
	LimitUnnamed = "throttled (limit not named by the tool)"
)

// nvidiaReasons are the bits of nvidia-smi's clocks_event_reasons.active
// (clocks_throttle_reasons.active before driver R535) that hold the clocks,
// from NVML's nvmlClocksEventReasons / nvmlClocksThrottleReasons defines.
// GPU idle (0x1), sync boost (0x10) and the display clock setting (0x100)
// are left out: they say nothing about a serving load's limit.
var nvidiaReasons = []struct {
	bit  uint64
	name string
}{
	{0x4, LimitPower},       // SwPowerCap
	{0x80, LimitPowerBrake}, // HwPowerBrakeSlowdown
	{0x20, LimitThermal},    // SwThermalSlowdown
	{0x40, LimitThermal},    // HwThermalSlowdown
	{0x8, LimitHWSlowdown},  // HwSlowdown
	{0x2, LimitAppClocks},   // ApplicationsClocksSetting
}

func nvidiaLimits(mask uint64) []string {
	var out []string
	for _, r := range nvidiaReasons {
		if mask&r.bit != 0 && !contains(out, r.name) {
			out = append(out, r.name)
		}
	}
	return out
}

func contains(v []string, s string) bool {
	for _, x := range v {
		if x == s {
			return true
		}
	}
	return false
}

// unavailable reports whether a tool's cell means "no value".
func unavailable(s string) bool {
	switch strings.Trim(strings.TrimSpace(s), "[]") {
	case "", "N/A", "Not Supported", "Unknown Error", "Requested functionality has been deprecated", "Insufficient Permissions", "GPU is lost":
		return true
	}
	return false
}

// number reads a figure: NaN when unavailable, an error when garbage.
// Units the tool appends ("W", "MHz", "%", "MiB") are dropped.
func number(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if unavailable(s) {
		return math.NaN(), nil
	}
	f := strings.Fields(s)
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || v < 0 || v > 1e15 {
		return 0, fmt.Errorf("%q is not a reading", s)
	}
	return v, nil
}
