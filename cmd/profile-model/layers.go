package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/tracing"
)

// runLayers prints and writes the per-layer kernel table of a trace's decode
// steps (SPEC §3.7), and in robust mode the prefill steps' table too
// (conc{bs}_prefill_layer.csv).
func runLayers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("layers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	csvPath := fs.String("csv", "", "write the table to `FILE` with the conc{bs}_ prefix added to its name (default conc{bs}_layer.csv)")
	mode := fs.String("mode", inventory.ModeRobust, "robust (find the repeating layer per step) or compat (the seed script's anchor slicing)")
	anchor := fs.String("anchor", inventory.DefaultAnchor, "compat mode: kernel-name `PATTERN` that starts a layer")
	config := fs.String("config", "", "model `config.json`: check the layer count against num_hidden_layers")
	rulesPath := fs.String("rules", "", "category rule table `FILE` (default: the built-in one)")
	asJSON := fs.Bool("json", false, "print the structure found as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile-model layers TRACE [--csv FILE] [--mode compat|robust] [--anchor PATTERN] [--config config.json] [--json]\n\nPer-layer kernel table of the decode steps of a trace.")
		fs.PrintDefaults()
	}
	trace, err := parseOneTrace(fs, args, "layers")
	if err != nil {
		return err
	}
	if *mode != inventory.ModeRobust && *mode != inventory.ModeCompat {
		return usageError{fmt.Sprintf("layers: --mode is %q, want robust or compat", *mode)}
	}
	rules, err := loadRules(*rulesPath)
	if err != nil {
		return err
	}
	opt := inventory.LayerOptions{Mode: *mode, Anchor: *anchor, Rules: rules}
	if *config != "" {
		if opt.NumLayers, err = numHiddenLayers(*config); err != nil {
			return err
		}
	}
	tr, err := tracing.Load(ctx, trace, tracing.Options{})
	if err != nil {
		return err
	}
	lt, err := inventory.DecodeLayers(ctx, tr, opt)
	if err != nil {
		return fmt.Errorf("%s: %w", trace, err)
	}
	var prefill *inventory.LayerTable
	if *mode == inventory.ModeRobust {
		if prefill, err = inventory.PrefillLayers(ctx, tr, opt); err != nil {
			return fmt.Errorf("%s: %w", trace, err)
		}
		if prefill.Steps == 0 {
			prefill = nil
		}
		if lt.Steps == 0 && prefill == nil {
			// No engine steps (a plain model forward): the profiler's
			// steps, or graph replays, are the steps.
			other, err := inventory.StepLayers(ctx, tr, []tracing.StepKind{tracing.StepProfiler, tracing.StepGraph}, opt)
			if err != nil {
				return fmt.Errorf("%s: %w", trace, err)
			}
			if other.Steps > 0 {
				lt = other
			}
		}
	}
	out, prefillOut := "", ""
	if len(lt.Positions) > 0 {
		out = concPath(*csvPath, "layer.csv", tr.DecodeBS)
		if err := atomicfile.Write(out, inventory.FormatLayerCSV(lt.Rows())); err != nil {
			return err
		}
	}
	if prefill != nil && len(prefill.Positions) > 0 {
		prefillOut = prefillPath(concPath(*csvPath, "layer.csv", tr.DecodeBS), tr.DecodeBS)
		if err := atomicfile.Write(prefillOut, inventory.FormatLayerCSV(prefill.Rows())); err != nil {
			return err
		}
	}
	if *asJSON {
		return writeJSON(stdout, struct {
			Trace      string `json:"trace"`
			DecodeBS   int    `json:"decode_bs"`
			CSV        string `json:"csv,omitempty"`
			PrefillCSV string `json:"prefill_csv,omitempty"`
			*inventory.LayerTable
			Prefill *inventory.LayerTable `json:"prefill,omitempty"`
		}{trace, tr.DecodeBS, out, prefillOut, lt, prefill})
	}
	fmt.Fprintf(stdout, "%s: decode batch size %d\n", trace, tr.DecodeBS)
	printLayerTable(stdout, lt)
	if prefill != nil {
		fmt.Fprintln(stdout)
		printLayerTable(stdout, prefill)
	}
	if out != "" || prefillOut != "" {
		fmt.Fprintln(stdout)
	}
	for _, f := range []string{out, prefillOut} {
		if f != "" {
			fmt.Fprintf(stdout, "wrote %s\n", f)
		}
	}
	return nil
}

// prefillPath names the prefill steps' table after the decode one:
// conc8_layer.csv → conc8_prefill_layer.csv (the conc{bs}_ prefix stays first
// so a directory listing groups a level's files).
func prefillPath(decodePath string, bs int) string {
	dir, base := filepath.Split(decodePath)
	if prefix := fmt.Sprintf("conc%d_", bs); bs > 0 && strings.HasPrefix(base, prefix) {
		return filepath.Join(dir, prefix+"prefill_"+strings.TrimPrefix(base, prefix))
	}
	return filepath.Join(dir, "prefill_"+base)
}

// parseOneTrace parses flags given before or after the one trace argument.
func parseOneTrace(fs *flag.FlagSet, args []string, cmd string) (string, error) {
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
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

func loadRules(path string) (*inventory.Rules, error) {
	if path == "" {
		return inventory.DefaultRules(), nil
	}
	return inventory.LoadRules(path)
}

// concPath applies the conc{bs}_ naming rule (SPEC §3.7): the prefix goes in
// front of the file name the user gave, or of def in the current directory.
// Without a known decode batch size the name is left as it is.
func concPath(given, def string, bs int) string {
	if given == "" {
		given = def
	}
	if bs <= 0 {
		return given
	}
	dir, base := filepath.Split(given)
	prefix := fmt.Sprintf("conc%d_", bs)
	if strings.HasPrefix(base, prefix) {
		return given
	}
	return filepath.Join(dir, prefix+base)
}

// numHiddenLayers reads num_hidden_layers from a Hugging Face config.json
// (or its text_config, for multimodal models).
func numHiddenLayers(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading model config: %w", err)
	}
	var cfg struct {
		NumHiddenLayers int `json:"num_hidden_layers"`
		TextConfig      *struct {
			NumHiddenLayers int `json:"num_hidden_layers"`
		} `json:"text_config"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return 0, fmt.Errorf("%s: not a model config.json: %w", path, err)
	}
	if cfg.NumHiddenLayers == 0 && cfg.TextConfig != nil {
		cfg.NumHiddenLayers = cfg.TextConfig.NumHiddenLayers
	}
	if cfg.NumHiddenLayers <= 0 {
		return 0, fmt.Errorf("%s: no num_hidden_layers (or text_config.num_hidden_layers) in the model config", path)
	}
	return cfg.NumHiddenLayers, nil
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

func printLayerTable(w io.Writer, lt *inventory.LayerTable) {
	switch lt.Mode {
	case inventory.ModeCompat:
		fmt.Fprintf(w, "compat mode (anchor %q): %d layers of %v kernels over %d decode steps\n", lt.Anchor, lt.Layers, lt.KernelsPerLayer, lt.Steps)
	default:
		fmt.Fprintf(w, "%s steps: %d, %d layers per step, kernels per layer %v (robust mode)\n", strings.ReplaceAll(lt.StepKind, "_", " "), lt.Steps, lt.Layers, lt.KernelsPerLayer)
	}
	if len(lt.Positions) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		multi := len(lt.KernelsPerLayer) > 1
		head := "pos\t"
		if multi {
			head += "kind\t"
		}
		fmt.Fprintln(tw, head+"avg_us\tstd_us\tmin_us\tmax_us\tpct\tcount\t  short_name")
		total := map[int]float64{}
		for _, p := range lt.Positions {
			row := fmt.Sprintf("%d\t", p.Pos)
			if multi {
				row += fmt.Sprintf("%d\t", p.LayerKind)
			}
			fmt.Fprintf(tw, "%s%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t  %s\n", row, p.AvgUS, p.StdUS, p.MinUS, p.MaxUS, p.Pct, p.Count, p.ShortName)
			total[p.LayerKind] += p.AvgUS
		}
		tw.Flush()
		for kind := range lt.KernelsPerLayer {
			fmt.Fprintf(w, "layer kind %d: %d kernels, %.1f µs per layer\n", kind, lt.KernelsPerLayer[kind], total[kind])
		}
	}
	if len(lt.Prologue)+len(lt.Epilogue) > 0 {
		fmt.Fprintf(w, "prologue: %d kernels, epilogue: %d kernels (first step)\n", len(lt.Prologue), len(lt.Epilogue))
	}
	if n := len(lt.Irregular); n > 0 {
		fmt.Fprintf(w, "irregular layers: %d\n", n)
		// Layers that differ the same way are listed once.
		type group struct {
			what   string
			layers []string
		}
		var groups []*group
		byWhat := map[string]*group{}
		for _, irr := range lt.Irregular {
			var ds []string
			for _, d := range irr.Diffs {
				switch d.Op {
				case "extra":
					ds = append(ds, fmt.Sprintf("extra %s (stream %d) before pos %d", d.Kernel, d.Stream, d.Pos))
				case "missing":
					ds = append(ds, fmt.Sprintf("missing pos %d %s", d.Pos, d.Want))
				default:
					if d.WantFull != "" {
						ds = append(ds, fmt.Sprintf("pos %d runs another instance of %s (other template arguments; full names in --json)", d.Pos, d.Want))
						break
					}
					ds = append(ds, fmt.Sprintf("pos %d runs %s instead of %s", d.Pos, d.Kernel, d.Want))
				}
			}
			what := fmt.Sprintf("kind %d: %s", irr.Kind, strings.Join(ds, "; "))
			g := byWhat[what]
			if g == nil {
				g = &group{what: what}
				byWhat[what] = g
				groups = append(groups, g)
			}
			g.layers = append(g.layers, fmt.Sprintf("step %d layer %d", irr.Step, irr.Layer))
		}
		for i, g := range groups {
			if i == 20 {
				fmt.Fprintf(w, "  ... and %d more kinds of difference (see --json)\n", len(groups)-i)
				break
			}
			where := strings.Join(g.layers, ", ")
			if len(g.layers) > 3 {
				where = fmt.Sprintf("%s, ... (%d layers)", strings.Join(g.layers[:3], ", "), len(g.layers))
			}
			fmt.Fprintf(w, "  %s: %s\n", where, g.what)
		}
	}
	for _, warn := range lt.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
}
