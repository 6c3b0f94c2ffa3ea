package telemetry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// AMDSMIArgs are amd-smi's arguments for one reading of every metric the
// sampler uses, of the GPUs devs (nil: all).
func AMDSMIArgs(devs []int) []string {
	args := []string{"metric", "--power", "--clock", "--temperature", "--usage", "--mem-usage", "--throttle", "--json"}
	if len(devs) > 0 {
		args = append(args, "--gpu")
		for _, d := range devs {
			args = append(args, strconv.Itoa(d))
		}
	}
	return args
}

// ROCmSMIArgs are rocm-smi's arguments for one reading.
var ROCmSMIArgs = []string{"--showpower", "--showclocks", "--showtemp", "--showuse", "--showmeminfo", "vram", "--json"}

// jsonStart skips what some releases print before their JSON (warnings).
func jsonStart(b []byte) ([]byte, error) {
	i := bytes.IndexAny(b, "[{")
	if i < 0 {
		return nil, fmt.Errorf("no JSON in the output (%s)", snippet(b))
	}
	return b[i:], nil
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	if s == "" {
		return "empty"
	}
	return strconv.Quote(s)
}

// ParseAMDSMI reads `amd-smi metric --json`: a list with one object per
// GPU ({"gpu": N, "power": {...}, "clock": {...}, ...}), or the same list
// under "gpu_data" as newer releases write it. Each figure is
// {"value": V, "unit": U}, a bare number, or "N/A". Power is
// power.socket_power (W); the graphics clock the mean of clock.gfx_N.clk
// (MHz, one per XCD), the memory clock clock.mem_0.clk; the temperature
// temperature.hotspot, else edge (C); utilisation usage.gfx_activity (%);
// memory mem_usage.used_vram and total_vram (amd-smi's "MB" are MiB: bytes
// // 1024²). The limits are throttle.*_violation_status "ACTIVE" (MI300 and
// later), else power.throttle_status "THROTTLED".
func ParseAMDSMI(b []byte, at time.Time) ([]Sample, error) {
	b, err := jsonStart(b)
	if err != nil {
		return nil, fmt.Errorf("amd-smi: %w", err)
	}
	var list []map[string]any
	if b[0] == '{' {
		var doc struct {
			GPUData []map[string]any `json:"gpu_data"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("amd-smi: %w", err)
		}
		if doc.GPUData == nil {
			return nil, errors.New(`amd-smi: a JSON object without "gpu_data"`)
		}
		list = doc.GPUData
	} else if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("amd-smi: %w", err)
	}
	var out []Sample
	for i, g := range list {
		idx, ok := g["gpu"].(float64)
		if !ok || idx < 0 || idx != math.Trunc(idx) || idx > 1<<16 {
			return nil, fmt.Errorf("amd-smi: entry %d has no \"gpu\" index", i)
		}
		s := newSample(int(idx), at)
		power := obj(g["power"])
		s.PowerW = leaf(power["socket_power"])
		clock := obj(g["clock"])
		var gfx []float64
		for k, v := range clock {
			if strings.HasPrefix(k, "gfx_") {
				if c := leaf(obj(v)["clk"]); !math.IsNaN(c) {
					gfx = append(gfx, c)
				}
			}
		}
		if len(gfx) > 0 {
			s.SMClockMHz = mean(gfx)
		}
		s.MemClkMHz = leaf(obj(clock["mem_0"])["clk"])
		temp := obj(g["temperature"])
		if s.TempC = leaf(temp["hotspot"]); math.IsNaN(s.TempC) {
			s.TempC = leaf(temp["edge"])
		}
		s.UtilPct = leaf(obj(g["usage"])["gfx_activity"])
		mem := obj(g["mem_usage"])
		s.MemUsedMiB, s.MemTotMiB = leaf(mem["used_vram"]), leaf(mem["total_vram"])
		for _, l := range []struct{ key, name string }{
			{"ppt_violation_status", LimitPower},
			{"socket_thermal_violation_status", LimitThermal},
			{"vr_thermal_violation_status", LimitThermal},
			{"hbm_thermal_violation_status", LimitThermal},
			{"prochot_violation_status", LimitProchot},
		} {
			if v, _ := obj(g["throttle"])[l.key].(string); strings.EqualFold(v, "ACTIVE") && !contains(s.Limits, l.name) {
				s.Limits = append(s.Limits, l.name)
			}
		}
		if v, _ := power["throttle_status"].(string); len(s.Limits) == 0 && strings.EqualFold(v, "THROTTLED") {
			s.Limits = []string{LimitUnnamed}
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, errors.New("amd-smi lists no GPU")
	}
	slices.SortFunc(out, func(a, b Sample) int { return a.GPU - b.GPU })
	return out, nil
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// leaf reads an amd-smi figure: {"value": V, ...}, a number, or a string
// holding one; NaN otherwise ("N/A").
func leaf(v any) float64 {
	if m, ok := v.(map[string]any); ok {
		v = m["value"]
	}
	switch v := v.(type) {
	case float64:
		if v >= 0 && v < 1e12 {
			return v
		}
	case string:
		if f, err := number(v); err == nil {
			return f
		}
	}
	return math.NaN()
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

var (
	rocmCard  = regexp.MustCompile(`^card(\d+)$`)
	rocmClock = regexp.MustCompile(`\((\d+(?:\.\d+)?)\s*Mhz\)`)
)

// ParseROCmSMI reads `rocm-smi --showpower --showclocks --showtemp
// --showuse --showmeminfo vram --json`: {"cardN": {...}} with every value
// a string. Power is "Current Socket Graphics Package Power (W)" (MI300)
// or "Average Graphics Package Power (W)"; clocks "sclk clock speed:" and
// "mclk clock speed:" as "(1900Mhz)"; the temperature "Temperature (Sensor
// junction) (C)", else edge; "GPU use (%)"; "VRAM Total Used Memory (B)"
// and "VRAM Total Memory (B)". rocm-smi names no clock limit.
func ParseROCmSMI(b []byte, at time.Time) ([]Sample, error) {
	b, err := jsonStart(b)
	if err != nil {
		return nil, fmt.Errorf("rocm-smi: %w", err)
	}
	var doc map[string]map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("rocm-smi: %w", err)
	}
	var out []Sample
	for key, f := range doc {
		m := rocmCard.FindStringSubmatch(key)
		if m == nil {
			continue
		}
		idx, err := strconv.Atoi(m[1])
		if err != nil || idx > 1<<16 {
			return nil, fmt.Errorf("rocm-smi %s: card number", key)
		}
		s := newSample(idx, at)
		if s.PowerW = leaf(f["Current Socket Graphics Package Power (W)"]); math.IsNaN(s.PowerW) {
			s.PowerW = leaf(f["Average Graphics Package Power (W)"])
		}
		s.SMClockMHz, s.MemClkMHz = rocmMHz(f["sclk clock speed:"]), rocmMHz(f["mclk clock speed:"])
		if s.TempC = leaf(f["Temperature (Sensor junction) (C)"]); math.IsNaN(s.TempC) {
			s.TempC = leaf(f["Temperature (Sensor edge) (C)"])
		}
		s.UtilPct = leaf(f["GPU use (%)"])
		if v := leaf(f["VRAM Total Used Memory (B)"]); !math.IsNaN(v) {
			s.MemUsedMiB = v / (1 << 20)
		}
		if v := leaf(f["VRAM Total Memory (B)"]); !math.IsNaN(v) {
			s.MemTotMiB = v / (1 << 20)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, errors.New(`rocm-smi lists no GPU (no "cardN" entry)`)
	}
	slices.SortFunc(out, func(a, b Sample) int { return a.GPU - b.GPU })
	return out, nil
}

func rocmMHz(v any) float64 {
	s, _ := v.(string)
	if m := rocmClock.FindStringSubmatch(s); m != nil {
		f, _ := strconv.ParseFloat(m[1], 64)
		return f
	}
	return math.NaN()
}
