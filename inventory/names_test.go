package inventory

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/stretchr/testify/require"
)

// The recorded compatible CSVs of the corpus keep each kernel name as it appeared and its
// short name: compatShortName must give the same short name for every row.
func TestCompatShortNameMatchesSeedCSVs(t *testing.T) {
	t.Parallel()
	dir := corpus.Dir(t)
	for _, bs := range []int{4, 8, 16, 32} {
		path := filepath.Join(dir, "atom-minimax-m2.5", fmt.Sprintf("conc%d_layer.csv", bs))
		rows, err := ReadLayerCSV(path)
		require.NoError(t, err)
		for _, r := range rows {
			require.Equal(t, r.ShortName, compatShortName(r.Kernel), "%s pos %d: %s", path, r.Pos, r.Kernel)
		}
	}
}

func TestCompatShortName(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"first rule wins over a later one", "aiter::pa_bf16_with_kernel_moe_gemm", "PA (paged_attn)"},
		{"multi-phase sort before plain sort", "ck_tile::kentry<2, ck_tile::MoeSortingMultiPhaseKernel_P0_v2<x>>", "MoE_sort_P0"},
		{"no rule: first 50 characters", strings.Repeat("abcde", 12), strings.Repeat("abcde", 10)},
		{"no rule: 50 characters, not bytes", strings.Repeat("é", 60), strings.Repeat("é", 50)},
		{"short unknown name kept", "my_kernel", "my_kernel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, compatShortName(tt.in))
		})
	}
}

func TestDemangle(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, wantPrefix string }{
		{"void stripped", "void at::native::reduce_kernel<512, 1>(int)", "at::native::reduce_kernel<512, 1>(int)"},
		{"mangled aiter", "_ZN5aiter37dynamic_per_group_scaled_quant_kernelIDF16bDB8_Li32EEEvPT0_PfPKT_PKfiliibPKii", "aiter::dynamic_per_group_scaled_quant_kernel<"},
		{"mangled sgl", "_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_RKS3_EXadL_Z4siluIS2_ES3_S5_EEEEvPS3_PS4_i", "sgl_hip::activation::act_and_mul_kernel<"},
		{"plain name unchanged", "Cijk_Alik_Bljk_BBS", "Cijk_Alik_Bljk_BBS"},
		{"not really mangled", "_Zfoo", "_Zfoo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := readableName(tt.in)
			require.True(t, strings.HasPrefix(got, tt.wantPrefix), "Demangle(%q) = %q", tt.in, got)
			require.False(t, strings.HasPrefix(got, "void "))
		})
	}
}

func TestShortName(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"template and params dropped", "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)", "at::native::vectorized_elementwise_kernel<FillFunctor>"},
		{"anonymous namespace", "void (anonymous namespace)::store_kvcache<2048l, 4, false, long>((anonymous namespace)::StoreKVCacheParams)", "{anon}::store_kvcache"},
		{"mangled", "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib", "aiter::add_rmsnorm_quant_kernel"},
		{"ck_tile kentry names its kernel", "ck_tile::kentry<2, ck_tile::MoeSortingKernel<ck_tile::MoeSortingProblemEx<int, float, 1, true, false, false, true, 0> >, ck_tile::MoeSortingKernel<x>::Kargs>(ck_tile::MoeSortingKernel<x>::Kargs)", "ck_tile::MoeSortingKernel"},
		{"return type prefix dropped", "std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float>(int)", "internal::gemvx::kernel"},
		{"params only", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "ncclKernel_AllReduce_RING_LL_Sum_float"},
		{"plain", "kernel_unified_attention_3d", "kernel_unified_attention_3d"},
		{"memcpy kept", "Memcpy HtoD (Host -> Device)", "Memcpy HtoD (Host -> Device)"},
		{"truncated mangled name falls back to its prefix", "_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwdPipe", "ck_tile::kentry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, ShortName(tt.in))
		})
	}
}
