package engine

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

func TestParseGPUTools(t *testing.T) {
	t.Parallel()
	const gib = int64(1) << 30
	idle := make([]GPUMemory, 8)
	for i := range idle {
		idle[i] = GPUMemory{Index: i, UsedBytes: 283279360 + int64(i)*4096, TotalBytes: 206141652992}
	}
	nvIdle := make([]GPUMemory, 8)
	for i := range nvIdle {
		nvIdle[i] = GPUMemory{Index: i, TotalBytes: 81559 << 20}
	}
	nvIdle[0].UsedBytes = 4 << 20
	tests := []struct {
		file  string
		parse func([]byte) ([]GPUMemory, error)
		want  []GPUMemory
	}{
		{"rocm-smi-8gpu-idle.json", parseROCmSMI, idle},
		{"rocm-smi-2gpu-busy.txt", parseROCmSMI, []GPUMemory{
			{Index: 0, UsedBytes: 297795584, TotalBytes: 309220868096},
			{Index: 1, UsedBytes: 140 * gib, TotalBytes: 309220868096},
		}},
		{"nvidia-smi-8gpu-idle.csv", parseNvidiaSMI, nvIdle},
		{"nvidia-smi-2gpu-busy.csv", parseNvidiaSMI, []GPUMemory{
			{Index: 0, UsedBytes: 61245 << 20, TotalBytes: 81559 << 20},
			{Index: 1, UsedBytes: 1 << 20, TotalBytes: 81559 << 20},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			got, err := tt.parse(readTestdata(t, tt.file))
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(tt.want, got))
		})
	}
}

func TestParseGPUToolsMalformed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		parse func([]byte) ([]GPUMemory, error)
		in    string
		err   string
	}{
		{"rocm empty", parseROCmSMI, "", "rocm-smi output holds no JSON object"},
		{"rocm driver message", parseROCmSMI, "ERROR:root:Driver not initialized (amdgpu not found in modules)\n", "no JSON object"},
		{"rocm truncated", parseROCmSMI, `{"card0": {"VRAM Total Memory (B)": "1`, "rocm-smi output at byte 0"},
		{"rocm no card", parseROCmSMI, `{"system": {"Driver version": "6.10.5"}}`, `lists no GPU (no "cardN" entry)`},
		{"rocm card not an object", parseROCmSMI, `{"card0": "N/A"}`, "rocm-smi card0:"},
		{"rocm used missing", parseROCmSMI, `{"card0": {"VRAM Total Memory (B)": "100"}}`, `rocm-smi card0: no "VRAM Total Used Memory (B)" field`},
		{"rocm not a number", parseROCmSMI, `{"card3": {"VRAM Total Memory (B)": "N/A", "VRAM Total Used Memory (B)": "1"}}`, `rocm-smi card3 "VRAM Total Memory (B)": "N/A" is not a byte count`},
		{"rocm fraction", parseROCmSMI, `{"card0": {"VRAM Total Memory (B)": 100.5, "VRAM Total Used Memory (B)": 1}}`, `"100.5" is not a byte count`},
		{"rocm bool", parseROCmSMI, `{"card0": {"VRAM Total Memory (B)": true, "VRAM Total Used Memory (B)": 1}}`, "true is not a byte count"},
		{"rocm used above total", parseROCmSMI, `{"card0": {"VRAM Total Memory (B)": "100", "VRAM Total Used Memory (B)": "200"}}`, "rocm-smi card0: used 200 of 100 bytes is not a memory reading"},
		{"rocm zero total", parseROCmSMI, `{"card0": {"VRAM Total Memory (B)": "0", "VRAM Total Used Memory (B)": "0"}}`, "used 0 of 0 bytes"},
		{"nvidia empty", parseNvidiaSMI, "\n", "nvidia-smi lists no GPU"},
		{"nvidia no devices", parseNvidiaSMI, "No devices were found\n", `nvidia-smi line 1: "No devices were found": want "USED, TOTAL" in MiB`},
		{"nvidia header kept", parseNvidiaSMI, "memory.used [MiB], memory.total [MiB]\n0, 81559\n", `nvidia-smi line 1: "memory.used [MiB]" is not a MiB count`},
		{"nvidia N/A", parseNvidiaSMI, "0, 81559\n[N/A], 81559\n", `nvidia-smi line 2: "[N/A]" is not a MiB count`},
		{"nvidia three fields", parseNvidiaSMI, "0, 81559, 1\n", "want \"USED, TOTAL\""},
		{"nvidia used above total", parseNvidiaSMI, "90000, 81559\n", "nvidia-smi line 1: used"},
		{"nvidia negative", parseNvidiaSMI, "-1, 81559\n", "not a memory reading"},
		{"nvidia huge", parseNvidiaSMI, "0, 99999999999999999\n", "is not a MiB count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.parse([]byte(tt.in))
			require.ErrorContains(t, err, tt.err)
			require.Nil(t, got)
		})
	}
}

func FuzzParseROCmSMI(f *testing.F) {
	f.Add(readTestdata(f, "rocm-smi-8gpu-idle.json"))
	f.Add(readTestdata(f, "rocm-smi-2gpu-busy.txt"))
	f.Add([]byte(`{"card0": {"VRAM Total Memory (B)": 5, "VRAM Total Used Memory (B)": "1"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkParsed(t, parseROCmSMI, b)
	})
}

func FuzzParseNvidiaSMI(f *testing.F) {
	f.Add(readTestdata(f, "nvidia-smi-8gpu-idle.csv"))
	f.Add(readTestdata(f, "nvidia-smi-2gpu-busy.csv"))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkParsed(t, parseNvidiaSMI, b)
	})
}

// checkParsed: a parse either fails or yields readings that make sense.
func checkParsed(t *testing.T, parse func([]byte) ([]GPUMemory, error), b []byte) {
	gpus, err := parse(b)
	if err != nil {
		require.Nil(t, gpus)
		return
	}
	require.NotEmpty(t, gpus)
	seen := map[int]bool{}
	for _, g := range gpus {
		require.False(t, seen[g.Index], "GPU %d listed twice", g.Index)
		seen[g.Index] = true
		require.True(t, g.Index >= 0 && g.TotalBytes > 0 && g.UsedBytes >= 0 && g.UsedBytes <= g.TotalBytes, "%+v", g)
	}
}

// fakeProbe finds the tools in have and answers with out (or fails).
func fakeProbe(have map[string]string, fail error) (GPUProbe, *[]string) {
	var ran []string
	return GPUProbe{
		LookPath: func(file string) (string, error) {
			if _, ok := have[file]; ok {
				return "/usr/bin/" + file, nil
			}
			return "", exec.ErrNotFound
		},
		Run: func(ctx context.Context, path string, args ...string) ([]byte, error) {
			ran = append(ran, path+" "+strings.Join(args, " "))
			if fail != nil {
				return nil, fail
			}
			return []byte(have[filepath.Base(path)]), nil
		},
	}, &ran
}

func TestGPUProbe(t *testing.T) {
	t.Parallel()
	rocm := string(readTestdata(t, "rocm-smi-2gpu-busy.txt"))
	nv := string(readTestdata(t, "nvidia-smi-8gpu-idle.csv"))

	t.Run("rocm-smi first, with its documented query", func(t *testing.T) {
		p, ran := fakeProbe(map[string]string{ROCmSMI: rocm, NvidiaSMI: nv}, nil)
		r, err := p.Memory(t.Context())
		require.NoError(t, err)
		require.Equal(t, []string{"/usr/bin/rocm-smi --showmeminfo vram --json"}, *ran)
		require.Equal(t, ROCmSMI, r.Tool)
		require.Len(t, r.GPUs, 2)
	})
	t.Run("nvidia-smi with its documented query", func(t *testing.T) {
		p, ran := fakeProbe(map[string]string{NvidiaSMI: nv}, nil)
		r, err := p.Memory(t.Context())
		require.NoError(t, err)
		require.Equal(t, []string{"/usr/bin/nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader,nounits"}, *ran)
		require.Len(t, r.GPUs, 8)
	})
	t.Run("no tool: skipped with a note", func(t *testing.T) {
		p, ran := fakeProbe(nil, nil)
		r, err := p.Memory(t.Context())
		require.NoError(t, err)
		require.Empty(t, *ran)
		require.Equal(t, GPUReport{Note: "GPU memory not checked: neither rocm-smi nor nvidia-smi is on PATH"}, r)
		require.Equal(t, r.Note, r.String())
	})
	t.Run("tool fails", func(t *testing.T) {
		p, _ := fakeProbe(map[string]string{NvidiaSMI: ""}, errors.New("exit status 9"))
		_, err := p.Memory(t.Context())
		require.ErrorContains(t, err, "GPU memory pre-flight: nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader,nounits: exit status 9 (run it by hand")
	})
	t.Run("tool answers garbage", func(t *testing.T) {
		p, _ := fakeProbe(map[string]string{ROCmSMI: "Segmentation fault"}, nil)
		_, err := p.Memory(t.Context())
		require.ErrorContains(t, err, "GPU memory pre-flight: rocm-smi output holds no JSON object")
		require.ErrorContains(t, err, "--force")
	})
}

// TestGPUProbeRunsTool runs a fake rocm-smi through the real exec path.
func TestGPUProbeRunsTool(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("the fake tool is a shell script")
	}
	dir := t.TempDir()
	fixture, err := filepath.Abs(filepath.Join("testdata", "rocm-smi-8gpu-idle.json"))
	require.NoError(t, err)
	tool := filepath.Join(dir, ROCmSMI)
	script := "#!/bin/sh\n[ \"$*\" = '--showmeminfo vram --json' ] || { echo \"bad arguments: $*\" >&2; exit 2; }\nexec cat " + shellQuote(fixture) + "\n"
	writeScript(t, tool, script)
	look := func(file string) (string, error) {
		if file == ROCmSMI {
			return tool, nil
		}
		return "", exec.ErrNotFound
	}
	r, err := GPUProbe{LookPath: look}.Memory(t.Context())
	require.NoError(t, err)
	require.Len(t, r.GPUs, 8)
	require.Equal(t, "GPU 0: 0.3 of 192.0 GiB used (rocm-smi)", strings.Split(r.String(), "\n")[0])

	// A failing tool's stderr is in the error.
	writeScript(t, tool, "#!/bin/sh\necho 'ERROR: amdgpu driver not loaded' >&2\nexit 1\n")
	_, err = GPUProbe{LookPath: look}.Memory(t.Context())
	require.ErrorContains(t, err, `exit status 1: "ERROR: amdgpu driver not loaded"`)
}

func TestPreflight(t *testing.T) {
	t.Parallel()
	rocm := string(readTestdata(t, "rocm-smi-2gpu-busy.txt")) // GPU 1 holds 140 GiB
	tests := []struct {
		name  string
		spec  Spec
		force bool
		busy  []int
		err   string
		note  string
	}{{
		name: "TP 1 uses GPU 0, which is idle",
		spec: Spec{Kind: ATOM, Model: "m"},
	}, {
		name: "TP 2 uses GPU 1 too",
		spec: Spec{Kind: ATOM, Model: "m", TP: 2},
		busy: []int{1},
		err:  "GPU memory pre-flight: another process already holds more than 2.0 GiB on GPU 1 (rocm-smi); stop it, pick other GPUs with HIP_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES, or pass --force",
	}, {
		name:  "forced: going on, and saying so",
		spec:  Spec{Kind: VLLM, Model: "m", TP: 2},
		force: true,
		busy:  []int{1},
		note:  "another process already holds more than 2.0 GiB on GPU 1 (rocm-smi); going on because of --force",
	}, {
		name: "visible devices pick the busy GPU",
		spec: Spec{Kind: SGLang, Model: "m", Env: map[string]string{"HIP_VISIBLE_DEVICES": "1,0"}},
		busy: []int{1},
		err:  "on GPU 1",
	}, {
		name: "the simulator uses no GPU",
		spec: Spec{Kind: Sim, Model: "m", TP: 2},
		note: "GPU memory not checked: engine sim starts nothing on a GPU",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, _ := fakeProbe(map[string]string{ROCmSMI: rocm}, nil)
			r, err := Preflight{Probe: p, Force: tt.force}.Check(t.Context(), tt.spec)
			if tt.err == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tt.err)
			}
			require.Equal(t, tt.busy, r.Busy)
			require.Equal(t, tt.note, r.Note)
		})
	}
}

func TestGPUReportString(t *testing.T) {
	t.Parallel()
	r := GPUReport{Tool: NvidiaSMI, Busy: []int{1}, GPUs: []GPUMemory{
		{Index: 0, UsedBytes: 1 << 30, TotalBytes: 80 << 30},
		{Index: 1, UsedBytes: 60 << 30, TotalBytes: 80 << 30},
	}}
	require.Equal(t, "GPU 0: 1.0 of 80.0 GiB used (nvidia-smi)\nGPU 1: 60.0 of 80.0 GiB used (nvidia-smi) — held by another process", r.String())
}

func TestDevices(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		spec    Spec
		environ []string
		want    []int
	}{
		{"first TP GPUs", Spec{TP: 4}, nil, []int{0, 1, 2, 3}},
		{"default TP 1", Spec{}, nil, []int{0}},
		{"HIP_VISIBLE_DEVICES from the environment", Spec{TP: 2}, []string{"HIP_VISIBLE_DEVICES=4,5,6,7"}, []int{4, 5}},
		{"Spec.Env wins", Spec{TP: 1, Env: map[string]string{"CUDA_VISIBLE_DEVICES": "3"}}, []string{"CUDA_VISIBLE_DEVICES=2"}, []int{3}},
		{"HIP before CUDA", Spec{TP: 1}, []string{"CUDA_VISIBLE_DEVICES=2", "HIP_VISIBLE_DEVICES=5"}, []int{5}},
		{"UUIDs: every GPU counts", Spec{TP: 1}, []string{"CUDA_VISIBLE_DEVICES=GPU-8f2a"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.spec.Devices(tt.environ))
		})
	}
}

func TestHasGPUTooling(t *testing.T) {
	t.Parallel()
	tool, ok := HasGPUTooling()
	_, rocmErr := exec.LookPath(ROCmSMI)
	_, nvErr := exec.LookPath(NvidiaSMI)
	require.Equal(t, rocmErr == nil || nvErr == nil, ok)
	if ok {
		require.Contains(t, []string{ROCmSMI, NvidiaSMI}, tool)
	}
}

// A busy GPU's holder is named where the tools say: amd-smi's process
// list beside rocm-smi, nvidia-smi's compute apps.
func TestPreflightNamesHolder(t *testing.T) {
	t.Parallel()
	amdProcs := `[{"gpu": 0, "process_list": [{"process_info": "N/A"}]},
	 {"gpu": 1, "process_list": [{"process_info": {"name": "python3", "pid": 48213, "mem_usage": {"value": 150323855360, "unit": "B"}}}]}]`
	p, _ := fakeProbe(map[string]string{ROCmSMI: string(readTestdata(t, "rocm-smi-2gpu-busy.txt")), "amd-smi": amdProcs}, nil)
	r, err := Preflight{Probe: p}.Check(t.Context(), Spec{Kind: ATOM, Model: "m", TP: 2})
	require.ErrorContains(t, err, "on GPU 1 (rocm-smi): python3 (pid 48213, 140.0 GiB) on GPU 1; stop it")
	require.Equal(t, []string{"python3 (pid 48213, 140.0 GiB) on GPU 1"}, r.Holders)
	require.Contains(t, r.String(), "GPU 1: 140.0 of 288.0 GiB used (rocm-smi) — held by another process: python3 (pid 48213, 140.0 GiB)")

	// Without amd-smi the check stands, unnamed.
	p, _ = fakeProbe(map[string]string{ROCmSMI: string(readTestdata(t, "rocm-smi-2gpu-busy.txt"))}, nil)
	_, err = Preflight{Probe: p}.Check(t.Context(), Spec{Kind: ATOM, Model: "m", TP: 2})
	require.ErrorContains(t, err, "on GPU 1 (rocm-smi); stop it")

	nv := GPUProbe{
		LookPath: func(file string) (string, error) {
			if file == NvidiaSMI {
				return "/usr/bin/nvidia-smi", nil
			}
			return "", exec.ErrNotFound
		},
		Run: func(_ context.Context, _ string, args ...string) ([]byte, error) {
			switch {
			case strings.HasPrefix(args[0], "--query-compute-apps"):
				return []byte("00000000:3B:00.0, 51290, vllm, 61245\n"), nil
			case strings.HasPrefix(args[0], "--query-gpu=index,pci.bus_id"):
				return []byte("0, 00000000:18:00.0\n1, 00000000:3B:00.0\n"), nil
			}
			return readTestdata(t, "nvidia-smi-2gpu-busy.csv"), nil // GPU 0 holds 59.8 GiB
		},
	}
	_, err = Preflight{Probe: nv}.Check(t.Context(), Spec{Kind: VLLM, Model: "m", Env: map[string]string{"CUDA_VISIBLE_DEVICES": "0"}})
	require.ErrorContains(t, err, "on GPU 0 (nvidia-smi); stop it", "the process on GPU 1 is not GPU 0's")
	_, err = Preflight{Probe: nv}.Check(t.Context(), Spec{Kind: VLLM, Model: "m", Env: map[string]string{"CUDA_VISIBLE_DEVICES": "1"}})
	require.NoError(t, err, "GPU 1 is idle")
}
