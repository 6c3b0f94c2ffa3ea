package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/modelconfig"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/inventory/roofline"
)

// runLayers prints and writes the per-layer kernel table of a trace's decode
// steps, and in robust mode the prefill steps' table too
// (conc{bs}_prefill_layer.csv).
func runLayers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("layers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	csvPath := fs.String("csv", "", "write the table to `FILE` with the conc{bs}_ prefix added to its name (default: conc{bs}_layer.csv in --out); - prints the decode table's CSV alone on stdout")
	outDir := fs.String("out", "", "`DIR` for the CSV files when --csv is not given (default "+defaultOutHelp+")")
	mode := fs.String("mode", inventory.ModeRobust, "robust (find the repeating layer per step) or compat (the hand-run trace-layer script's anchor slicing)")
	anchor := fs.String("anchor", inventory.DefaultAnchor, "compat mode: kernel-name `PATTERN` that starts a layer")
	config := fs.String("config", "", "model `config.json`: check the layer count against num_hidden_layers")
	rulesPath := fs.String("rules", "", "category rule table `FILE` (default: the built-in one)")
	asJSON := fs.Bool("json", false, "print the structure found as JSON (the CSV files are written only with --csv or --out)")
	force := fs.Bool("force", false, "overwrite CSV files that exist")
	capture := fs.String("capture", "", "robust mode: capture trace `FILE` that names each position's module and input shapes (default: capture_traces/bs_<graph bs>_q_<q>_rank<r>.json.gz beside the trace, when there)")
	peaks := fs.String("peaks", "", "with --config: GPU peaks `FILE` for the roofline columns (default: the built-in table; format: docs/roofline.md)")
	tp := fs.Int("tp", 1, "with --config: the tensor-parallel ranks `N` the trace's rank ran with (heads and intermediate sizes are split across them)")
	ctxLen := fs.Float64("context", 0, "with --config: mean context length `TOKENS` of a decode step's sequences when the labels do not give it (ctx=); 0 leaves decode attention out of the roofline")
	bsFlag := fs.Int("bs", 0, "with --config: the decode batch size `N` when the trace's steps carry no batch labels (the roofline needs it)")
	kvDtype := fs.String("kv-cache-dtype", "", "with --config: the KV cache's `DTYPE` (fp8, bf16); default: read from the attention kernels' names")
	rank := fs.Int("rank", 0, "with several rank traces (or a directory of them): the rank whose tables are printed and written")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile-model layers TRACE... [--rank R] [--csv FILE|- | --out DIR] [--mode compat|robust] [--anchor PATTERN] [--config config.json [--peaks FILE] [--tp N] [--context TOKENS] [--kv-cache-dtype DTYPE]] [--capture FILE] [--json] [--force]\n\nPer-layer kernel table of the decode steps of a trace. Several traces, or a directory\nof rank traces (rank_<r>/, dp<d>_tp<r>, pp<p>_), are the ranks of one tensor-parallel\nlevel: they are analysed in parallel, the tables are of --rank, and the ranks are\ncompared (step and layer time, skew, collective time and waiting). With --config, the\nrobust tables get roofline columns (docs/roofline.md).")
		fs.PrintDefaults()
	}
	traces, err := parseTraces(fs, args, "layers")
	if err != nil {
		return err
	}
	if *mode != inventory.ModeRobust && *mode != inventory.ModeCompat {
		return usageError{fmt.Sprintf("layers: --mode is %q, want robust or compat", *mode)}
	}
	opt, err := analysisOptions(*rulesPath, *config)
	if err != nil {
		return err
	}
	opt.Anchor = *anchor
	opt.Parts = analysis.Layers
	if *mode == inventory.ModeCompat {
		opt.Parts = analysis.Compat
	}
	res, ranks, err := loadRanks(ctx, traces, opt, *rank)
	if err != nil {
		return err
	}
	trace := res.Path
	bs := res.DecodeBS()
	capNote, capPath := "", ""
	if *mode == inventory.ModeRobust {
		capPath = cmp.Or(*capture, analysis.FindCapture(trace, res.Trace.GraphBS()))
		if capPath != "" {
			c, err := res.AddCapture(ctx, capPath)
			if err != nil {
				return fmt.Errorf("layers: capture trace: %w", err)
			}
			capNote = fmt.Sprintf("module paths and shapes from the capture trace %s (%d captured kernels)\n", capPath, len(c.Kernels))
		} else if m := analysis.CaptureMissing(trace, res.Trace.GraphBS()); m != "" {
			capNote = "note: " + m + "; pass --capture FILE to name them from another capture\n"
		}
	} else if *capture != "" {
		return usageError{"layers: --capture names the robust table's positions: it does not apply to --mode compat"}
	}
	if *config == "" && (*peaks != "" || *ctxLen != 0 || *kvDtype != "" || *tp != 1 || *bsFlag != 0) {
		return usageError{"layers: --peaks, --tp, --context, --bs and --kv-cache-dtype set up the roofline columns, which need --config"}
	}
	var roofs analysis.Rooflines
	if opt.Arch != nil && *mode == inventory.ModeRobust {
		rl := roofline.Level{Arch: opt.Arch, TP: max(*tp, 1), KVCache: *kvDtype, Context: *ctxLen, BS: float64(*bsFlag)}
		if *peaks != "" {
			if rl.Peaks, err = roofline.LoadPeaks(*peaks); err != nil {
				return fmt.Errorf("layers: %w", err)
			}
		}
		roofs = res.AddRoofline(rl)
		for _, t := range []struct {
			lt   *inventory.LayerTable
			note string
		}{{res.Decode, roofs.DecodeNote}, {res.Prefill, roofs.PrefillNote}} {
			if t.note != "" && t.lt != nil && len(t.lt.Positions) > 0 {
				fmt.Fprintf(stderr, "note: the %s table has no roofline columns: %s\n", t.lt.StepKind, t.note)
			}
		}
		for _, w := range roofs.DimsWarnings {
			fmt.Fprintf(stderr, "warning: %s\n", w.Message)
		}
		for _, t := range []struct {
			kind string
			tab  *roofline.Table
		}{{"decode", roofs.Decode}, {"prefill", roofs.Prefill}} {
			if t.tab == nil {
				continue
			}
			for _, r := range t.tab.Refused {
				fmt.Fprintf(stderr, "warning: %s roofline: %s: left out\n", t.kind, r)
			}
			for _, p := range t.tab.Points {
				if p.PctRoof > 100 {
					fmt.Fprintf(stderr, "note: %s roofline: pos %d %s at %.1f%% of the roof: it moved less than the model of its work assumes (skewed MoE routing, shorter contexts); read it as at the roof\n", t.kind, p.Pos, p.Label, p.PctRoof)
				}
			}
		}
	}
	writeTraceWarnings(stderr, res)
	lt, prefill := res.Decode, res.Prefill
	if *mode == inventory.ModeCompat {
		lt = res.Compat
	}
	if *csvPath == "-" {
		_, err := stdout.Write(lt.CSV())
		return err
	}
	var files results.TraceFiles
	main := results.WithPrefix(cmp.Or(*csvPath, filepath.Join(outDirFor(*outDir, trace), "layer.csv")), bs)
	if *mode == inventory.ModeCompat {
		files.CompatLayer = main
	} else {
		files.Layer, files.PrefillLayer = main, results.PrefillOf(main, bs)
	}
	// --json alone prints: reading a trace needs no files written (it
	// once failed when the CSVs of an earlier run were there).
	var wrote []string
	if !*asJSON || *csvPath != "" || *outDir != "" {
		inputs := append([]string{*config, *rulesPath, capPath, *peaks}, traces...)
		if err := atomicfile.CheckOutputs(*force, inputs, files.Layer, files.PrefillLayer, files.CompatLayer); err != nil {
			return err
		}
		if wrote, err = res.Write(files); err != nil {
			return err
		}
	}
	out, prefillOut := "", ""
	for _, f := range wrote {
		if f == files.PrefillLayer {
			prefillOut = f
		} else {
			out = f
		}
	}
	if *asJSON {
		return writeJSON(stdout, struct {
			Trace      string `json:"trace"`
			DecodeBS   int    `json:"decode_bs"`
			Capture    string `json:"capture,omitempty"`
			CSV        string `json:"csv,omitempty"`
			PrefillCSV string `json:"prefill_csv,omitempty"`
			*inventory.LayerTable
			Prefill         *inventory.LayerTable `json:"prefill,omitempty"`
			Ranks           *analysis.RankReport  `json:"ranks,omitempty"`
			Roofline        *roofline.Table       `json:"roofline,omitempty"`
			PrefillRoofline *roofline.Table       `json:"prefill_roofline,omitempty"`
		}{trace, bs, capPath, out, prefillOut, lt, prefill, ranks, roofs.Decode, roofs.Prefill})
	}
	if bs > 0 {
		fmt.Fprintf(stdout, "%s: decode batch size %d\n", trace, bs)
	} else {
		// Unknown is not zero: no step of the trace says its batch.
		fmt.Fprintf(stdout, "%s: decode batch size unknown (no decode step carries a batch label)\n", trace)
	}
	fmt.Fprint(stdout, capNote)
	analysis.WriteLayersText(stdout, lt)
	if prefill != nil {
		fmt.Fprintln(stdout)
		analysis.WriteLayersText(stdout, prefill)
	}
	if len(wrote) > 0 {
		fmt.Fprintln(stdout)
	}
	for _, f := range wrote {
		fmt.Fprintf(stdout, "wrote %s\n", f)
	}
	if ranks != nil {
		writeRanksText(stdout, ranks, trace)
	}
	return nil
}

// defaultOutHelp says where analysis files go without --csv or --out.
const defaultOutHelp = "profile-model-out/<trace name>"

// outDirFor is the directory a command writes a trace's files into: the
// --out given, else profile-model-out/<trace name without its extensions>
// (never silently the current directory, where the files of several traces
// would overwrite each other).
func outDirFor(given, trace string) string {
	if given != "" {
		return given
	}
	return filepath.Join("profile-model-out", results.TraceStem(trace))
}

// analysisOptions reads the rule table and the model config flags.
func analysisOptions(rulesPath, configPath string) (analysis.Options, error) {
	var opt analysis.Options
	if rulesPath != "" {
		rules, err := inventory.LoadRules(rulesPath)
		if err != nil {
			return opt, err
		}
		opt.Rules = rules
	}
	if configPath != "" {
		cfg, err := modelconfig.Load(configPath)
		if err != nil {
			return opt, err
		}
		if cfg.NumHiddenLayers <= 0 {
			return opt, fmt.Errorf("%s: no num_hidden_layers (or text_config.num_hidden_layers) in the model config", configPath)
		}
		opt.NumLayers = cfg.NumHiddenLayers
		arch := cfg.Architecture()
		opt.Arch = &arch
	}
	return opt, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	return nil
}

// writeTraceWarnings prints the trace's own warnings (what the reader
// found: impossible values, duplicate keys, trailing data, a capture or
// GPU-only trace, lost GPU events) on stderr, where --csv - and --json
// leave them apart from the output: the tables' numbers depend on them,
// and only inspect printed them before.
func writeTraceWarnings(w io.Writer, res *analysis.Result) {
	for _, warn := range res.Summary.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn.Message)
	}
}
