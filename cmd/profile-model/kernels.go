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
	"math"
	"path/filepath"
	"strconv"
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
	asJSON := fs.Bool("json", false, "print the inventory as JSON (the CSV files are written only with --csv or --out)")
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
	if *asJSON && *csvPath == "" && *outDir == "" {
		kPath, cPath = "", "" // --json alone prints: reading needs no files written
	} else {
		if err := atomicfile.CheckOutputs(*force, append([]string{*rulesPath}, files...), kPath, cPath); err != nil {
			return err
		}
		if _, err := res.Write(results.TraceFiles{Kernels: kPath, Categories: cPath}); err != nil {
			return err
		}
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
	if inv.Kernels.Len() == 0 {
		return writeJSON(w, doc(inv))
	}
	head := *inv
	head.Kernels = inventory.KernelRows([]inventory.KernelRow{})
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
	var row []byte
	for i, r := range inv.Kernels.All() {
		var err error
		if row, err = appendKernelJSON(row[:0], &r); err != nil {
			return fmt.Errorf("writing JSON: %w", err)
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		bw.Write(row)
	}
	bw.WriteString("\n  ]")
	bw.Write(after)
	return bw.Flush()
}

// appendKernelJSON appends r as encoding/json writes it inside the kernels
// array (indent "  " under the prefix "    ", no HTML escapes), without
// its reflection and second, indenting pass: a quarter of kernels --json's
// time on a million rows. Values it does not spell itself (strings that
// need escapes, non-finite numbers) go to encoding/json.
func appendKernelJSON(b []byte, r *inventory.KernelRow) ([]byte, error) {
	for _, v := range []float64{r.AvgUS, r.MinUS, r.MaxUS, r.StdUS, r.Pct} {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return appendJSONValue(b, r, "    ", "  ")
		}
	}
	const field = "\n      \""
	var err error
	b = append(b, '{')
	for _, f := range [...]struct{ key, v string }{{"kernel", r.Kernel}, {"short_name", r.ShortName}, {"category", r.Category},
		{"category_source", string(r.Source)}, {"provider", r.Provider}, {"kind", r.Kind}} {
		b = append(append(append(b, field...), f.key...), "\": "...)
		if b, err = appendJSONString(b, f.v); err != nil {
			return nil, err
		}
		b = append(b, ',')
	}
	b = strconv.AppendInt(append(b, field+"count\": "...), int64(r.Count), 10)
	b = r.Total.AppendText(append(b, ","+field+"total_us\": "...))
	for _, f := range [...]struct {
		key string
		v   float64
	}{{"avg_us", r.AvgUS}, {"min_us", r.MinUS}, {"max_us", r.MaxUS}, {"std_us", r.StdUS}, {"pct", r.Pct}} {
		b = appendJSONFloat(append(append(append(b, ","+field...), f.key...), "\": "...), f.v)
	}
	return append(b, "\n    }"...), nil
}

// appendJSONString appends s quoted; a string with a byte that JSON
// escapes (or may: not printable ASCII) is quoted by encoding/json.
func appendJSONString(b []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return appendJSONValue(b, s, "", "")
		}
	}
	return append(append(append(b, '"'), s...), '"'), nil
}

// appendJSONValue appends v as writeJSON's encoder writes it, indented
// under prefix, without the final newline.
func appendJSONValue(b []byte, v any, prefix, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// appendJSONFloat appends a finite v as encoding/json spells a float64:
// the shortest form, exponent only below 1e-6 or from 1e21 on, without a
// leading zero in a negative exponent.
func appendJSONFloat(b []byte, v float64) []byte {
	format := byte('f')
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, v, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1]
		b = b[:n-1]
	}
	return b
}

// explainKernels prints, for the kernels that name picks (the exact name,
// else every name containing it), the labels and the evidence behind them.
func explainKernels(w io.Writer, res *analysis.Result, name string) error {
	var picked []inventory.KernelRow
	for _, k := range res.Inventory.Kernels.All() {
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
