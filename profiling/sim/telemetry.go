package sim

import (
	"encoding/json"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/profile-model/profile-model/tracing"
)

// The simulated GPU's power model, one MI355X-class GPU per TP rank: idle
// and full power, the top graphics clock, the memory clock, the memory the
// weights and runtime hold and the capacity. A step draws
// idle + (full − idle) × activity, its activity set by its kernel mix and
// its batch: a prefill's GEMMs keep the compute units busy (0.95), a decode
// step's attention and GEMVs wait on memory (0.35) and rise with the batch
// toward a compute-bound GEMM (+0.5 at 128 sequences); a mixed step lies
// between. Host gaps between steps draw idle power.
const (
	simIdleW       = 180.0
	simFullW       = 1400.0
	simMaxClockMHz = 2400.0
	simMemClockMHz = 2000.0
	simWeightsMiB  = 150 * 1024.0
	simVRAMMiB     = 294896.0 // 288 GB as amd-smi reports it (MiB)
	simKVBlockMiB  = 1.0      // a 16-token block of every layer's K and V
)

// stepPower is the power a step of kind and batch bs draws, uncapped.
func stepPower(kind tracing.StepKind, bs int) float64 {
	var a float64
	switch kind {
	case tracing.StepPrefill:
		a = 0.95
	case tracing.StepMixed:
		a = 0.8
	default:
		a = 0.35 + 0.5*math.Min(1, float64(bs)/128)
	}
	return simIdleW + (simFullW-simIdleW)*a
}

// capped is a step's power and graphics clock under a power cap (0: none):
// the clock falls in proportion to the power above idle the cap takes away,
// as the firmware's power controller lowers the clock to hold its limit.
func capped(p, cap float64) (w, clockMHz float64, limited bool) {
	if cap <= 0 || p <= cap {
		return p, simMaxClockMHz, false
	}
	f := max((cap-simIdleW)/(p-simIdleW), 0.2)
	return cap, simMaxClockMHz * f, true
}

// gpuMeter accumulates what the GPUs did between two readings of
// /debug/telemetry, on the engine's clock.
type gpuMeter struct {
	mu         sync.Mutex
	busyNS     float64 // GPU time of the steps
	energyJ    float64 // their energy, per GPU
	clockNS    float64 // graphics clock × busy time
	limitedNS  float64 // busy time at the power cap
	kvBlocks   int64
	lastRead   time.Time // wall
	lastReadOK bool
}

// step records one step of d nanoseconds on the engine's clock.
func (m *gpuMeter) step(kind tracing.StepKind, bs int, d float64, cap float64, kvBlocks int64) {
	w, clk, lim := capped(stepPower(kind, bs), cap)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.busyNS += d
	m.energyJ += w * d / 1e9
	m.clockNS += clk * d
	if lim {
		m.limitedNS += d
	}
	m.kvBlocks = kvBlocks
}

// amdValue is amd-smi's {"value", "unit"} figure.
type amdValue struct {
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// read is one reading in amd-smi metric --json's list shape, one object per
// rank: the means since the last reading (the first: since start), so a
// sampler that reads every period sees each period's average, as amd-smi's
// socket_power averages over its own window.
func (m *gpuMeter) read(now time.Time, started time.Time, scale float64, ranks int) []map[string]any {
	m.mu.Lock()
	since := started
	if m.lastReadOK {
		since = m.lastRead
	}
	elapsed := float64(now.Sub(since).Nanoseconds()) * scale
	busy, energy, clk, lim, blocks := m.busyNS, m.energyJ, m.clockNS, m.limitedNS, m.kvBlocks
	m.busyNS, m.energyJ, m.clockNS, m.limitedNS = 0, 0, 0, 0
	m.lastRead, m.lastReadOK = now, true
	m.mu.Unlock()

	elapsed = max(elapsed, busy, 1)
	power := (energy + simIdleW*(elapsed-busy)/1e9) / (elapsed / 1e9)
	clock := simMaxClockMHz
	if busy > 0 {
		clock = clk / busy
	}
	util := 100 * busy / elapsed
	throttled := lim > 0
	status := map[bool]string{true: "ACTIVE", false: "NOT ACTIVE"}
	used := simWeightsMiB + float64(blocks)*simKVBlockMiB/float64(max(ranks, 1))
	out := make([]map[string]any, max(ranks, 1))
	for r := range out {
		out[r] = map[string]any{
			"gpu":         r,
			"usage":       map[string]any{"gfx_activity": amdValue{math.Round(util), "%"}},
			"power":       map[string]any{"socket_power": amdValue{math.Round(power), "W"}, "throttle_status": map[bool]string{true: "THROTTLED", false: "UNTHROTTLED"}[throttled]},
			"clock":       map[string]any{"gfx_0": map[string]any{"clk": amdValue{math.Round(clock), "MHz"}}, "mem_0": map[string]any{"clk": amdValue{simMemClockMHz, "MHz"}}},
			"temperature": map[string]any{"edge": amdValue{math.Round(30 + 0.025*power), "C"}, "hotspot": amdValue{math.Round(35 + 0.04*power), "C"}},
			"mem_usage":   map[string]any{"total_vram": amdValue{simVRAMMiB, "MB"}, "used_vram": amdValue{math.Round(min(used, simVRAMMiB)), "MB"}},
			"throttle":    map[string]any{"ppt_violation_status": status[throttled], "socket_thermal_violation_status": status[false]},
		}
	}
	return out
}

// telemetry answers GET /debug/telemetry: the simulated GPUs' power,
// clocks, temperature, utilisation, memory and power-cap violation since
// the last reading, in amd-smi metric --json's shape, so that the sampler
// reads it with amd-smi's parser.
func (s *Server) telemetry(w http.ResponseWriter, r *http.Request) {
	started := time.Unix(0, s.readyAt.Load())
	doc := s.eng.meter.read(s.cfg.clock.Now(), started, s.cfg.TimeScale, s.cfg.TP)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(doc)
}
