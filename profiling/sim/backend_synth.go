package sim

import (
	"context"
	"errors"
	"time"

	"github.com/profile-model/profile-model/tracing"
)

// newSynthBackend builds the default backend. Until the synth kernel model is
// wired in, steps are priced by a flat stand-in and profiling is refused.
func newSynthBackend(cfg *Config) (Backend, error) {
	if len(cfg.KernelCSVs) > 0 {
		return nil, errors.New("--kernels needs the synth kernel model, not wired in yet")
	}
	layers := cfg.Layers
	if layers == 0 {
		layers = 62
	}
	return &flatBackend{layers: layers}, nil
}

type flatBackend struct{ layers int }

func (b *flatBackend) Run(s Step) time.Duration {
	per := 250*time.Microsecond + time.Duration(s.BS)*4*time.Microsecond
	if s.Kind == tracing.StepPrefill {
		per += time.Duration(s.Tokens) * 100 * time.Nanosecond
	}
	return time.Duration(b.layers) * per
}

func (b *flatBackend) StartProfile(string, int64) error {
	return errors.New("trace recording is not wired in yet")
}

func (b *flatBackend) StopProfile(context.Context, int64, bool) ([]string, error) {
	return nil, errors.New("trace recording is not wired in yet")
}
