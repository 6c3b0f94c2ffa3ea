// Package engine starts, watches and stops the serving engine a profiling
// run talks to: ATOM, vLLM, SGLang, the built-in simulated engine as a child
// process, or a server that is already running. It owns each engine's exact
// command line and environment, the catches for known misconfigurations and
// the GPU memory pre-flight before anything starts, readiness with a
// deadline, and process-group shutdown so that no engine process outlives
// the run.
package engine
