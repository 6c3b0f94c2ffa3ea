package tracing_test

import (
	"bufio"
	"io"
	"strconv"
)

// bigTrace writes an ATOM-style decode trace for benchmarks: Kineto's
// section layout (Python frames and CPU ops, runtime calls, GPU kernels, GPU
// annotations), one hipGraphLaunch per decode step replaying
// layers×len(layerKernels) kernels ("Dispatch Task"), an eager sampling
// kernel, python_function noise, and baseTimeNanoseconds at the end. Its
// truth: steps decode steps of batch size bs, each owning
// layers*len(layerKernels) replayed kernels plus one sampling kernel.
//
// It is the benchmarks' own generator, independent of the synth package, so
// that the reader's speed is measured on input the reader's authors did not
// shape around.
func bigTrace(w io.Writer, steps, layers, bs int) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	b := make([]byte, 0, 4096)
	b = append(b, `{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "AMD Instinct MI355X", "totalGlobalMem": 309220868096, "computeMajor": 9, "computeMinor": 5, "warpSize": 64, "numSms": 256}], "roctracer_version": 4.1, "hip_runtime_version": 70051831, "record_shapes": 1, "with_stack": 1, "displayTimeUnit": "ms", "traceEvents": [`...)
	first := true
	ev := func() {
		if !first {
			b = append(b, ", "...)
		}
		first = false
	}
	flush := func() error {
		_, err := bw.Write(b)
		b = b[:0]
		return err
	}
	const t0 = 4909913692207556000 % 10_000_000_000_000_000 // relative µs·1000, like real traces
	stepNS := int64(len(layerKernels)*layers)*9_000 + 400_000
	label := func(i int) []byte {
		return []byte("decode[bs=" + strconv.Itoa(bs) + " tok=" + strconv.Itoa(bs) + " step=" + strconv.Itoa(i))
	}
	corr := func(i int) int64 { return int64(100000 + 2*i) }
	// Section 1: CPU side per step: user annotation, python frames, cpu ops.
	for i := range steps {
		start := t0 + int64(i)*stepNS
		ev()
		b = append(b, `{"ph": "X", "cat": "user_annotation", "name": "`...)
		b = append(append(b, label(i)...), `]", "pid": 851, "tid": 851, "ts": `...)
		b = micros(b, start)
		b = append(b, `, "dur": `...)
		b = micros(b, stepNS-200_000)
		b = append(b, `, "args": {"External id": `...)
		b = strconv.AppendInt(b, int64(1_000_000+i), 10)
		b = append(b, `, "Record function id": 0, "Ev Idx": 12}}`...)
		for j := range pythonPerStep {
			ev()
			b = append(b, `{"ph": "X", "cat": "python_function", "name": "/app/atom/model_engine/model_runner.py(`...)
			b = strconv.AppendInt(b, int64(100+j%700), 10)
			b = append(b, `): run_model_step_`...)
			b = strconv.AppendInt(b, int64(j%37), 10)
			b = append(b, `", "pid": 851, "tid": 851, "ts": `...)
			b = micros(b, start+int64(j)*150)
			b = append(b, `, "dur": 12.345, "args": {"Python parent id": `...)
			b = strconv.AppendInt(b, int64(i*pythonPerStep+j), 10)
			b = append(b, `, "Python id": `...)
			b = strconv.AppendInt(b, int64(i*pythonPerStep+j+1), 10)
			b = append(b, `, "Ev Idx": 1151165}}`...)
			if len(b) > 1<<16 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		for j := range 40 {
			ev()
			b = append(b, `{"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "pid": 851, "tid": 851, "ts": `...)
			b = micros(b, start+int64(j)*1000)
			b = append(b, `, "dur": 3.1, "args": {"External id": 77, "Record function id": 0, "Concrete Inputs": ["", "", "False"], "Input type": ["float", "float", "Scalar"], "Ev Idx": 5}}`...)
		}
		if err := flush(); err != nil {
			return err
		}
	}
	// Section 2: runtime calls and their flows.
	for i := range steps {
		start := t0 + int64(i)*stepNS
		for k, name := range []string{"hipGraphLaunch", "hipLaunchKernel"} {
			ev()
			b = append(b, `{"ph": "X", "cat": "cuda_runtime", "name": "`...)
			b = append(b, name...)
			b = append(b, `", "pid": 851, "tid": 851, "ts": `...)
			b = micros(b, start+100_000+int64(k)*50_000)
			b = append(b, `, "dur": 20.5, "args": {"External id": 9, "correlation": `...)
			b = strconv.AppendInt(b, corr(i)+int64(k), 10)
			b = append(b, `}}, {"ph": "s", "id": `...)
			b = strconv.AppendInt(b, corr(i)+int64(k), 10)
			b = append(b, `, "pid": 851, "tid": 851, "ts": 1.0, "cat": "ac2g", "name": "ac2g"}`...)
		}
	}
	// Section 3: GPU kernels: the replayed graph, then sampling.
	for i := range steps {
		t := t0 + int64(i)*stepNS + 150_000
		for l := range layers {
			for _, name := range layerKernels {
				ev()
				b = append(b, `{"ph": "X", "cat": "kernel", "name": "`...)
				b = append(b, name...)
				b = append(b, `", "pid": 2, "tid": 1, "ts": `...)
				b = micros(b, t)
				b = append(b, `, "dur": 8.123, "args": {"device": 2, "stream": 1, "correlation": `...)
				b = strconv.AppendInt(b, corr(i), 10)
				b = append(b, `, "kind": "Dispatch Task"}}`...)
				t += 9_000
				_ = l
			}
			if len(b) > 1<<16 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		ev()
		b = append(b, `{"ph": "X", "cat": "kernel", "name": "aiter::mix_sample_outer_exponential_kernel<float, 1024>", "pid": 2, "tid": 1, "ts": `...)
		b = micros(b, t+5000)
		b = append(b, `, "dur": 30.5, "args": {"External id": 9, "device": 2, "stream": 1, "correlation": `...)
		b = strconv.AppendInt(b, corr(i)+1, 10)
		b = append(b, `, "kind": "Dispatch Kernel", "grid": [1024, 1, 1], "block": [256, 1, 1]}}`...)
		ev()
		b = append(b, `{"ph": "f", "id": `...)
		b = strconv.AppendInt(b, corr(i)+1, 10)
		b = append(b, `, "pid": 2, "tid": 1, "ts": 1.0, "cat": "ac2g", "name": "ac2g", "bp": "e"}`...)
	}
	// Section 4: GPU annotations.
	for i := range steps {
		start := t0 + int64(i)*stepNS + 150_000
		ev()
		b = append(b, `{"ph": "X", "cat": "gpu_user_annotation", "name": "`...)
		b = append(append(b, label(i)...), `]", "pid": 2, "tid": 1, "ts": `...)
		b = micros(b, start)
		b = append(b, `, "dur": `...)
		b = micros(b, int64(len(layerKernels)*layers)*9_000)
		b = append(b, `, "args": {"External id": `...)
		b = strconv.AppendInt(b, int64(1_000_000+i), 10)
		b = append(b, `}}`...)
	}
	b = append(b, `], "traceName": "/tmp/bench.json", "baseTimeNanoseconds": 1751410836000000000}`...)
	if err := flush(); err != nil {
		return err
	}
	return bw.Flush()
}

const pythonPerStep = 1500

// micros appends ns as Kineto's 3-decimal microseconds.
func micros(b []byte, ns int64) []byte {
	b = strconv.AppendInt(b, ns/1000, 10)
	f := ns % 1000
	b = append(b, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
	return b
}

// layerKernels is one MoE decode layer (names in the style of ATOM's aiter,
// CK and Tensile kernels).
var layerKernels = []string{
	"aiter::pa_bf16_pertokenFp8_gqa8_2tg_4w",
	"_ZN5aiter37dynamic_per_group_scaled_quant_kernelIDF16bDB8_Li32EEEvPT0_PfPKT_PKfiliibPKii",
	"ck::kernel_gemm_xdl_cshuffle_v3_multi_d_blockscale_b_preshuffle<ck::GridwiseGemmMultiD_blockscale_xdl_cshuffle_v3_b_preshuffle<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, ck::Tuple<>, ck::tensor_layout::gemm::RowMajor, ck::f8_fnuz_t>, true, 2>",
	"aiter::add_rmsnorm_quant_kernel<std::bfloat16_t, std::bfloat16_t, 256, 16, true, false, true, 1>(std::bfloat16_t*, std::bfloat16_t*, float*, std::bfloat16_t*, double, int, int)",
	"Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x16x256_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_EPS0_GRVWA8_GRVWB8_GSUAMB_IU1_K1_LBSPPA2048_LBSPPB512_LBSPPM0",
	"void vllm::moe::topkGatingSoftmax<4, 256, 4, 16, 32, int, float, 2>(float const*, bool const*, float*, int, int*, int*, int, int, int)",
	"ck_tile::kentry<256, 1, ck_tile::MoeSortingMultiPhaseKernel_P0_v2<ck_tile::MoeSortingProblemMp<int, float, 1, true, false, 8, false>>>",
	"ck_tile::kentry<256, 1, ck_tile::MoeSortingMultiPhaseKernel_P23<ck_tile::MoeSortingProblemMp<int, float, 1, true, false, 8, false>>>",
	"ck::kernel_moe_gemm<ck::GridwiseMoeGemmBlockScale<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, ck::Tuple<>, ck::f8_fnuz_t, 256, 32, 128, 128>, true, 1>",
	"ck::kernel_moe_gemm<ck::GridwiseMoeGemmBlockScale<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, ck::Tuple<>, ck::f8_fnuz_t, 256, 32, 64, 128>, false, 2>",
	"_ZN5aiter33kn_entry_2c_sbhd_cached_indirectILb1ELi64EDF16bDF16bEEvPT1_PKS0_PKT2_S6_PKlS8_iiiiiiiiiii",
	"void aiter::reshape_and_cache_with_per_token_quant_kernel<__hip_bfloat16, unsigned char, 128, 64>(__hip_bfloat16 const*, unsigned char*, long const*, int, int)",
	"wv_splitk_small_fp16_bf16_kernel<__hip_bfloat16, 64, 2, 16, 8, 2, 4>",
	"triton_poi_fused__to_copy_add_mul_0",
	"triton_red_fused_add_mean_mul_pow_rsqrt_1",
	"void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}>(at::TensorIteratorBase&)>(int, at::native::gpu_kernel_impl<>)",
	"aiter::grouped_topk_kernel<__hip_bfloat16, 256, 8>",
	"Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x128_MI16x16x1_SN_LDSB1_AFC1_AFEM1",
	"aiter::silu_and_mul_kernel<__hip_bfloat16, 8>",
}
