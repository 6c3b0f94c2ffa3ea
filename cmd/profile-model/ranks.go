package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/profile-model/profile-model/inventory/analysis"
)

// parseTraces parses flags given before or after the trace arguments and
// expands directories of rank traces (rank_<r>/, dp<d>_tp<r>, pp<p>_).
func parseTraces(fs *flag.FlagSet, args []string, cmd string) ([]string, error) {
	var given []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, usageError{err.Error()}
		}
		if fs.NArg() == 0 {
			break
		}
		given = append(given, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(given) == 0 {
		fs.Usage()
		return nil, usageError{fmt.Sprintf("%s: no trace given", cmd)}
	}
	files, err := analysis.RankFiles(given)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	return files, nil
}

// loadRanks analyses one trace, or the ranks of a level in parallel; then
// the result of the chosen rank (its tables are the command's) and, for
// several, the ranks side by side.
func loadRanks(ctx context.Context, files []string, opt analysis.Options, rank int) (*analysis.Result, *analysis.RankReport, error) {
	if len(files) == 1 {
		if rank > 0 {
			return nil, nil, usageError{fmt.Sprintf("--rank %d: one trace given (rank 0)", rank)}
		}
		res, err := analysis.Load(ctx, files[0], opt)
		return res, nil, err
	}
	opt.Parts |= analysis.Layers // the per-rank layer time
	results, err := analysis.LoadRanks(ctx, files, opt)
	if err != nil {
		return nil, nil, err
	}
	pick := -1
	for i, f := range files {
		if id := analysis.RankOf(f); id.TP == rank && pick < 0 {
			pick = i
		}
	}
	if pick < 0 {
		if rank >= len(files) {
			return nil, nil, usageError{fmt.Sprintf("--rank %d: %d traces given", rank, len(files))}
		}
		pick = rank
	}
	return results[pick], analysis.CompareRanks(results), nil
}

// writeRanksText prints the ranks of a level side by side.
func writeRanksText(w io.Writer, rep *analysis.RankReport, chosen string) {
	fmt.Fprintf(w, "\nranks: %d, %d decode steps compared; tables above are of %s\n", len(rep.Ranks), rep.Steps, chosen)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "rank\tstep_us\tbusy_us\tlayer_us\tcollective_us\town_us\twait_us\tslowest_steps")
	for _, r := range rep.Ranks {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\n", r.Rank, r.StepUS, r.BusyUS, r.LayerUS, r.CollectiveUS, r.OwnUS, r.WaitUS, r.Slowest)
	}
	tw.Flush()
	fmt.Fprintf(w, "skew between ranks (slowest minus fastest busy time per step): mean %.1f µs, max %.1f µs\n", rep.SkewUS, rep.MaxSkewUS)
	for _, wr := range rep.Warnings {
		fmt.Fprintf(w, "warning: %s\n", wr.Message)
	}
}

// parseOneTrace parses flags given before or after the one trace argument.
func parseOneTrace(fs *flag.FlagSet, args []string, cmd string) (string, error) {
	var files []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return "", usageError{err.Error()}
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) != 1 {
		fs.Usage()
		return "", usageError{fmt.Sprintf("%s: want one trace, got %d", cmd, len(files))}
	}
	return files[0], nil
}
