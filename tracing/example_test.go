package tracing_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/profile-model/profile-model/tracing"
)

func ExampleRead() {
	// Two decode steps of ATOM, each a graph replay of two kernels.
	doc := `{"traceEvents":[
 {"ph":"X","cat":"gpu_user_annotation","name":"decode[bs=8 tok=8]","pid":0,"tid":7,"ts":100,"dur":50},
 {"ph":"X","cat":"kernel","name":"pa_bf16_asm","pid":0,"tid":7,"ts":101,"dur":20.5,"args":{"device":0,"stream":7,"correlation":1}},
 {"ph":"X","cat":"kernel","name":"kernel_moe_gemm","pid":0,"tid":7,"ts":122,"dur":25,"args":{"device":0,"stream":7,"correlation":1}},
 {"ph":"X","cat":"gpu_user_annotation","name":"decode[bs=8 tok=8]","pid":0,"tid":7,"ts":200,"dur":50},
 {"ph":"X","cat":"kernel","name":"pa_bf16_asm","pid":0,"tid":7,"ts":201,"dur":21,"args":{"device":0,"stream":7,"correlation":2}},
 {"ph":"X","cat":"kernel","name":"kernel_moe_gemm","pid":0,"tid":7,"ts":223,"dur":24.25,"args":{"device":0,"stream":7,"correlation":2}}
]}`
	tr, err := tracing.Read(context.Background(), strings.NewReader(doc), "example.json", tracing.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	s := tr.Summarize()
	fmt.Println("kernels:", s.Kernels, "time:", s.KernelTime, "µs")
	for _, st := range tr.Steps {
		fmt.Println(st.Kind, "bs", st.BS, "kernels", len(st.Kernels), "from", st.Source)
	}
	fmt.Println("decode batch size:", tr.DecodeBS)
	// Output:
	// kernels: 4 time: 90.750 µs
	// decode bs 8 kernels 2 from gpu_annotation
	// decode bs 8 kernels 2 from gpu_annotation
	// decode batch size: 8
}
