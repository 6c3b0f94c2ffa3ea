package telemetry

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Process is a process holding GPU memory, as the GPU's tool names it.
type Process struct {
	GPU     int
	PID     int
	Name    string
	UsedMiB float64 // NaN when the tool does not say
}

func (p Process) String() string {
	s := fmt.Sprintf("%s (pid %d", p.Name, p.PID)
	if !math.IsNaN(p.UsedMiB) {
		s += fmt.Sprintf(", %.1f GiB", p.UsedMiB/1024)
	}
	return s + ")"
}

// AMDSMIProcessArgs list the processes on every GPU.
var AMDSMIProcessArgs = []string{"process", "--json"}

// ParseAMDSMIProcesses reads `amd-smi process --json`: per GPU
// {"gpu": N, "process_list": [{"process_info": {"name", "pid",
// "mem_usage": {"value", "unit": "B"}, "memory_usage": {"vram_mem": ...}}}]},
// "process_info": "N/A" when none (ROCm/amdsmi amdsmi_commands.py
// process(), 24.5.3); the list may sit under "gpu_data".
func ParseAMDSMIProcesses(b []byte) ([]Process, error) {
	b, err := jsonStart(b)
	if err != nil {
		return nil, fmt.Errorf("amd-smi process: %w", err)
	}
	var list []map[string]any
	if b[0] == '{' {
		var doc struct {
			GPUData []map[string]any `json:"gpu_data"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("amd-smi process: %w", err)
		}
		list = doc.GPUData
	} else if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("amd-smi process: %w", err)
	}
	var out []Process
	for i, g := range list {
		idx, ok := g["gpu"].(float64)
		if !ok || idx < 0 || idx != math.Trunc(idx) || idx > 1<<16 {
			return nil, fmt.Errorf("amd-smi process: entry %d has no \"gpu\" index", i)
		}
		procs, _ := g["process_list"].([]any)
		for _, p := range procs {
			info := obj(obj(p)["process_info"])
			if info == nil {
				continue // "N/A": no process
			}
			pid, _ := info["pid"].(float64)
			name, _ := info["name"].(string)
			used := leaf(obj(info["memory_usage"])["vram_mem"])
			if math.IsNaN(used) {
				used = leaf(info["mem_usage"])
			}
			out = append(out, Process{GPU: int(idx), PID: int(pid), Name: name, UsedMiB: used / (1 << 20)})
		}
	}
	return out, nil
}

// NvidiaAppsArgs and NvidiaBusArgs are nvidia-smi's queries of the compute
// processes (by the PCI bus of their GPU) and of each GPU's bus.
var (
	NvidiaAppsArgs = []string{"--query-compute-apps=gpu_bus_id,pid,process_name,used_memory", "--format=csv,noheader,nounits"}
	NvidiaBusArgs  = []string{"--query-gpu=index,pci.bus_id", "--format=csv,noheader"}
)

// ParseNvidiaApps reads the two queries above: "BUS, PID, NAME, MiB" per
// process and "INDEX, BUS" per GPU; a process on a bus no GPU lists is an
// error.
func ParseNvidiaApps(apps, buses []byte) ([]Process, error) {
	bus := map[string]int{}
	for n, line := range strings.Split(strings.TrimSpace(string(buses)), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		idx, id, ok := strings.Cut(line, ",")
		i, err := strconv.Atoi(strings.TrimSpace(idx))
		if !ok || err != nil {
			return nil, fmt.Errorf("nvidia-smi GPU line %d: %q: want \"INDEX, BUS\"", n+1, line)
		}
		bus[strings.ToLower(strings.TrimSpace(id))] = i
	}
	var out []Process
	for n, line := range strings.Split(strings.TrimSpace(string(apps)), "\n") {
		if strings.TrimSpace(line) == "" || strings.Contains(line, "No running") {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) < 4 {
			return nil, fmt.Errorf("nvidia-smi process line %d: %q: want \"BUS, PID, NAME, MiB\"", n+1, line)
		}
		g, ok := bus[strings.ToLower(strings.TrimSpace(f[0]))]
		if !ok {
			return nil, fmt.Errorf("nvidia-smi process line %d: bus %q is no listed GPU's", n+1, strings.TrimSpace(f[0]))
		}
		pid, err := strconv.Atoi(strings.TrimSpace(f[1]))
		if err != nil {
			return nil, fmt.Errorf("nvidia-smi process line %d: pid %q", n+1, strings.TrimSpace(f[1]))
		}
		// A process name may hold commas; the memory is the last cell.
		used, err := number(f[len(f)-1])
		if err != nil {
			return nil, fmt.Errorf("nvidia-smi process line %d: %w", n+1, err)
		}
		out = append(out, Process{GPU: g, PID: pid, Name: strings.TrimSpace(strings.Join(f[2:len(f)-1], ",")), UsedMiB: used})
	}
	if len(bus) == 0 && len(out) > 0 {
		return nil, errors.New("nvidia-smi listed processes but no GPU")
	}
	return out, nil
}
