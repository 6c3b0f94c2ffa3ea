package inventory

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// readableName returns the readable form of a kernel name: a leading
// "void " is dropped and an Itanium-mangled name (_Z...) is demangled. Names
// that are not mangled, or that the demangler rejects, come back as written.
func readableName(name string) string {
	name = strings.TrimPrefix(name, "void ")
	if strings.HasPrefix(name, "_Z") {
		if d, err := demangle.ToString(name); err == nil {
			name = strings.TrimPrefix(d, "void ")
		}
	}
	return name
}

// ShortName is the kernel name for tables: demangled, without template
// arguments, parameter list or return type ("ck_tile::kentry",
// "at::native::vectorized_elementwise_kernel"). Copies and memsets
// ("Memcpy HtoD (Host -> Device)") keep their name.
func ShortName(name string) string {
	if strings.HasPrefix(name, "Memcpy") || strings.HasPrefix(name, "Memset") {
		return name
	}
	d := readableName(name)
	if d == name && strings.HasPrefix(name, "_Z") {
		// The demangler gave up (a truncated name, a new ABI tag): the
		// length-prefixed identifiers at the front still name the kernel.
		if p := mangledPrefix(name); p != "" {
			return p
		}
	}
	if strings.HasPrefix(name, "_Z") {
		if s, err := demangle.ToString(name, demangle.NoParams, demangle.NoTemplateParams); err == nil {
			d = s
		}
	}
	if i := strings.Index(d, "kentry<"); i >= 0 && strings.HasPrefix(stripBrackets(d), "ck_tile::kentry") {
		// ck_tile launches every kernel through kentry<N, Kernel, ...>: the
		// kernel is the first type argument.
		if k := firstTypeArg(d[i+len("kentry<"):]); k != "" {
			return k
		}
	}
	s := stripBrackets(d)
	if strings.HasPrefix(s, "at::native::") && (strings.HasSuffix(s, "_kernel") || strings.HasSuffix(s, "_unroll")) {
		// ATen's generic kernels say what they compute in a functor argument.
		if f := atenFunctor(d); f != "" {
			return s + "<" + f + ">"
		}
	}
	// A return type or "std::enable_if<...>::type" prefix ends at the last
	// space outside brackets; the kernel's own name follows it.
	if i := strings.LastIndexByte(s, ' '); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return d
	}
	return s
}

// firstTypeArg returns the first template argument of args (the text after
// the opening '<') that is not a number, without its own brackets.
func firstTypeArg(args string) string {
	depth, start := 0, 0
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case '<', '(':
			depth++
		case '>', ')':
			if depth == 0 {
				return typeArg(args[start:i])
			}
			depth--
		case ',':
			if depth == 0 {
				if t := typeArg(args[start:i]); t != "" {
					return t
				}
				start = i + 1
			}
		}
	}
	return ""
}

func typeArg(a string) string {
	a = strings.TrimSpace(a)
	if a == "" || strings.IndexByte("0123456789-(", a[0]) >= 0 || a == "true" || a == "false" {
		return ""
	}
	return stripBrackets(a)
}

// stripBrackets removes every <...> and (...) group, keeping
// "(anonymous namespace)" readable as "{anon}".
func stripBrackets(s string) string {
	s = strings.ReplaceAll(s, "(anonymous namespace)", "{anon}")
	var b strings.Builder
	b.Grow(len(s))
	angle, paren := 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '<':
			angle++
		case c == '>' && angle > 0:
			if i > 0 && s[i-1] == '-' && paren > 0 { // "->" inside a parameter
				continue
			}
			angle--
		case c == '(':
			paren++
		case c == ')' && paren > 0:
			paren--
		case angle == 0 && paren == 0:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}

// compatShortNames are the compat script's short names (package doc):
// substring rules on the name as written, first match wins, as that
// script does.
var compatShortNames = [...]struct{ sub, short string }{
	{"pa_bf16", "PA (paged_attn)"},
	{"kernel_gemm_xdl_cshuffle_v3", "GEMM_FP8 (CK dense)"},
	{"kernel_moe_gemm", "MoE_GEMM (CK)"},
	{"dynamic_per_group_scaled_quant", "FP8_quant"},
	{"add_rmsnorm_quant", "RMSNorm+Quant"},
	{"grouped_topk", "MoE_gate (topk)"},
	{"MoeSortingMultiPhaseKernel_P0", "MoE_sort_P0"},
	{"MoeSortingMultiPhaseKernel_P23", "MoE_sort_P23"},
	{"MoeSortingKernel", "MoE_sort"},
	{"Cijk_", "GEMM_BF16 (rocBLAS)"},
	{"triton_poi_fused__to_copy", "Triton_copy"},
	{"triton_poi_fused_embedding", "Embedding"},
	{"triton_red_fused", "RMSNorm_triton"},
	{"kn_entry_2c_sbhd", "RoPE"},
	{"reshape_and_cache", "KV_cache_quant"},
	{"fmoe_bf16_blockscaleFp8", "MoE_GEMM_fused (ASM)"},
	{"MoeFlatmm", "MoE_GEMM_flatmm"},
	{"mix_sample", "Sampling"},
	{"fmha_fwd", "FlashAttn"},
	{"wv_splitk", "PA_reduce"},
}

// compatShortName is the short name the compat script (package doc) gives a
// kernel: the first matching substring rule, else the first 50 bytes of the
// name as written. The compatible layer CSV uses exactly these.
func compatShortName(name string) string {
	for _, r := range compatShortNames {
		if strings.Contains(name, r.sub) {
			return r.short
		}
	}
	n := 0
	for i := range name { // 50 characters, as Python's name[:50]
		if n == 50 {
			return name[:i]
		}
		n++
	}
	return name
}

// mangledPrefix reads the nested name at the front of an Itanium name
// ("_ZN5aiter9pa_kernelI..." -> "aiter::pa_kernel"), or "".
func mangledPrefix(name string) string {
	s := strings.TrimPrefix(name, "_Z")
	s = strings.TrimPrefix(s, "N")
	var parts []string
	for len(s) > 0 && s[0] >= '0' && s[0] <= '9' {
		n := 0
		for len(s) > 0 && s[0] >= '0' && s[0] <= '9' {
			n = n*10 + int(s[0]-'0')
			s = s[1:]
			if n > len(name) {
				return ""
			}
		}
		if n == 0 || n > len(s) {
			break
		}
		parts = append(parts, s[:n])
		s = s[n:]
	}
	return strings.Join(parts, "::")
}

// atenFunctorRE finds the functors and ops inside ATen kernel templates.
var atenFunctorRE = lazyRE(`[A-Za-z0-9_]*(?:_kernel_cuda|Functor[A-Za-z0-9_]*|Ops|_kernel_impl|_functor|_kernel)\b`)

// atenFunctor is the first specific functor of an ATen kernel's template
// arguments ("neg_kernel_cuda", "CUDAFunctor_add", "ArgMaxOps"), or "".
func atenFunctor(demangled string) string {
	i := strings.IndexByte(demangled, '<')
	if i < 0 {
		return ""
	}
	for _, m := range atenFunctorRE.FindAllString(demangled[i:], -1) {
		switch m {
		case "BinaryFunctor", "AUnaryFunctor", "BUnaryFunctor", "UnaryFunctor", "gpu_kernel_impl", "gpu_kernel_impl_nocast", "func_wrapper_t":
			continue
		}
		return m
	}
	return ""
}
