package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/tracing"
)

// runKernels writes the kernel inventory and category totals of a trace
// (SPEC §4, §5.1) and prints their head.
func runKernels(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kernels", flag.ContinueOnError)
	fs.SetOutput(stderr)
	csvPath := fs.String("csv", "", "write the inventory to `FILE` with the conc{bs}_ prefix added (default conc{bs}_kernels.csv); the category totals go beside it")
	rulesPath := fs.String("rules", "", "category rule table `FILE` (default: the built-in one)")
	top := fs.Int("top", 25, "kernels to print (the CSV has them all)")
	asJSON := fs.Bool("json", false, "print the inventory as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile-model kernels TRACE [--csv FILE] [--rules FILE] [--json]\n\nKernel inventory of a trace: every distinct kernel with its category and provider.")
		fs.PrintDefaults()
	}
	trace, err := parseOneTrace(fs, args, "kernels")
	if err != nil {
		return err
	}
	rules, err := loadRules(*rulesPath)
	if err != nil {
		return err
	}
	tr, err := tracing.Load(ctx, trace, tracing.Options{})
	if err != nil {
		return err
	}
	// The per-layer column of the category totals comes from the robust table.
	layers, err := inventory.DecodeLayers(ctx, tr, inventory.LayerOptions{Rules: rules})
	if err != nil {
		return fmt.Errorf("%s: %w", trace, err)
	}
	inv, err := inventory.BuildInventory(ctx, tr, rules, layers)
	if err != nil {
		return fmt.Errorf("%s: %w", trace, err)
	}
	kPath := concPath(*csvPath, "kernels.csv", tr.DecodeBS)
	cPath := categoriesPath(kPath)
	if err := atomicfile.Write(kPath, inv.KernelsCSV()); err != nil {
		return err
	}
	if err := atomicfile.Write(cPath, inv.CategoriesCSV()); err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(stdout, struct {
			Trace         string `json:"trace"`
			DecodeBS      int    `json:"decode_bs"`
			KernelsCSV    string `json:"kernels_csv"`
			CategoriesCSV string `json:"categories_csv"`
			*inventory.Inventory
		}{trace, tr.DecodeBS, kPath, cPath, inv})
	}
	fmt.Fprintf(stdout, "%s: %d distinct kernels, %s µs kernel time, %.2f%% in %s (rules: %s)\n",
		trace, len(inv.Kernels), inv.KernelTime, inv.OtherPct, inventory.Other, inv.Rules)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "total_us\tpct\tcount\tavg_us\tcategory\tprovider\tshort_name")
	for i, r := range inv.Kernels {
		if i == *top {
			break
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%d\t%.1f\t%s\t%s\t%s\n", r.Total, r.Pct, r.Count, r.AvgUS, r.Category, r.Provider, r.ShortName)
	}
	tw.Flush()
	if n := len(inv.Kernels) - *top; n > 0 && *top >= 0 {
		fmt.Fprintf(stdout, "... and %d more in %s\n", n, kPath)
	}
	fmt.Fprintln(stdout)
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "category\ttotal_us\tpct\tper_decode_step_us\tper_layer_us\tproviders")
	for _, c := range inv.ByCategory {
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.1f\t%.1f\t%s\n", c.Category, c.Total, c.Pct, c.DecodeStepUS, c.LayerUS, c.Providers)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "\nwrote %s and %s\n", kPath, cPath)
	return nil
}

// categoriesPath names the category totals after the inventory file:
// conc8_kernels.csv -> conc8_categories.csv, x.csv -> x_categories.csv.
func categoriesPath(kernelsPath string) string {
	dir, base := filepath.Split(kernelsPath)
	if strings.Contains(base, "kernels") {
		return filepath.Join(dir, strings.Replace(base, "kernels", "categories", 1))
	}
	return filepath.Join(dir, strings.TrimSuffix(base, filepath.Ext(base))+"_categories.csv")
}
