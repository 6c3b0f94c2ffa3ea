package profiling

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/profile-model/profile-model/profiling/engine"
	"github.com/profile-model/profile-model/profiling/tokenizer"
)

// Missing lists what this machine lacks to run the sweep on a real
// engine, one reason each: the engine's executable (and, for the Python
// servers, its package), the GPU (its vendor's tool), the model weights
// (a local directory or the Hugging Face cache). Empty: everything is
// there. spec is the engine as it will be started (EngineSpec).
func (s *Sweep) Missing(ctx context.Context, spec engine.Spec) []string {
	var out []string
	if spec.Kind == engine.Sim || spec.Kind == engine.None {
		return nil
	}
	cmd, err := spec.Command()
	if err != nil {
		return []string{fmt.Sprintf("engine %s: %v", spec.Kind, err)}
	}
	exe, err := exec.LookPath(cmd.Path)
	switch {
	case err != nil:
		out = append(out, fmt.Sprintf("engine executable: %s is not on PATH (%s)", cmd.Path, engineHint(spec.Kind)))
	case spec.Kind == engine.ATOM || spec.Kind == engine.SGLang:
		module := map[engine.Kind]string{engine.ATOM: "atom", engine.SGLang: "sglang"}[spec.Kind]
		if msg := importCheck(ctx, exe, module, cmd.Dir); msg != "" {
			out = append(out, fmt.Sprintf("engine executable: %s cannot import %s (%s): %s", exe, module, engineHint(spec.Kind), msg))
		}
	}
	tool, ok := engine.HasGPUTooling()
	want := gpuTool(s.GPU)
	switch {
	case !ok:
		out = append(out, "GPU: neither rocm-smi nor nvidia-smi is on PATH")
	case want != "" && tool != want:
		if _, err := exec.LookPath(want); err != nil {
			out = append(out, fmt.Sprintf("GPU: the goldens were recorded on %s and %s is not on PATH (this machine has %s)", s.GPU, want, tool))
		}
	}
	if where := modelWeights(s.Model, spec.Dir); where != "" {
		out = append(out, "model weights: "+where)
	}
	return out
}

func engineHint(k engine.Kind) string {
	switch k {
	case engine.ATOM:
		return "install ATOM, or point PROFILE_MODEL_ATOM_EXE at the Python that has it"
	case engine.VLLM:
		return "install vLLM, or point PROFILE_MODEL_VLLM_EXE at its vllm command"
	case engine.SGLang:
		return "install SGLang, or point PROFILE_MODEL_SGLANG_EXE at the Python that has it"
	}
	return ""
}

// gpuTool is the vendor tool of a device name as traces give it ("AMD
// Instinct MI355X", "NVIDIA H100 80GB HBM3"); "" when it names no vendor.
func gpuTool(gpu string) string {
	switch g := strings.ToLower(gpu); {
	case strings.HasPrefix(g, "amd"):
		return engine.ROCmSMI
	case strings.HasPrefix(g, "nvidia"):
		return engine.NvidiaSMI
	}
	return ""
}

// importCheck runs python -c "import MODULE" and returns why it failed.
func importCheck(ctx context.Context, python, module, dir string) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-c", "import "+module)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		return fmt.Sprintf("%v: %s", err, lines[len(lines)-1])
	}
	return ""
}

// modelWeights says why the model's weights are not found, or "" when
// they are: a local directory holding *.safetensors (or *.bin), or the
// same in the model's snapshot of the Hugging Face cache.
func modelWeights(model, dir string) string {
	var dirs []string
	for _, d := range []string{model, filepath.Join(dir, model)} {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			dirs = append(dirs, d)
		}
	}
	tok, err := tokenizer.Find(model, "")
	if err == nil {
		dirs = append(dirs, filepath.Dir(tok))
	}
	for _, d := range dirs {
		for _, pat := range []string{"*.safetensors", "*.bin"} {
			if m, _ := filepath.Glob(filepath.Join(d, pat)); len(m) > 0 {
				return ""
			}
		}
	}
	if len(dirs) > 0 {
		return fmt.Sprintf("%s: no *.safetensors or *.bin in %s", model, strings.Join(dirs, ", "))
	}
	return fmt.Sprintf("%s is neither a local directory nor in the Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub): download it first", model)
}
