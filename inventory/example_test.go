package inventory_test

import (
	"fmt"
	"strings"

	"github.com/profile-model/profile-model/inventory"
)

func ExampleRules_Classify() {
	rules := inventory.DefaultRules()
	for _, name := range []string{
		"_ZN5aiter34dynamic_per_group_scaled_quant_kernelIN3c108BFloat16EEEvPT_",
		"Cijk_Alik_Bljk_BBS_BH_MT64x16x64_MI16x16x1",
		"void fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_ps_32x256",
	} {
		c := rules.Classify(name)
		fmt.Printf("%s | %s | %s\n", c.Category, c.Provider, c.ShortName)
	}
	// Output:
	// Activation quant | aiter | FP8_quant
	// Dense GEMM (BF16) | rocBLAS / hipBLASLt | GEMM_BF16 (rocBLAS)
	// MoE expert GEMM | aiter ASM | MoE_GEMM_fused (ASM)
}

func ExampleParseRules() {
	table := `priority,pattern,category,provider,short_name
90,my_fused_attn,Flash attention (prefill),in-house,MyAttn
`
	rules, err := inventory.ParseRules(strings.NewReader(table), "my-rules.csv")
	if err != nil {
		fmt.Println(err)
		return
	}
	c := rules.Classify("my_fused_attn_fwd_kernel")
	fmt.Println(c.Category, "/", c.ShortName, "/", rules.Classify("unknown_kernel").Category)
	// Output: Flash attention (prefill) / MyAttn / Other
}

func ExampleShortName() {
	fmt.Println(inventory.ShortName("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"))
	// Output: at::native::vectorized_elementwise_kernel<FillFunctor>
}

// A per-layer table in the project's CSV convention reads back as it was
// written.
func ExampleParseLayerCSV() {
	rows := []inventory.LayerRow{
		{Pos: 0, ShortName: "PA (paged_attn)", Kernel: "pa_bf16_kernel", AvgUS: 6.3, StdUS: 0.4, MinUS: 4.9, MaxUS: 7.9, Pct: 60, Count: 96},
		{Pos: 1, ShortName: "RMSNorm", Kernel: "rmsnorm_kernel<float, 256>", AvgUS: 4.2, StdUS: 0.1, MinUS: 4, MaxUS: 4.5, Pct: 40, Count: 96},
	}
	data := inventory.FormatLayerCSV(rows)
	fmt.Print(string(data))
	back, err := inventory.ParseLayerCSV(strings.NewReader(string(data)))
	fmt.Println(len(back), back[1].Kernel, err)
	// Output:
	// pos,short_name,kernel,avg_us,std_us,min_us,max_us,pct,count
	// 0,PA (paged_attn),pa_bf16_kernel,6.3,0.4,4.9,7.9,60.0,96
	// 1,RMSNorm,"rmsnorm_kernel<float, 256>",4.2,0.1,4.0,4.5,40.0,96
	// 2 rmsnorm_kernel<float, 256> <nil>
}
