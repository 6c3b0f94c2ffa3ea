package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/profile-model/profile-model/profiling/telemetry"
)

// GPUMemory is one GPU's memory use as its vendor tool reports it.
type GPUMemory struct {
	Index      int   `json:"index"`
	UsedBytes  int64 `json:"used_bytes"`
	TotalBytes int64 `json:"total_bytes"`
}

// The GPU tools the pre-flight knows, AMD's first.
const (
	ROCmSMI   = "rocm-smi"
	NvidiaSMI = "nvidia-smi"
)

// gpuToolArgs are the memory queries of each tool.
var gpuToolArgs = map[string][]string{
	ROCmSMI:   {"--showmeminfo", "vram", "--json"},
	NvidiaSMI: {"--query-gpu=memory.used,memory.total", "--format=csv,noheader,nounits"},
}

var rocmCard = regexp.MustCompile(`^card(\d+)$`)

// parseROCmSMI reads the output of `rocm-smi --showmeminfo vram --json`:
// an object with one "cardN" object per GPU holding "VRAM Total Memory (B)"
// and "VRAM Total Used Memory (B)" as decimal strings (numbers are accepted
// too). Warning lines that some releases print before the JSON are skipped;
// keys other than cardN are ignored.
func parseROCmSMI(b []byte) ([]GPUMemory, error) {
	i := bytes.IndexByte(b, '{')
	if i < 0 {
		return nil, fmt.Errorf("rocm-smi output holds no JSON object (%s)", snippet(b))
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b[i:], &doc); err != nil {
		return nil, fmt.Errorf("rocm-smi output at byte %d: %w", i, err)
	}
	var gpus []GPUMemory
	for key, raw := range doc {
		m := rocmCard.FindStringSubmatch(key)
		if m == nil {
			continue
		}
		idx, err := strconv.Atoi(m[1])
		if err != nil {
			return nil, fmt.Errorf("rocm-smi %s: card number: %w", key, err)
		}
		var fields map[string]any
		if err := json.Unmarshal(raw, &fields); err != nil {
			return nil, fmt.Errorf("rocm-smi %s: %w", key, err)
		}
		total, err := rocmBytes(key, fields, "VRAM Total Memory (B)")
		if err != nil {
			return nil, err
		}
		used, err := rocmBytes(key, fields, "VRAM Total Used Memory (B)")
		if err != nil {
			return nil, err
		}
		g := GPUMemory{Index: idx, UsedBytes: used, TotalBytes: total}
		if err := g.check("rocm-smi " + key); err != nil {
			return nil, err
		}
		gpus = append(gpus, g)
	}
	if len(gpus) == 0 {
		return nil, errors.New("rocm-smi output lists no GPU (no \"cardN\" entry): is the amdgpu driver loaded?")
	}
	slices.SortFunc(gpus, func(a, b GPUMemory) int { return a.Index - b.Index })
	return gpus, nil
}

func rocmBytes(card string, fields map[string]any, key string) (int64, error) {
	v, ok := fields[key]
	if !ok {
		return 0, fmt.Errorf("rocm-smi %s: no %q field", card, key)
	}
	var s string
	switch v := v.(type) {
	case string:
		s = strings.TrimSpace(v)
	case float64:
		s = strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return 0, fmt.Errorf("rocm-smi %s %q: %v is not a byte count", card, key, v)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("rocm-smi %s %q: %q is not a byte count", card, key, s)
	}
	return n, nil
}

// parseNvidiaSMI reads the output of `nvidia-smi
// --query-gpu=memory.used,memory.total --format=csv,noheader,nounits`: one
// line "USED, TOTAL" in MiB per GPU, in index order.
func parseNvidiaSMI(b []byte) ([]GPUMemory, error) {
	var gpus []GPUMemory
	for n, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 2 {
			return nil, fmt.Errorf("nvidia-smi line %d: %q: want \"USED, TOTAL\" in MiB", n+1, line)
		}
		var mib [2]int64
		for i := range f {
			v, err := strconv.ParseInt(strings.TrimSpace(f[i]), 10, 64)
			if err != nil || v > 1<<43 {
				return nil, fmt.Errorf("nvidia-smi line %d: %q is not a MiB count (%q)", n+1, strings.TrimSpace(f[i]), line)
			}
			mib[i] = v
		}
		g := GPUMemory{Index: len(gpus), UsedBytes: mib[0] << 20, TotalBytes: mib[1] << 20}
		if err := g.check(fmt.Sprintf("nvidia-smi line %d", n+1)); err != nil {
			return nil, err
		}
		gpus = append(gpus, g)
	}
	if len(gpus) == 0 {
		return nil, fmt.Errorf("nvidia-smi lists no GPU (%s)", snippet(b))
	}
	return gpus, nil
}

func (g GPUMemory) check(where string) error {
	if g.TotalBytes <= 0 || g.UsedBytes < 0 || g.UsedBytes > g.TotalBytes {
		return fmt.Errorf("%s: used %d of %d bytes is not a memory reading", where, g.UsedBytes, g.TotalBytes)
	}
	return nil
}

// GPUReport is the outcome of the memory pre-flight.
type GPUReport struct {
	Tool string      `json:"tool,omitempty"` // ROCmSMI or NvidiaSMI; "" when none ran
	GPUs []GPUMemory `json:"gpus,omitempty"`
	// Devices are the GPUs the engine will use, by index; nil: all.
	Devices []int `json:"devices,omitempty"`
	// Busy are the GPUs of Devices whose used memory exceeds the threshold.
	Busy []int `json:"busy,omitempty"`
	// Holders name the processes on the busy GPUs where a tool says
	// (amd-smi process, nvidia-smi's compute apps): "python3 (pid 4242,
	// 140.0 GiB) on GPU 1".
	Holders []string `json:"holders,omitempty"`
	Note    string   `json:"note,omitempty"` // why nothing was checked, or that a busy GPU was forced
}

// String is the report in one line per GPU.
func (r GPUReport) String() string {
	if r.Tool == "" {
		return r.Note
	}
	var b strings.Builder
	for i, g := range r.GPUs {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "GPU %d: %.1f of %.1f GiB used (%s)", g.Index, gib(g.UsedBytes), gib(g.TotalBytes), r.Tool)
		if slices.Contains(r.Busy, g.Index) {
			b.WriteString(" — held by another process")
			for _, h := range r.Holders {
				if strings.HasSuffix(h, fmt.Sprintf(" on GPU %d", g.Index)) {
					b.WriteString(": " + strings.TrimSuffix(h, fmt.Sprintf(" on GPU %d", g.Index)))
				}
			}
		}
	}
	if r.Note != "" {
		b.WriteString("\n" + r.Note)
	}
	return b.String()
}

func gib(b int64) float64 { return float64(b) / (1 << 30) }

// GPUProbe finds and runs the GPU tools; tests replace its functions.
type GPUProbe struct {
	LookPath func(file string) (string, error) // nil: exec.LookPath
	// Run runs a tool and returns its stdout; nil: run it with a 30 s limit.
	Run func(ctx context.Context, path string, args ...string) ([]byte, error)
}

// Tool returns the first GPU tool found (ROCmSMI before NvidiaSMI) and its
// path; "" when there is none.
func (p GPUProbe) Tool() (name, path string) {
	look := p.LookPath
	if look == nil {
		look = exec.LookPath
	}
	for _, t := range []string{ROCmSMI, NvidiaSMI} {
		if path, err := look(t); err == nil {
			return t, path
		}
	}
	return "", ""
}

// HasGPUTooling tells whether rocm-smi or nvidia-smi is on PATH, and which:
// without either, a run has no GPU to profile and falls back to the
// simulated engine.
func HasGPUTooling() (tool string, ok bool) {
	tool, _ = GPUProbe{}.Tool()
	return tool, tool != ""
}

// Memory reads every GPU's memory use. With no tool found it returns a
// report whose Note says the check was skipped, and no error.
func (p GPUProbe) Memory(ctx context.Context) (GPUReport, error) {
	name, path := p.Tool()
	if name == "" {
		return GPUReport{Note: "GPU memory not checked: neither rocm-smi nor nvidia-smi is on PATH"}, nil
	}
	run := p.Run
	if run == nil {
		run = runTool
	}
	out, err := run(ctx, path, gpuToolArgs[name]...)
	if err != nil {
		return GPUReport{Tool: name}, fmt.Errorf("GPU memory pre-flight: %s %s: %w (run it by hand to see why, or skip the check with --force)", name, strings.Join(gpuToolArgs[name], " "), err)
	}
	var gpus []GPUMemory
	if name == ROCmSMI {
		gpus, err = parseROCmSMI(out)
	} else {
		gpus, err = parseNvidiaSMI(out)
	}
	if err != nil {
		return GPUReport{Tool: name}, fmt.Errorf("GPU memory pre-flight: %w (skip the check with --force)", err)
	}
	return GPUReport{Tool: name, GPUs: gpus}, nil
}

// runTool runs a GPU tool with a limit of its own: a wedged driver makes
// these tools hang.
func runTool(ctx context.Context, path string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String() + " " + string(out)); msg != "" {
			err = fmt.Errorf("%w: %s", err, snippet([]byte(msg)))
		}
		return nil, err
	}
	return out, nil
}

// holders are the processes on the GPUs busy, as amd-smi (also beside
// rocm-smi) or nvidia-smi names them; none when no tool says (naming them
// is a courtesy: the check stands without it).
func (p GPUProbe) holders(ctx context.Context, tool string, busy []int) []telemetry.Process {
	look, run := p.LookPath, p.Run
	if look == nil {
		look = exec.LookPath
	}
	if run == nil {
		run = runTool
	}
	var procs []telemetry.Process
	switch tool {
	case ROCmSMI:
		path, err := look(telemetry.AMDSMI)
		if err != nil {
			return nil
		}
		out, err := run(ctx, path, telemetry.AMDSMIProcessArgs...)
		if err != nil {
			return nil
		}
		if procs, err = telemetry.ParseAMDSMIProcesses(out); err != nil {
			return nil
		}
	case NvidiaSMI:
		path, err := look(NvidiaSMI)
		if err != nil {
			return nil
		}
		apps, err := run(ctx, path, telemetry.NvidiaAppsArgs...)
		if err != nil {
			return nil
		}
		buses, err := run(ctx, path, telemetry.NvidiaBusArgs...)
		if err != nil {
			return nil
		}
		if procs, err = telemetry.ParseNvidiaApps(apps, buses); err != nil {
			return nil
		}
	}
	var out []telemetry.Process
	for _, pr := range procs {
		if slices.Contains(busy, pr.GPU) {
			out = append(out, pr)
		}
	}
	return out
}

// defaultGPUThreshold is how much memory a GPU may hold before the engine
// starts: an idle GPU's driver keeps well under 1 GiB.
const defaultGPUThreshold int64 = 2 << 30

// Preflight is the GPU memory check before an engine starts.
type Preflight struct {
	Probe          GPUProbe
	ThresholdBytes int64 // 0: DefaultGPUThreshold
	Force          bool  // report a busy GPU instead of refusing
}

// Check reads the GPUs' memory and refuses, unless Force, when a GPU that
// spec's engine will use already holds more than the threshold: another
// process is on it, and the engine would fail to allocate its KV cache or
// measure someone else's load. The simulated engine and engine none are not
// checked (no GPU, or a server that holds its memory already).
func (p Preflight) Check(ctx context.Context, spec Spec) (GPUReport, error) {
	if spec.Kind == Sim || spec.Kind == None {
		return GPUReport{Note: fmt.Sprintf("GPU memory not checked: engine %s starts nothing on a GPU", spec.Kind)}, nil
	}
	r, err := p.Probe.Memory(ctx)
	if err != nil || r.Tool == "" {
		return r, err
	}
	threshold := p.ThresholdBytes
	if threshold <= 0 {
		threshold = defaultGPUThreshold
	}
	r.Devices = spec.Devices(os.Environ())
	for _, g := range r.GPUs {
		if (r.Devices == nil || slices.Contains(r.Devices, g.Index)) && g.UsedBytes > threshold {
			r.Busy = append(r.Busy, g.Index)
		}
	}
	if len(r.Busy) == 0 {
		return r, nil
	}
	msg := fmt.Sprintf("another process already holds more than %.1f GiB on GPU %s (%s)", gib(threshold), joinInts(r.Busy), r.Tool)
	for _, h := range p.Probe.holders(ctx, r.Tool, r.Busy) {
		r.Holders = append(r.Holders, fmt.Sprintf("%s on GPU %d", h, h.GPU))
	}
	if len(r.Holders) > 0 {
		msg += ": " + strings.Join(r.Holders, ", ")
	}
	if p.Force {
		r.Note = msg + "; going on because of --force"
		return r, nil
	}
	return r, fmt.Errorf("GPU memory pre-flight: %s; stop it, pick other GPUs with HIP_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES, or pass --force", msg)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// Devices returns the indices of the GPUs the engine will use: the first TP
// of the visible devices (HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES or
// CUDA_VISIBLE_DEVICES, from Spec.Env or environ, in that order), or 0..TP-1
// when none is set. Nil when the visible devices are not plain indices (UUIDs):
// then every GPU counts.
func (s Spec) Devices(environ []string) []int {
	s = s.withDefaults()
	lookup := func(k string) (string, bool) {
		if v, ok := s.Env[k]; ok {
			return v, true
		}
		for i := len(environ) - 1; i >= 0; i-- {
			if kk, v, _ := strings.Cut(environ[i], "="); kk == k {
				return v, true
			}
		}
		return "", false
	}
	for _, k := range []string{"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"} {
		v, ok := lookup(k)
		if !ok {
			continue
		}
		var devs []int
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 0 {
				return nil
			}
			devs = append(devs, n)
		}
		return devs[:min(len(devs), s.TP)]
	}
	devs := make([]int, s.TP)
	for i := range devs {
		devs[i] = i
	}
	return devs
}
