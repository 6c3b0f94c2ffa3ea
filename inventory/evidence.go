package inventory

import (
	"fmt"
	"regexp"
	"strings"
)

// The evidence that corrects what a kernel's name or rule says, each a
// class of kernel rather than one trace's quirk:
//
//   - the op that launched it, when that op is a whole computation (a
//     convolution, a fused MoE): every kernel inside is that computation,
//     whatever its name (an SGEMM inside cuDNN's convolution, the batched
//     GEMMs a fused-MoE op launches);
//   - the phase of the steps it runs in: an attention kernel that runs in
//     decode steps is decode attention whatever its family name says, one
//     that runs in prefill steps prefill attention;
//   - the precision a GEMM's own spelling gives (Tensile's data type, a
//     16-bit type word, a float template argument);
//   - the provider: the library that owns the kernel's code (its
//     namespace) before the rule's guess, then the custom-op library that
//     launched it, else "unknown"; the device vendor bounds it.

// Unknown is the provider of a kernel whose library cannot be told.
const Unknown = "unknown"

// MoEFinalize is the category of the kernels that bring the experts'
// outputs back to the tokens (scatter, weight by the router, sum).
const MoEFinalize = "MoE finalize / combine"

// explain collects the evidence that decided a kernel's labels, for
// `kernels --explain`; a nil *explain records nothing.
type explain struct{ lines []string }

func (e *explain) note(format string, args ...any) {
	if e != nil {
		e.lines = append(e.lines, fmt.Sprintf(format, args...))
	}
}

// containerOps are the ops whose kernels are all one computation.
var (
	convOp = regexp.MustCompile(`^aten::(_?convolution\w*|conv\d?d|conv_transpose\d?d|cudnn_convolution\w*|miopen_\w*convolution\w*|mkldnn_convolution|_convolution_mode|slow_conv\w*|thnn_conv\w*)$`)
	moeOp  = regexp.MustCompile(`(^|[:_.])(fused_moe\w*|moe_forward\w*|fused_experts\w*|trtllm_\w*moe\w*|\w*_moe_gemm\w*|ck_moe\w*|fmoe\w*|asm_moe\w*|cutlass_moe\w*|moe_mlp|moe_wna16\w*|flashinfer_\w*moe\w*|cutlass_fused_moe\w*)$`)
)

// byContainerOp returns the category a whole-computation op gives a kernel
// it launched, "" when the op is not one.
func byContainerOp(op, cat string) string {
	switch {
	case op == "":
		return ""
	case convOp.MatchString(op):
		return "Convolution"
	case moeOp.MatchString(op):
		switch {
		case strings.HasPrefix(cat, "MoE "), cat == MoEFinalize:
			return cat // the name says which part of the MoE
		case cat == "Softmax":
			return "MoE gate"
		case cat == "Reduction / scan / sort":
			return "MoE sort / align"
		}
		return "MoE expert GEMM"
	}
	return ""
}

// partOps are the ops of one part of a MoE layer, by the words of their
// names (vLLM's _moe_C::moe_sum, moe_align_block_size, topk_softmax,
// SGLang's sgl_kernel:: ops of the same names).
var partOps = []struct {
	re       *lazyRegexp
	category string
}{
	{lazyRE(`_(moe_sum|moe_unpermute|moe_finalize\w*|moe_combine|moe_reduce\w*)_`), MoEFinalize},
	{lazyRE(`_(moe_align\w*|moe_sort\w*|moe_permute|moe_dispatch|moe_count\w*)_`), "MoE sort / align"},
	{lazyRE(`_(topk_softmax|topk_sigmoid|grouped_topk|biased_grouped_topk|moe_fused_gate|moe_gate)_`), "MoE gate"},
}

// genericCategory are the categories of a kernel that says only how it
// computes, not what: the op that launched it says what.
var genericCategory = map[string]bool{"Reduction / scan / sort": true, "Elementwise / copy": true, "Softmax": true, Other: true}

// byPartOp returns the MoE part an op of one part gives a generic kernel
// it launched (ATen's sum inside moe_sum, a fill inside moe_align), ""
// otherwise.
func byPartOp(op, cat string) string {
	if op == "" || !genericCategory[cat] || strings.HasPrefix(op, "aten::") {
		return ""
	}
	w := nameWords(op)
	for _, p := range partOps {
		if p.re.MatchString(w) {
			return p.category
		}
	}
	return ""
}

// Attention categories by phase.
const (
	attnPrefillCat = "Flash attention (prefill)"
	attnDecodeCat  = "Paged attention (decode)"
)

// GEMM precision categories.
const (
	gemm16 = "Dense GEMM (BF16)"
	gemm32 = "Dense GEMM (FP32/TF32)"
	gemm8  = "Dense GEMM (FP8/FP4)"
)

var (
	// Tensile (rocBLAS, hipBLASLt) names the data type after the two
	// operand layouts: S/D single/double, B bf16, H half, F8/B8/I8 8-bit.
	tensileType = regexp.MustCompile(`^Cijk_A[a-z]+_B[a-z]+_([A-Z][A-Z0-9]*)`)
	word16      = lazyRE(`bf16|fp16|f16|bfloat16|half|hgemm|_h\d{3,5}gemm|__nv_bfloat16|__hip_bfloat16`)
	floatArg    = lazyRE(`^[\w:]+<float,`)
)

// gemmPrecisionEvidence is the precision a GEMM kernel's spelling states,
// "" when it states none.
func gemmPrecisionEvidence(name string) string {
	if m := tensileType.FindStringSubmatch(name); m != nil {
		t := m[1]
		switch {
		case strings.HasPrefix(t, "F8"), strings.HasPrefix(t, "B8"), strings.HasPrefix(t, "I8"):
			return gemm8
		case t[0] == 'S' || t[0] == 'D':
			return gemm32
		case t[0] == 'B' || t[0] == 'H':
			return gemm16
		}
	}
	full := readableName(name)
	words := nameWords(full)
	if lowPrecision.MatchString(words) {
		return gemm8
	}
	lower := strings.ToLower(full)
	if word16.MatchString(lower) {
		return gemm16
	}
	if floatArg.MatchString(strings.TrimPrefix(full, "void ")) || fp32GEMM.MatchString(words) && !segmentedLoRA(words) {
		return gemm32
	}
	return ""
}

// namespaces are the code owners a kernel's own namespace names.
var namespaces = map[string]string{
	"at": "PyTorch", "c10": "PyTorch", "at_cuda_detail": "PyTorch",
	"ck_tile": "ck_tile", "ck": "CK",
	"aiter":   "aiter",
	"vllm":    "vLLM custom ops",
	"sgl_hip": "SGLang custom ops", "sglang": "SGLang custom ops", "sgl_kernel": "SGLang custom ops",
	"cutlass": "CUTLASS", "cute": "CUTLASS",
	"flashinfer": "FlashInfer",
	"flash":      "FlashAttention", "pytorch_flash": "FlashAttention",
	"cudnn": "cuDNN",
	"cub":   "CUB", "hipcub": "rocPRIM", "rocprim": "rocPRIM",
	"fbgemm_gpu":   "FBGEMM",
	"tensorrt_llm": "TensorRT-LLM", "tllm": "TensorRT-LLM",
	"miopen":    "MIOpen",
	"triton":    "Triton",
	"c10d":      "PyTorch", // symmetric-memory collectives (c10d::symmetric_memory)
	"deep_gemm": "DeepGEMM",
	"deep_ep":   "DeepEP",
}

// wrapperOwners are the libraries that launch their kernels through
// CUTLASS's generic entry points (cutlass::device_kernel<Kernel>): the
// kernel type's namespace names the owner, not cutlass::.
var wrapperOwners = map[string]bool{"FlashAttention": true, "FlashInfer": true, "TensorRT-LLM": true}

// cutlassLibraryName is a kernel of CUTLASS's generated operation names
// (cutlass_80_tensorop_bf16_s16816gemm_…) entered through cutlass::Kernel2,
// as cuBLAS and cuBLASLt ship them: PyTorch's GEMM ops reach them through
// cuBLAS, and the CUTLASS library itself enters through cutlass::Kernel.
var cutlassLibraryName = regexp.MustCompile(`^cutlass::Kernel2<cutlass_\d+_`)

// cuteDSLOwners are the Python packages whose CuTe-DSL kernels a trace
// names: the DSL writes kernel_cutlass_<function>_<module path without its
// dots><class>_…, so the module, not "cutlass", names the owner.
var cuteDSLOwners = []struct{ pkg, provider string }{
	{"flashinfer", "FlashInfer"}, {"flash_attn", "FlashAttention"}, {"tensorrt_llm", "TensorRT-LLM"},
	{"sglang", "SGLang custom ops"}, {"vllm", "vLLM custom ops"},
}

// cuteDSLOwner is the library of a CuTe-DSL kernel from the rest of its
// name: a package the owners list knows, else CUTLASS (its examples and
// __main__ scripts).
func cuteDSLOwner(rest string) string {
	for _, o := range cuteDSLOwners {
		if strings.Contains(rest, o.pkg) {
			return o.provider
		}
	}
	return "CUTLASS"
}

// namespaceProvider is the library a kernel function's own namespace names
// (not its template arguments'), "" when it has none the table knows.
func namespaceProvider(demangled string) string {
	s := strings.TrimPrefix(demangled, "void ")
	if strings.HasPrefix(s, "triton_") {
		return "Triton" // Inductor's and Triton's own kernel names
	}
	if cutlassLibraryName.MatchString(s) {
		return "cuBLAS / cuBLASLt"
	}
	if rest, ok := strings.CutPrefix(s, "kernel_cutlass_"); ok {
		return cuteDSLOwner(rest)
	}
	head := s
	if i := strings.IndexAny(s, "<("); i >= 0 {
		head = s[:i]
	}
	ns, _, ok := strings.Cut(head, "::")
	if !ok {
		return ""
	}
	if ns == "flash" && strings.Contains(head, "_mla") {
		// FlashMLA keeps FlashAttention's namespace for its MLA kernels
		// (flash::flash_fwd_splitkv_mla_kernel).
		return "FlashMLA"
	}
	if ns == "cutlass" && len(head) < len(s) && s[len(head)] == '<' {
		// cutlass::device_kernel<flash::FlashAttnFwdSm90<…>>: FA3's kernel.
		if inner, _, ok := strings.Cut(s[len(head)+1:], "::"); ok {
			if p := namespaces[inner]; wrapperOwners[p] {
				return p
			}
		}
	}
	return namespaces[ns]
}

// opProviders are the custom-op namespaces whose ops launch their own
// library's kernels: a kernel whose name says no owner takes its op's.
var opProviders = []struct{ prefix, provider string }{
	{"aiter::", "aiter"},
	{"vllm::", "vLLM custom ops"}, {"_C::", "vLLM custom ops"}, {"_C_", "vLLM custom ops"}, {"_moe_C::", "vLLM custom ops"}, {"_rocm_C::", "vLLM custom ops"},
	{"sgl_kernel::", "SGLang custom ops"},
	{"trtllm::", "TensorRT-LLM"}, {"tensorrt_llm::", "TensorRT-LLM"},
	{"flashinfer::", "FlashInfer"},
	{"fbgemm::", "FBGEMM"},
}

// vendorOf is the vendor of the libraries that run on one vendor's GPUs
// only; counterpart is the same library's other-vendor build.
var (
	vendorOf = map[string]string{
		"RCCL": "amd", "rocBLAS / hipBLASLt": "amd", "CK": "amd", "ck_tile": "amd", "aiter": "amd", "aiter ASM": "amd",
		"MIOpen": "amd", "HIP runtime": "amd", "rocPRIM": "amd",
		"NCCL": "nvidia", "cuBLAS / cuBLASLt": "nvidia", "CUTLASS": "nvidia", "cuDNN": "nvidia", "TensorRT-LLM": "nvidia", "CUB": "nvidia", "DeepGEMM": "nvidia",
		"DeepEP": "nvidia", "FlashMLA": "nvidia",
	}
	counterpart = map[string]string{"NCCL": "RCCL", "RCCL": "NCCL", "CUB": "rocPRIM", "rocPRIM": "CUB"}
)

// boundByVendor keeps a provider that can run on the trace's vendor: a
// library of the other vendor becomes its counterpart, else unknown.
func boundByVendor(provider, vendor string) string {
	v, ok := vendorOf[provider]
	if vendor == "" || !ok || v == vendor {
		return provider
	}
	if cp, ok := counterpart[provider]; ok {
		return cp
	}
	return Unknown
}
