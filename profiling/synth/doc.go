// Package synth writes ATOM-style Kineto traces of engine steps: the
// Recorder that the simulated engine and the generator write through, and
// Generate behind `profile-model synth`, which drives a kernelmodel.Model and
// returns the Truth of what it wrote for tests to compare analyses with.
package synth
