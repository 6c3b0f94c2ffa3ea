package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/inventory/analysis"
)

// runKernels writes the kernel inventory and category totals of a trace and
// prints their head.
func runKernels(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kernels", flag.ContinueOnError)
	fs.SetOutput(stderr)
	csvPath := fs.String("csv", "", "write the inventory to `FILE` with the conc{bs}_ prefix added (default: conc{bs}_kernels.csv in --out); the category totals go beside it; - prints the inventory CSV alone on stdout")
	outDir := fs.String("out", "", "`DIR` for the CSV files when --csv is not given (default "+defaultOutHelp+")")
	rulesPath := fs.String("rules", "", "category rule table `FILE` (default: the built-in one)")
	top := fs.Int("top", 25, "kernels to print (the CSV has them all)")
	asJSON := fs.Bool("json", false, "print the inventory as JSON")
	force := fs.Bool("force", false, "overwrite CSV files that exist")
	explainName := fs.String("explain", "", "print the evidence that decided the category and provider of the kernels named `NAME` (the exact name, else every kernel whose name contains it) and write nothing")
	rank := fs.Int("rank", 0, "with several rank traces (or a directory of them): the rank whose tables are printed and written")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile-model kernels TRACE... [--rank R] [--csv FILE|- | --out DIR] [--rules FILE] [--json] [--force] [--explain NAME]\n\nKernel inventory of a trace: every distinct kernel with its category and provider.")
		fs.PrintDefaults()
	}
	files, err := parseTraces(fs, args, "kernels")
	if err != nil {
		return err
	}
	opt, err := analysisOptions(*rulesPath, "")
	if err != nil {
		return err
	}
	opt.Parts = analysis.Inventory
	res, ranks, err := loadRanks(ctx, files, opt, *rank)
	if err != nil {
		return err
	}
	trace := res.Path
	bs := res.DecodeBS()
	writeTraceWarnings(stderr, res)
	if *explainName != "" {
		return explainKernels(stdout, res, *explainName)
	}
	if *csvPath == "-" {
		return res.Inventory.WriteKernelsCSV(stdout)
	}
	kPath := results.WithPrefix(cmp.Or(*csvPath, filepath.Join(outDirFor(*outDir, trace), "kernels.csv")), bs)
	cPath := results.CategoriesOf(kPath)
	if err := atomicfile.CheckOutputs(*force, append([]string{*rulesPath}, files...), kPath, cPath); err != nil {
		return err
	}
	if _, err := res.Write(results.TraceFiles{Kernels: kPath, Categories: cPath}); err != nil {
		return err
	}
	inv := res.Inventory
	if *asJSON {
		return writeKernelsJSON(stdout, inv, func(inv *inventory.Inventory) any {
			return struct {
				Trace         string `json:"trace"`
				DecodeBS      int    `json:"decode_bs"`
				KernelsCSV    string `json:"kernels_csv"`
				CategoriesCSV string `json:"categories_csv"`
				*inventory.Inventory
				Ranks *analysis.RankReport `json:"ranks,omitempty"`
			}{trace, bs, kPath, cPath, inv, ranks}
		})
	}
	analysis.WriteKernelsText(stdout, trace, inv, *top, kPath)
	fmt.Fprintf(stdout, "\nwrote %s and %s\n", kPath, cPath)
	if ranks != nil {
		writeRanksText(stdout, ranks, trace)
	}
	return nil
}

// writeKernelsJSON writes doc(inv) as writeJSON does, byte for byte, but
// streams the kernel rows one at a time: encoding/json builds and indents
// a whole document in memory, twice the size of a million rows.
func writeKernelsJSON(w io.Writer, inv *inventory.Inventory, doc func(*inventory.Inventory) any) error {
	if len(inv.Kernels) == 0 {
		return writeJSON(w, doc(inv))
	}
	head := *inv
	head.Kernels = []inventory.KernelRow{}
	var buf bytes.Buffer
	if err := writeJSON(&buf, doc(&head)); err != nil {
		return err
	}
	const marker = "\n  \"kernels\": ["
	before, after, ok := bytes.Cut(buf.Bytes(), []byte(marker+"]"))
	if !ok {
		return writeJSON(w, doc(inv))
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(before)
	bw.WriteString(marker)
	var row bytes.Buffer
	enc := json.NewEncoder(&row)
	enc.SetEscapeHTML(false)
	enc.SetIndent("    ", "  ")
	for i := range inv.Kernels {
		row.Reset()
		if err := enc.Encode(&inv.Kernels[i]); err != nil {
			return fmt.Errorf("writing JSON: %w", err)
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		bw.Write(bytes.TrimSuffix(row.Bytes(), []byte("\n")))
	}
	bw.WriteString("\n  ]")
	bw.Write(after)
	return bw.Flush()
}

// explainKernels prints, for the kernels that name picks (the exact name,
// else every name containing it), the labels and the evidence behind them.
func explainKernels(w io.Writer, res *analysis.Result, name string) error {
	var picked []inventory.KernelRow
	for _, k := range res.Inventory.Kernels {
		if k.Kernel == name {
			picked = []inventory.KernelRow{k}
			break
		}
		if strings.Contains(k.Kernel, name) {
			picked = append(picked, k)
		}
	}
	if len(picked) == 0 {
		return fmt.Errorf("kernels --explain: no kernel of %s has %q in its name; `profile-model kernels %s --csv -` lists them", res.Path, name, res.Path)
	}
	const most = 20
	for i, k := range picked {
		if i == most {
			fmt.Fprintf(w, "... and %d more kernels whose name contains %q: give more of the name\n", len(picked)-most, name)
			break
		}
		cl, why := res.Explain(k.Kernel)
		fmt.Fprintf(w, "%s\n  short name: %s\n  category:   %s (decided by %s)\n  provider:   %s\n  time:       %s µs in %d launches (%.2f%% of GPU time)\n  evidence:\n",
			k.Kernel, cl.ShortName, cl.Category, cl.Source, cl.Provider, k.Total, k.Count, k.Pct)
		for _, line := range why {
			fmt.Fprintf(w, "    - %s\n", line)
		}
	}
	return nil
}
