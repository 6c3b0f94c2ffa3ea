package sim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/profile-model/profile-model/synth"
	"github.com/profile-model/profile-model/units"
)

// nopBackend prices every step at 10 ms and records nothing.
type nopBackend struct{}

func (nopBackend) HostGap() units.Duration                                    { return units.Micros(150) }
func (nopBackend) Run(synth.Step) units.Duration                              { return units.FromTime(10 * time.Millisecond) }
func (nopBackend) StartProfile(string, int64) error                           { return nil }
func (nopBackend) StopProfile(context.Context, int64, bool) ([]string, error) { return nil, nil }

// BenchmarkDecodeFanout measures the engine's own cost per decode token:
// scheduling a step of bs running requests and waking each one's reader
// (no HTTP, no kernel model, a clock that does not sleep).
func BenchmarkDecodeFanout(b *testing.B) {
	for _, bs := range []int{8, 256, 1024} {
		b.Run(fmt.Sprintf("bs=%d", bs), func(b *testing.B) {
			cfg := Config{Model: "m", MaxNumSeqs: bs, clock: newFakeClock(), backend: nopBackend{}}
			cfg, err := cfg.withDefaults()
			if err != nil {
				b.Fatal(err)
			}
			e := newEngine(&cfg, nopBackend{})
			for i := range bs {
				r := newRequest(uint64(i), 16, 1<<30, "length", 0, cfg.clock.Now())
				r.state.Store(1 << stateShift) // prefilled
				e.running = append(e.running, r)
			}
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				if err := e.step(ctx); err != nil {
					b.Fatal(err)
				}
				for _, r := range e.running { // the readers' side: drain the wake-ups
					select {
					case <-r.notify:
					default:
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*bs), "ns/token")
		})
	}
}
