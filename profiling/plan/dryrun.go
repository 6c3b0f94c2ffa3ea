package plan

import (
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/profile-model/profile-model/profiling/engine"
)

// DryRun prints what Run would do: each server variant's engine command,
// the pairs with their levels, the pairs the links leave out, and an
// estimate of the time. With o.Resume it reads that sweep's plan and says
// which levels are complete and valid on disk (and would be skipped).
// Nothing is written.
func DryRun(w io.Writer, p *Plan, o RunOptions) error {
	s := &sweep{p: p, o: o}
	if p != nil {
		s.dir = filepath.Join(cmp.Or(o.Out, "sweeps"), p.Name+"-TIME")
	}
	if o.Resume != "" {
		var err error
		if s.p, s.index, err = openSweep(o.Resume); err != nil {
			return err
		}
		s.dir = o.Resume
	}
	s.o.Log = w
	p = s.p
	pairs, dropped := p.Pairs()
	s.index = s.freshIndex(pairs, dropped)
	fmt.Fprintf(w, "plan %s (%s): engine %s, model %s\n", p.Name, p.Path(), p.Engine, p.Model)
	fmt.Fprintf(w, "%d server × %d bench variants: %d pairs", len(p.Servers), len(p.Benches), len(pairs))
	if len(dropped) > 0 {
		fmt.Fprintf(w, " (%d left out by the links)", len(dropped))
	}
	fmt.Fprintln(w)
	if o.Resume != "" {
		fmt.Fprintf(w, "\nresuming %s:\n", o.Resume)
	}
	work := make([]pairWork, len(pairs))
	for i, pr := range pairs {
		work[i] = s.survey(pr, &s.index.Pairs[i])
	}
	est := newEstimator(p, o.Options, work)
	for _, sv := range p.Servers {
		first := true
		for i, pr := range pairs {
			if pr.Server.Name != sv.Name {
				continue
			}
			if first {
				spec := p.spec(sv, o.Options)
				spec.ProfilerDir = filepath.Join(s.dir, sv.Name, "traces")
				port := ""
				if spec.Kind == engine.Sim && spec.Port == 0 {
					spec.Port, port = engine.DefaultPort, " (on a free port, not 8000)"
				}
				fmt.Fprintf(w, "\nserver %s (%d GPU%s)%s:\n", sv.Name, p.GPUs(sv), plural(p.GPUs(sv)), port)
				c, err := spec.Command()
				if err != nil {
					return fmt.Errorf("server %s: %w", sv.Name, err)
				}
				fmt.Fprintf(w, "  $ %s\n", c.String())
				if notes, err := spec.Check(); err == nil {
					for _, n := range notes {
						fmt.Fprintf(w, "  note: %s\n", n)
					}
				}
				first = false
			}
			wl := pr.Workload
			var prompts []string
			for _, c := range wl.Concurrencies {
				prompts = append(prompts, fmt.Sprint(wl.Prompts(c)))
			}
			state := ""
			if o.Resume != "" {
				state = fmt.Sprintf("; to run: %v", work[i].todo)
				if len(work[i].todo) == 0 {
					state = "; nothing to run"
				}
			}
			fmt.Fprintf(w, "  pair %s → %s: %s isl %d osl %d, conc %s (%s prompts, %d warmup%s each)%s\n",
				pr.Name(), filepath.Join(s.dir, pr.Server.Name, pr.Bench.Name), wl.Endpoint, wl.ISL, wl.OSL,
				joinInts(wl.Concurrencies), strings.Join(prompts, " "), wl.Warmups, plural(wl.Warmups), state)
		}
	}
	if len(dropped) > 0 {
		fmt.Fprintln(w, "\nleft out by the links:")
		for _, d := range dropped {
			fmt.Fprintf(w, "  %s/%s: %s\n", d.Server, d.Bench, d.Why)
		}
	}
	about := "about " + roundDur(est.remaining()).String()
	if est.remaining() >= MaxEstimate {
		about = "more than " + MaxEstimate.String()
	}
	fmt.Fprintf(w, "\nestimate: %s for %d levels and %d engine starts", about, est.levelsLeft(), len(est.servers))
	if est.measured > 0 {
		fmt.Fprintf(w, " (scaled by the %.0f s the levels on disk took against their model)\n", est.measured)
	} else {
		fmt.Fprintf(w, "\n  (a model, not a measurement: %v per output token, %v per prompt token of a wave, %v per trace export, %v per engine start;\n"+
			"  the simulated engine: %v per output token and %v per prompt token divided by its time scale, %v per export, %v per start)\n",
			AssumedTPOT, AssumedPrefillPerToken, AssumedExport, AssumedStart, AssumedSimTPOT, AssumedSimPrefillPerToken, AssumedSimExport, AssumedSimStart)
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " ")
}
