package engine_test

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/profile-model/profile-model/profiling/engine"
	"github.com/profile-model/profile-model/profiling/sim"
)

// The ATOM command line of a profiled run, and what ATOM does with capture
// sizes above --max-num-seqs, said before a GPU node spends minutes loading
// the model.
func ExampleSpec_Command() {
	spec := engine.Spec{
		Kind:         engine.ATOM,
		Model:        "MiniMaxAI/MiniMax-M2.5",
		TP:           2,
		ProfilerDir:  "/data/traces",
		MaxNumSeqs:   64,
		CaptureSizes: []int{1, 2, 4, 8, 16, 32, 64},
	}
	cmd, err := spec.Command()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cmd.Path, strings.Join(cmd.Args, " "))

	spec.CaptureSizes = nil // ATOM's defaults go up to 512
	notes, _ := spec.Check()
	fmt.Println(notes[0])
	// Output:
	// python3 -m atom.entrypoints.openai_server --model MiniMaxAI/MiniMax-M2.5 --kv_cache_dtype fp8 -tp 2 --torch-profiler-dir /data/traces --server-port 8000 --max-num-seqs 64 --cudagraph-capture-sizes [1,2,4,8,16,32,64]
	// --max-num-seqs 64 is smaller than the largest CUDA-graph capture size 512 (ATOM's default sizes [1,2,4,8,16,32,48,64,128,256,512]): ATOM drops the larger sizes with a warning and captures [1,2,4,8,16,32,48,64] (releases before May 2026 fail at start instead; for those pass --cudagraph-capture-sizes "[1,2,4,8,16,32,48,64]")
}

// Attaching to a server that is already running (here a simulated one in
// this process): Start returns once it serves the model, and Watch gives a
// context that ends if the engine dies. With Kind ATOM, VLLM, SGLang or Sim
// the same calls start the process, log to RUN/server.log and stop its
// whole process group.
func ExampleStart() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, _ := sim.New(sim.Config{Model: "MiniMaxAI/MiniMax-M2.5"})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(ctx, ln)

	eng, err := engine.Start(ctx, engine.Spec{Kind: engine.None, Model: "MiniMaxAI/MiniMax-M2.5", URL: "http://" + ln.Addr().String()}, engine.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Stop(context.Background())
	sweepCtx, stop := eng.Watch(ctx)
	defer stop()
	fmt.Println("serving", eng.Spec().Model, "- sweep running:", sweepCtx.Err() == nil)
	// Output: serving MiniMaxAI/MiniMax-M2.5 - sweep running: true
}
