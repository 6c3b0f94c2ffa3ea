package kineto_test

import (
	"fmt"
	"os"

	"github.com/profile-model/profile-model/tracing/kineto"
)

// A trace of one kernel on an MI355X: times are integer nanoseconds, written
// as microseconds with three decimals relative to BaseTimeNS.
func Example() {
	w, err := kineto.NewWriter(os.Stdout, kineto.WriterOptions{
		Devices:    []kineto.DeviceProperties{kineto.MI355X(0)},
		BaseTimeNS: 1_000_000_000,
		TraceName:  "example",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ev := kineto.Event{Ph: 'X', Cat: "kernel", Name: "my_kernel", PID: 2, TID: 0,
		TS: 1_000_012_345, Dur: 4_321, Args: []kineto.Arg{kineto.IntArg("correlation", 7)}}
	if err := w.WriteEvent(&ev); err != nil {
		fmt.Println(err)
		return
	}
	if err := w.Close(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {
	//   "schemaVersion": 1,
	//   "deviceProperties": [
	//     {
	//       "id": 0, "name": "AMD Instinct MI355X", "totalGlobalMem": 309220868096,
	//       "computeMajor": 9, "computeMinor": 5,
	//       "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
	//       "regsPerBlock": 131072, "warpSize": 64,
	//       "sharedMemPerBlock": 65536, "numSms": 256
	//     , "maxSharedMemoryPerMultiProcessor": 163840
	//     }
	//   ],
	//   "record_shapes": 1,
	//   "with_stack": 1,
	//   "traceEvents": [
	//   {
	//     "ph": "X", "cat": "kernel", "name": "my_kernel", "pid": 2, "tid": 0,
	//     "ts": 12.345, "dur": 4.321,
	//     "args": {
	//       "correlation": 7
	//     }
	//   }
	//   ],
	//   "traceName": "example",
	//   "displayTimeUnit": "ms",
	//   "baseTimeNanoseconds": 1000000000
	// }
}
