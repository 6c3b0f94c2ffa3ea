package roofline

import "github.com/profile-model/profile-model/inventory"

// mlaWork is the work of the roles of latent attention (MLA: DeepSeek-V2/V3,
// Kimi K2): the query through its latent of rank qL (or straight from the
// hidden state without one), keys and values through one latent of rank r
// plus a shared RoPE key part of dR. Decode runs the absorbed form: W_UK
// turns each head's query into the latent space, attention is
// multi-query over the cached latents (r + dR per token, one copy for all
// heads), and W_UV turns each head's latent output into its value. Prefill
// runs the expanded form: kv_b_proj makes each head's key and value and
// attention is multi-head. The per-head products W_UK and W_UV keep bf16
// weights (engines hold bf16 copies for them). mine is false for the roles
// MLA does not change (the MLP's).
func mlaWork(role string, d dims) (w Work, ok, mine bool) {
	B, H, h := d.B, d.H, d.nh
	qk := d.dn + d.dR // a query or key head: no-RoPE and RoPE parts
	a := float64(actBytes)
	switch role {
	case inventory.RoleQA:
		return gemm(B, H, d.qL, d.wb), d.qL > 0, true
	case inventory.RoleQB:
		return gemm(B, d.qL, h*qk, d.wb), d.qL > 0, true
	case "Q": // q_proj: no query latent
		return gemm(B, H, h*qk, d.wb), d.qL == 0, true
	case inventory.RoleKVA:
		return gemm(B, H, d.r+d.dR, d.wb), true, true
	case inventory.RoleQKVA:
		return gemm(B, H, d.qL+d.r+d.dR, d.wb), true, true
	case inventory.RoleKVB:
		// Prefill only: every context token's latent to each head's key
		// (no-RoPE part) and value.
		return gemm(d.n*d.L, d.r, h*(d.dn+d.dv), d.wb), d.prefill, true
	case inventory.RoleUK:
		// Per head: B queries' no-RoPE part (dn) to the latent (r).
		return Work{FLOPs: 2 * B * h * d.dn * d.r, Bytes: h*d.dn*d.r*a + B*h*d.dn*a + B*h*d.r*a, Matrix: true}, !d.prefill, true
	case inventory.RoleUV:
		// Per head: the latent output (r) to the value head (dv).
		return Work{FLOPs: 2 * B * h * d.r * d.dv, Bytes: h*d.r*d.dv*a + B*h*d.r*a + B*h*d.dv*a, Matrix: true}, !d.prefill, true
	case inventory.RoleAttention:
		if d.prefill {
			// Multi-head, causal: Q·Kᵀ over qk, P·V over dv; the expanded
			// keys and values of every context token read once.
			return Work{FLOPs: 2 * h * d.causalPairs() * (qk + d.dv),
				Bytes: B*h*qk*a + B*h*d.dv*a + d.n*d.L*h*(qk+d.dv)*a, Matrix: true}, true, true
		}
		// Absorbed decode: every head's latent query (r + dR) against each
		// cached latent, and the weights against the latents (r): the
		// cache read once per sequence for all heads.
		return Work{FLOPs: 2 * B * h * d.L * (2*d.r + d.dR),
			Bytes: B*d.L*(d.r+d.dR)*d.kvb + B*h*(d.r+d.dR)*a + B*h*d.r*a, Matrix: true}, d.L > 0, true
	case inventory.RoleKVWrite:
		return Work{Bytes: B * (d.r + d.dR) * (a + d.kvb)}, true, true
	case inventory.RoleRoPE:
		// The queries' RoPE parts and the one shared key part.
		n := B * (h + 1) * d.dR
		return Work{FLOPs: 3 * n, Bytes: 2 * n * a}, true, true
	case inventory.RoleQANorm, inventory.RoleKVNorm:
		n := B * d.qL
		if role == inventory.RoleKVNorm {
			n = B * d.r
		}
		return Work{FLOPs: 4 * n, Bytes: 2 * n * a}, n > 0, true
	case inventory.RoleOProj:
		return gemm(B, h*d.dv, H, d.wb), true, true
	case inventory.RoleQKV, "K", "V", inventory.RoleQKNorm, inventory.RoleQNorm, inventory.RoleKNorm:
		return Work{}, false, true
	}
	return Work{}, false, false
}
