package sim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/profile-model/profile-model/internal/units"
	"github.com/profile-model/profile-model/profiling/synth"
)

// nopBackend prices every step at 10 ms and records nothing.
type nopBackend struct{}

func (nopBackend) HostGap() units.Duration          { return units.Micros(150) }
func (nopBackend) OutputLag() float64               { return 0 }
func (nopBackend) Intake(int) units.Duration        { return 0 }
func (nopBackend) Run(synth.Step) units.Duration    { return units.FromTime(10 * time.Millisecond) }
func (nopBackend) StartProfile(string, int64) error { return nil }
func (nopBackend) StopProfile(int64, bool) func(context.Context) ([]string, error) {
	return func(context.Context) ([]string, error) { return nil, nil }
}

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

// lagBackend is nopBackend with no host gap and a step's tokens delivered
// lag of the way into the next step.
type lagBackend struct {
	nopBackend
	lag float64
}

func (lagBackend) HostGap() units.Duration { return 0 }
func (b lagBackend) OutputLag() float64    { return b.lag }

// TestOutputLag: with an output lag, a step's tokens reach the reader that
// far into the next step (the engine's own count moves on at once, so the
// scheduling does not change), and an idle engine hands over what is left.
func TestOutputLag(t *testing.T) {
	for _, tc := range []struct {
		name      string
		lag       float64
		firstAt   time.Duration // after the start
		afterStep int           // tokens the reader sees after the first step
	}{
		{"none", 0, 10 * time.Millisecond, 1},
		{"half", 0.5, 15 * time.Millisecond, 0},
		{"whole", 1, 20 * time.Millisecond, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			b := lagBackend{lag: tc.lag}
			cfg, err := Config{Model: "m", clock: clock, backend: b}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			e := newEngine(&cfg, b)
			start := clock.Now()
			r := newRequest(1, 16, 2, "length", 0, start)
			e.waiting = append(e.waiting, r)
			ctx := context.Background()
			if err := e.step(ctx); err != nil { // prefill: samples token 1
				t.Fatal(err)
			}
			if got := r.produced(); got != tc.afterStep {
				t.Fatalf("after the prefill step the reader sees %d tokens, want %d", got, tc.afterStep)
			}
			if err := e.step(ctx); err != nil { // decode: samples token 2, the last
				t.Fatal(err)
			}
			if len(e.running) != 0 {
				t.Fatalf("the engine still runs %d requests after their last token was sampled", len(e.running))
			}
			if got := time.Duration(r.firstAt.Load() - start.UnixNano()); got != tc.firstAt {
				t.Errorf("first token at %v, want %v", got, tc.firstAt)
			}
			e.deliver(clock.Now().UnixNano()) // what the idle engine does
			if n, done, _ := r.snapshot(); n != 2 || !done {
				t.Errorf("after delivery: %d tokens, done %v; want 2, true", n, done)
			}
		})
	}
}

// intakeBackend is nopBackend with a front-end intake of 1 µs per prompt token.
type intakeBackend struct{ nopBackend }

func (intakeBackend) Intake(promptTokens int) units.Duration {
	return units.Micros(float64(promptTokens))
}

// TestIntake: a request reaches the scheduler only once its intake time
// (scaled by TimeScale) has passed, and a request whose client left during
// the intake never does.
func TestIntake(t *testing.T) {
	clock := newFakeClock()
	b := intakeBackend{}
	cfg, err := Config{Model: "m", clock: clock, backend: b, TimeScale: 2}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(&cfg, b)
	start := clock.Now()
	r := newRequest(1, 4000, 1, "length", 0, start)
	if err := e.add(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got := clock.Now().Sub(start); got != 2*time.Millisecond { // 4000 µs at time scale 2
		t.Errorf("the request reached the scheduler after %v, want 2ms", got)
	}
	select {
	case got := <-e.submit:
		if got != r {
			t.Errorf("submitted request %d, want %d", got.seq, r.seq)
		}
	default:
		t.Fatal("the request was not submitted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.add(ctx, newRequest(2, 4000, 1, "length", 0, clock.Now())); err == nil {
		t.Error("add with a cancelled context returned no error")
	}
	if n := len(e.submit); n != 0 {
		t.Errorf("%d requests submitted after the client left during the intake, want 0", n)
	}
}
