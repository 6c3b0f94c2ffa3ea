package inventory

import (
	"fmt"
	"slices"
	"strings"

	"github.com/profile-model/profile-model/internal/modelconfig"
)

// Where a position's role comes from.
const (
	RoleFromCapture  = "capture"  // the module that launched the kernel, from a capture trace
	RoleFromInferred = "inferred" // the layer's structure (and the model config when known)
)

// Roles a position can have. Quantisation, copies and all-reduces are
// named by the GEMM they feed or follow ("before QKV", "after O-proj").
const (
	RoleAttention = "attention"
	RoleAttnRed   = "attn reduce"
	RoleQKV       = "QKV"
	RoleInProj    = "in_proj"  // a linear-attention layer's input projection
	RoleOutProj   = "out_proj" // and its output projection
	RoleOProj     = "O-proj"
	RoleQKNorm    = "q/k norm"
	RoleQNorm     = "q_norm"
	RoleKNorm     = "k_norm"
	RoleRoPE      = "RoPE"
	RoleKVWrite   = "KV cache write"
	RoleInNorm    = "input norm"
	RolePostNorm  = "post-attn norm"
	RoleRouter    = "router"
	RoleTopK      = "top-k"
	RoleSort      = "sort"
	RoleGateUp    = "gate_up"
	RoleDown      = "down"
	RoleExperts   = "experts (fused)"
	RoleSharedGU  = "shared gate_up"
	RoleSharedDn  = "shared down"
	RoleShared    = "shared expert"
	RoleAct       = "activation"
	RoleMLP       = "MLP"
	// Latent attention (MLA): the query's down and up projections, the
	// KV's down projection (with the key's RoPE part), both fused, the
	// KV's up projection (prefill), the norms of the two latents, and the
	// per-head products absorbed into decode attention (W_UK before it,
	// W_UV after it).
	RoleQA     = "q_a_proj"
	RoleQB     = "q_b_proj"
	RoleKVA    = "kv_a_proj"
	RoleQKVA   = "qkv_a_proj"
	RoleKVB    = "kv_b_proj"
	RoleQANorm = "q_a norm"
	RoleKVNorm = "kv_a norm"
	RoleUK     = "W_UK"
	RoleUV     = "W_UV"
)

// kind is the structural kind of a position, from its category.
type kind uint8

const (
	kOther kind = iota
	kAttn
	kReduce
	kGEMM
	kMoEGEMM
	kGate
	kSort
	kNorm
	kQuant
	kRoPE
	kKV
	kAct
	kAllReduce
	kCopy
	// kFinish completes a GEMM without multiplying: a split-K reduce
	// after it or the fill its accumulation starts from (finisherOf).
	kFinish
)

// kindOf reads a category loosely (by its words), so that renamed or
// refined categories keep their structural kind.
func kindOf(category string) kind {
	c := strings.ToLower(category)
	switch {
	case strings.Contains(c, "all-reduce") || strings.Contains(c, "collective"):
		return kAllReduce
	case strings.Contains(c, "attention") && strings.Contains(c, "reduce"):
		return kReduce
	case strings.Contains(c, "attention"):
		return kAttn
	case strings.Contains(c, "moe") && (strings.Contains(c, "gemm") || strings.Contains(c, "finalize") || strings.Contains(c, "combine")):
		// The finalize (scatter back to tokens) sits with the experts;
		// isFinalize names its role.
		return kMoEGEMM
	case strings.Contains(c, "moe") && strings.Contains(c, "gate"):
		return kGate
	case strings.Contains(c, "moe") && (strings.Contains(c, "sort") || strings.Contains(c, "align")):
		return kSort
	case strings.Contains(c, "gemm"):
		return kGEMM
	case strings.Contains(c, "norm"):
		return kNorm
	case strings.Contains(c, "quant"):
		return kQuant
	case strings.Contains(c, "rope") || strings.Contains(c, "rotary"):
		return kRoPE
	case strings.Contains(c, "kv cache"):
		return kKV
	case strings.Contains(c, "activation"):
		return kAct
	case strings.Contains(c, "copy") || strings.Contains(c, "elementwise"):
		return kCopy
	}
	return kOther
}

// AssignRoles names each position of the table by its role in the layer:
// from the capture trace's module when the position has one, else from
// the layer's structure — the order of the positions relative to
// attention, the norms, the MoE routing and the GEMMs around them — with
// arch (nil when unknown) saying whether the model has shared experts.
// Positions it cannot place keep an empty role.
func (t *LayerTable) AssignRoles(arch *modelconfig.Architecture) {
	kinds := 0
	for _, p := range t.Positions {
		kinds = max(kinds, p.LayerKind+1)
	}
	for k := range kinds {
		var idx []int
		for i, p := range t.Positions {
			if p.LayerKind == k {
				idx = append(idx, i)
			}
		}
		ps := make([]*Position, len(idx))
		for i, j := range idx {
			ps[i] = &t.Positions[j]
		}
		assignRoles(ps, arch)
	}
}

// kindOfPos is a position's structural kind: its category's, except that
// a kernel whose name says it finishes a GEMM (split-K reduce, fill) is
// kFinish whatever its category, and a linear-attention kernel (a
// recurrent state update: Gated DeltaNet, Mamba) is the layer's attention
// when its category does not say so.
func kindOfPos(p *Position) kind {
	if finisherOf(p.Kernel) != finNone {
		return kFinish
	}
	k := kindOf(p.Category)
	if k != kAttn && k != kReduce && isLinearAttention(p.Kernel) {
		return kAttn
	}
	if n := strings.ToLower(p.Kernel); k != kMoEGEMM && (strings.Contains(n, "moe_sum") || strings.Contains(n, "moe_finalize")) {
		// The experts' sum (vLLM's moe_sum, SGLang's moe_sum_reduce)
		// closes the MoE block whatever its category.
		return kMoEGEMM
	}
	return k
}

// How a kernel finishes a GEMM.
const (
	finNone   = iota
	finReduce // runs after the GEMM: sums its partial products
	finFill   // runs before it: the output it accumulates into
)

// finisherOf says whether a kernel completes a GEMM rather than
// multiplying, by the names the GEMM libraries give these kernels:
// cuBLASLt's split-K reduction (cublasLt::splitKreduce_kernel, launched
// after a split-K nvjet or cutlass GEMM), CUTLASS's
// cutlass::reduction::kernel::ReduceSplitK, and hipBLASLt/Tensile's
// global-split-U reduction, whose name ends in _PostGSU<n>_VW<n> (Tensile's
// ContractionSolution::outputConversionKernelName; ROCm/hipBLASLt
// tensilelite/src/ContractionSolution.cpp at 84381fc), with the beta-only
// kernel that initialises the output before such a GEMM.
func finisherOf(name string) int {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "splitkreduce"), strings.Contains(n, "reducesplitk"),
		strings.Contains(n, "splitk_reduce"), strings.Contains(n, "_postgsu"):
		return finReduce
	case strings.Contains(n, "betaonly"):
		return finFill
	}
	return finNone
}

// isLinearAttention says a kernel updates a linear-attention or
// state-space layer's recurrent state, the token mixer of a hybrid
// model's linear layers: flash-linear-attention's gated delta rule
// kernels as vLLM and SGLang carry them (fused_recurrent_gated_delta_rule_fwd_kernel,
// chunk_gated_delta_rule_*, fused_sigmoid_gating_delta_rule_update; vllm
// vllm/model_executor/layers/fla/ops/), and Mamba's selective scan and
// state update.
func isLinearAttention(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "delta_rule") || strings.Contains(n, "selective_scan") ||
		strings.Contains(n, "selective_state_update") || strings.Contains(n, "lightning_attn")
}

func assignRoles(ps []*Position, arch *modelconfig.Architecture) {
	n := len(ps)
	roles := make([]string, n)
	inferLayerRoles(ps, arch, roles)
	for i, p := range ps {
		p.Role, p.RoleSource = roles[i], ""
		if roles[i] != "" {
			p.RoleSource = RoleFromInferred
		}
		if r := roleOfModule(p.Module, kindOf(p.Category)); r != "" {
			p.Role, p.RoleSource = r, RoleFromCapture
		}
	}
}

// inferLayerRoles fills roles from the structure of one layer kind. The
// positions form a cycle (a table may start anywhere in the layer): from
// the attention kernel on, the first GEMM is the O projection and the
// last one the QKV projection (the one feeding attention); what lies
// between them is the MLP (dense or MoE), where the activation between
// two GEMMs makes them gate_up and down. Kernels that finish a GEMM (a
// split-K reduce, the fill before it) take no GEMM role of their own:
// they join the GEMM they complete. Norms, quantisations and copies are
// placed by the region they fall in.
func inferLayerRoles(ps []*Position, arch *modelconfig.Architecture, roles []string) {
	n := len(ps)
	pk := make([]kind, n)
	a := -1
	for i, p := range ps {
		pk[i] = kindOfPos(p)
		if a < 0 && pk[i] == kAttn {
			a = i
		}
	}
	if a < 0 {
		return
	}
	// order[k] is the index of the k-th position after attention.
	order := make([]int, n)
	ks := make([]kind, n)
	for k := range n {
		order[k] = (a + k) % n
		ks[k] = pk[order[k]]
	}
	set := func(k int, r string) { roles[order[k]] = r }
	var gemms []int
	for k := 1; k < n; k++ {
		if ks[k] == kGEMM {
			gemms = append(gemms, k)
		}
	}
	// adjacent says nothing but GEMM finishers lies between x and y.
	adjacent := func(x, y int) bool {
		for k := x + 1; k < y; k++ {
			if ks[k] != kFinish {
				return false
			}
		}
		return true
	}
	set(0, RoleAttention)
	oproj, qkv := n, n // the O projection and the QKV projection, as indices into order
	if g := len(gemms); g >= 5 && adjacent(gemms[g-2], gemms[g-1]) && adjacent(gemms[g-3], gemms[g-2]) {
		// Three GEMMs back to back before attention: unfused q, k, v.
		oproj, qkv = gemms[0], gemms[g-3]
		set(oproj, RoleOProj)
		set(gemms[g-3], "Q")
		set(gemms[g-2], "K")
		set(gemms[g-1], "V")
	} else if len(gemms) >= 2 && isLinearAttention(ps[a].Kernel) {
		// Linear attention (Gated DeltaNet): its input projections are the
		// GEMMs back to back before it (in_proj_qkvz and in_proj_ba), its
		// output projection the first after it.
		g := len(gemms) - 1
		for g > 1 && adjacent(gemms[g-1], gemms[g]) {
			g--
		}
		oproj, qkv = gemms[0], gemms[g]
		set(oproj, RoleOutProj)
		for i, k := range gemms[g:] {
			if len(gemms) == g+1 {
				set(k, RoleInProj)
			} else {
				set(k, fmt.Sprintf("%s %d", RoleInProj, i+1))
			}
		}
	} else if len(gemms) >= 2 {
		oproj, qkv = gemms[0], gemms[len(gemms)-1]
		set(oproj, RoleOProj)
		set(qkv, RoleQKV)
	} else if len(gemms) == 1 {
		// One dense GEMM: before the MLP it projects out, after it in.
		k := gemms[0]
		mlpAfter := false
		for j := k + 1; j < n; j++ {
			if ks[j] == kMoEGEMM || ks[j] == kGate {
				mlpAfter = true
			}
		}
		if mlpAfter {
			oproj = k
			set(k, RoleOProj)
		} else {
			qkv = k
			set(k, RoleQKV)
		}
	}
	// The MLP region: between the O projection and the QKV projection.
	lo, hi := min(oproj, n), min(qkv, n)
	if oproj == n {
		lo = 0
	}
	moe := arch != nil && arch.MoE
	for k := lo + 1; k < hi; k++ {
		moe = moe || ks[k] == kMoEGEMM || ks[k] == kGate || ks[k] == kSort
	}
	firstMLP, lastMLP := -1, -1
	if moe {
		gate := -1
		var experts, dense []int
		for k := lo + 1; k < hi; k++ {
			switch ks[k] {
			case kGate:
				if gate < 0 {
					gate = k
				}
				set(k, RoleTopK)
			case kSort:
				set(k, RoleSort)
			case kMoEGEMM:
				if isFinalize(ps[order[k]]) {
					set(k, "finalize")
				} else {
					experts = append(experts, k)
				}
			case kGEMM:
				dense = append(dense, k)
			}
		}
		// The router: the dense GEMM before the top-k (or before the first
		// expert GEMM when the top-k is fused away).
		first := gate
		if first < 0 && len(experts) > 0 {
			first = experts[0]
		}
		if len(dense) > 0 && first >= 0 && dense[0] < first {
			set(dense[0], RoleRouter)
			dense = dense[1:]
		}
		switch len(experts) {
		case 0:
		case 1:
			set(experts[0], RoleExperts)
		case 2:
			set(experts[0], RoleGateUp)
			set(experts[1], RoleDown)
		default:
			for i, k := range experts {
				set(k, fmt.Sprintf("experts %d", i+1))
			}
		}
		shared := arch == nil || arch.SharedExperts > 0 || arch.SharedIntermediate > 0
		switch {
		case len(dense) == 0:
		case !shared:
			for i, k := range dense {
				set(k, fmt.Sprintf("dense GEMM %d", i+1))
			}
		case len(dense) == 1:
			set(dense[0], RoleShared)
		default:
			set(dense[0], RoleSharedGU)
			set(dense[len(dense)-1], RoleSharedDn)
			for i, k := range dense[1 : len(dense)-1] {
				set(k, fmt.Sprintf("shared GEMM %d", i+2))
			}
		}
		for k := lo + 1; k < hi; k++ {
			if ks[k] == kGate || ks[k] == kSort || ks[k] == kMoEGEMM || ks[k] == kGEMM {
				if firstMLP < 0 {
					firstMLP = k
				}
				lastMLP = k
			}
		}
	} else {
		var dense []int
		for k := lo + 1; k < hi; k++ {
			if ks[k] == kGEMM {
				dense = append(dense, k)
			}
		}
		denseMLPRoles(dense, ks, set)
		if len(dense) > 0 {
			firstMLP, lastMLP = dense[0], dense[len(dense)-1]
		}
	}
	// Norms: after the O projection and before the MLP, the post-attention
	// norm; after the MLP and before QKV, the next layer's input norm;
	// between QKV and attention, the q/k norms.
	var qk []int
	for k := 1; k < n; k++ {
		if ks[k] != kNorm {
			continue
		}
		switch {
		case k > qkv:
			qk = append(qk, k)
		case firstMLP >= 0 && k < firstMLP && k > oproj:
			set(k, RolePostNorm)
		case lastMLP >= 0 && k > lastMLP:
			set(k, RoleInNorm)
		case firstMLP < 0 && k > oproj:
			if roles[order[k]] == "" && !hasRole(roles, order, RolePostNorm) {
				set(k, RolePostNorm)
			} else {
				set(k, RoleInNorm)
			}
		}
	}
	switch len(qk) {
	case 1:
		set(qk[0], RoleQKNorm)
	case 2:
		set(qk[0], RoleQNorm)
		set(qk[1], RoleKNorm)
	}
	// A GEMM's finishers take its role: a reduce the GEMM's before it, a
	// fill the one after it.
	for k := 1; k < n; k++ {
		if ks[k] != kFinish {
			continue
		}
		if finisherOf(ps[order[k]].Kernel) == finFill {
			if next := nextGEMMRole(roles, order, ks, k); next != "" {
				set(k, "before "+next)
			}
		} else if prev := prevGEMM(roles, order, ks, k); prev != "" {
			set(k, prev+RoleReduceSuffix)
		}
	}
	// The rest by what it does, and what it feeds or follows.
	for k := 1; k < n; k++ {
		if roles[order[k]] != "" {
			continue
		}
		switch ks[k] {
		case kReduce:
			set(k, RoleAttnRed)
		case kRoPE:
			set(k, RoleRoPE)
		case kKV:
			set(k, RoleKVWrite)
		case kAct:
			set(k, RoleAct)
		case kAllReduce:
			if prev := prevRole(roles, order, ks, k); prev != "" {
				set(k, "after "+prev)
			}
		case kQuant, kCopy, kNorm:
			if next := nextGEMMRole(roles, order, ks, k); next != "" {
				set(k, "before "+next)
			}
		}
	}
}

// RoleReduceSuffix ends the role of a kernel that sums a GEMM's split-K
// partial products: "QKV reduce" finishes the QKV projection.
const RoleReduceSuffix = " reduce"

// FinishesGEMM says a kernel completes a GEMM (a split-K reduce, the fill
// before it) rather than multiplying, by its name.
func FinishesGEMM(name string) bool { return finisherOf(name) != finNone }

// denseMLPRoles names the GEMMs of a dense MLP (k indices, in order): two
// are gate_up and down, three gate, up and down (unfused, as Hugging Face
// runs them: gate, activation, up, mul, down). With more, the activation
// between two of them decides: the GEMM before it projects up (gate_up),
// the first after it down; without one, the first is gate_up and the
// last down.
func denseMLPRoles(dense []int, ks []kind, set func(int, string)) {
	act := -1
	if len(dense) > 3 {
		for k := dense[0] + 1; k < dense[len(dense)-1]; k++ {
			if ks[k] == kAct {
				act = k
				break
			}
		}
	}
	if act >= 0 {
		i, _ := slices.BinarySearch(dense, act)
		before, after := dense[:i], dense[i:]
		for j, k := range before[:len(before)-1] {
			set(k, fmt.Sprintf("MLP GEMM %d", j+1))
		}
		set(before[len(before)-1], RoleGateUp)
		set(after[0], RoleDown)
		for j, k := range after[1:] {
			set(k, fmt.Sprintf("MLP GEMM %d", len(before)+j+2))
		}
		return
	}
	switch len(dense) {
	case 0:
	case 1:
		set(dense[0], RoleMLP)
	case 3:
		set(dense[0], "gate")
		set(dense[1], "up")
		set(dense[2], RoleDown)
	default:
		set(dense[0], RoleGateUp)
		set(dense[len(dense)-1], RoleDown)
		for i, k := range dense[1 : len(dense)-1] {
			set(k, fmt.Sprintf("MLP GEMM %d", i+2))
		}
	}
}

// isFinalize says an expert kernel combines the experts' outputs rather
// than multiplying (Triton's matmul_ogs finalize/scatter, vLLM's
// moe_sum), by its short name or its category.
func isFinalize(p *Position) bool {
	s, c := strings.ToLower(p.ShortName), strings.ToLower(p.Category)
	n := strings.ToLower(p.Kernel)
	return strings.Contains(s, "finalize") || strings.Contains(s, "scatter") || strings.Contains(n, "moe_sum") || strings.Contains(n, "moe_finalize") ||
		strings.Contains(c, "finalize") || strings.Contains(c, "combine")
}

func hasRole(roles []string, order []int, r string) bool {
	for _, i := range order {
		if roles[i] == r {
			return true
		}
	}
	return false
}

func isGEMMKind(k kind) bool { return k == kGEMM || k == kMoEGEMM }

// nextGEMMRole is the role of the first GEMM after position k (cyclic).
func nextGEMMRole(roles []string, order []int, ks []kind, k int) string {
	n := len(order)
	for j := 1; j < n; j++ {
		i := (k + j) % n
		if isGEMMKind(ks[i]) || ks[i] == kAttn {
			return roles[order[i]]
		}
	}
	return ""
}

// prevGEMM is the role of the GEMM before position k (cyclic), "" when
// it has none.
func prevGEMM(roles []string, order []int, ks []kind, k int) string {
	n := len(order)
	for j := 1; j < n; j++ {
		i := (k - j + n) % n
		if isGEMMKind(ks[i]) {
			return roles[order[i]]
		}
	}
	return ""
}

// prevRole is the role of the GEMM (or the MLP) that an all-reduce follows.
func prevRole(roles []string, order []int, ks []kind, k int) string {
	for j := k - 1; j >= 0; j-- {
		if isGEMMKind(ks[j]) {
			switch r := roles[order[j]]; r {
			case RoleOProj:
				return r
			case "":
				return ""
			default:
				return "MLP"
			}
		}
	}
	return ""
}

// moduleRoles maps the last word of a module path to a role, for the
// module names of Hugging Face, vLLM and SGLang models.
var moduleRoles = []struct{ suffix, role string }{
	{"qkv_proj", RoleQKV}, {"query_key_value", RoleQKV}, {"c_attn", RoleQKV}, {"Wqkv", RoleQKV},
	{"q_proj", "Q"}, {"k_proj", "K"}, {"v_proj", "V"},
	{"o_proj", RoleOProj}, {"dense", RoleOProj}, {"out_proj", RoleOProj},
	{"gate_up_proj", RoleGateUp}, {"gate_proj", "gate"}, {"up_proj", "up"}, {"down_proj", RoleDown},
	{"w13", RoleGateUp}, {"w2", RoleDown}, {"w1", "gate"}, {"w3", "up"},
	{"input_layernorm", RoleInNorm}, {"post_attention_layernorm", RolePostNorm},
	{"q_norm", RoleQNorm}, {"k_norm", RoleKNorm},
	{"rotary_emb", RoleRoPE}, {"act_fn", RoleAct},
	{"q_a_proj", RoleQA}, {"q_b_proj", RoleQB}, {"kv_a_proj_with_mqa", RoleKVA},
	{"fused_qkv_a_proj_with_mqa", RoleQKVA}, {"kv_b_proj", RoleKVB},
	{"q_a_layernorm", RoleQANorm}, {"kv_a_layernorm", RoleKVNorm},
}

// roleOfModule names a role from a capture trace's module path (the
// module that launched the kernel), "" when the path says nothing the
// structure does not.
func roleOfModule(module string, k kind) string {
	if module == "" {
		return ""
	}
	parts := strings.Split(module, ".")
	for i, p := range parts {
		parts[i] = moduleClass(p)
	}
	last := parts[len(parts)-1]
	parent := ""
	if len(parts) > 1 {
		parent = parts[len(parts)-2]
	}
	// SGLang's capture names modules by class: the class says the role.
	switch last {
	case "QKVParallelLinear":
		return forKind(RoleQKV, k)
	case "MergedColumnParallelLinear":
		return forKind(RoleGateUp, k)
	case "RowParallelLinear":
		if strings.Contains(parent, "Attention") {
			return forKind(RoleOProj, k)
		}
		if strings.Contains(parent, "MLP") {
			return forKind(RoleDown, k)
		}
	case "SiluAndMul", "GeluAndMul":
		return RoleAct
	case "RotaryEmbedding":
		return RoleRoPE
	case "RadixAttention":
		switch k {
		case kAttn:
			return RoleAttention
		case kKV:
			return RoleKVWrite
		case kReduce:
			return RoleAttnRed
		}
		return ""
	}
	shared := strings.Contains(module, "shared_expert")
	for _, m := range moduleRoles {
		if last != m.suffix {
			continue
		}
		r := m.role
		if shared && (r == RoleGateUp || r == RoleDown) {
			r = "shared " + r
		}
		return forKind(r, k)
	}
	switch {
	case strings.HasSuffix(module, "mlp.gate") || last == "router":
		if k == kGEMM {
			return RoleRouter
		}
	case last == "attn" || strings.HasSuffix(last, "attention"):
		if k == kAttn {
			return RoleAttention
		}
	}
	return ""
}

// forKind is a projection's role for a kernel it launched: a
// quantisation or copy feeds it.
func forKind(r string, k kind) string {
	if k == kQuant || k == kCopy {
		return "before " + r
	}
	return r
}

// moduleClass strips the instance suffix of a module path component
// ("RowParallelLinear_*", "RMSNorm_4").
func moduleClass(s string) string {
	if i := strings.LastIndexByte(s, '_'); i > 0 {
		if rest := s[i+1:]; rest == "*" || isDigits(rest) {
			return s[:i]
		}
	}
	return s
}

// roleStem is the kernel part of a short name: "MoE_GEMM (CK)" → "MoE_GEMM".
func roleStem(short string) string {
	if i := strings.Index(short, " ("); i > 0 {
		return short[:i]
	}
	return short
}

// Label is the position's display name: the kernel's short name with its
// role, as an engineer writes it ("MoE_GEMM (gate_up)", "FP8_quant (before
// QKV)"); the short name alone when the role is unknown.
func (p *Position) Label() string {
	if p.Role == "" {
		return p.ShortName
	}
	return roleStem(p.ShortName) + " (" + p.Role + ")"
}

// Labels are the display names of the positions, made unique within each
// layer kind: a label that repeats gets " #2", " #3" in position order.
func (t *LayerTable) Labels() []string {
	out := make([]string, len(t.Positions))
	for i := range t.Positions {
		out[i] = t.Positions[i].Label()
	}
	type key struct {
		kind  int
		label string
	}
	total, seen := map[key]int{}, map[key]int{}
	for i, p := range t.Positions {
		total[key{p.LayerKind, out[i]}]++
	}
	for i, p := range t.Positions {
		k := key{p.LayerKind, out[i]}
		if total[k] > 1 {
			seen[k]++
			if seen[k] > 1 {
				out[i] = fmt.Sprintf("%s #%d", out[i], seen[k])
			}
		}
	}
	return out
}
