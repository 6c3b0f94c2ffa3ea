package profiling

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"

	"github.com/profile-model/profile-model/internal/results"
)

// LevelBench is the benchmark result of a level of a finished run: the
// metrics of its bench.txt line (latency percentiles, throughput, decode
// batch size) plus, from the level's trace, the decode time per layer
// (layer-us) and per layer by category (<category>-us/layer, e.g.
// moe-expert-gemm-us/layer), so that benchstat compares kernel time as
// well as client latency between two releases.
func LevelBench(runDir string, li results.LevelInfo, isl, osl int) (results.BenchResult, error) {
	run := results.Run(runDir)
	lv, err := results.LoadLevel(run.LevelResult(li.Conc))
	if err != nil {
		return results.BenchResult{}, fmt.Errorf("level %d: %w", li.Conc, err)
	}
	r := results.BenchResultOf(lv, isl, osl)
	cats, err := readCategoryLayerUS(results.InDir(run.Level(li.Conc), li.DecodeBS).Categories)
	if err != nil {
		return r, err
	}
	total := 0.0
	var per []results.Metric
	for _, c := range cats {
		if c.us > 0 {
			total += c.us
			per = append(per, results.Metric{Value: c.us, Unit: results.CategoryUnit(c.category) + "-us/layer"})
		}
	}
	r.Metrics = append(r.Metrics, results.Metric{Value: total, Unit: "layer-us"})
	r.Metrics = append(r.Metrics, per...)
	return r, nil
}

type categoryLayerUS struct {
	category string
	us       float64
}

// readCategoryLayerUS reads the layer_us column of conc{bs}_categories.csv,
// in file order.
func readCategoryLayerUS(path string) ([]categoryLayerUS, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: line 1: %w", path, err)
	}
	ci, li := slices.Index(header, "category"), slices.Index(header, "layer_us")
	if ci < 0 || li < 0 {
		return nil, fmt.Errorf("%s: line 1: not a category table: no category or layer_us column", path)
	}
	var out []categoryLayerUS
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		v, err := strconv.ParseFloat(rec[li], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: layer_us %q is not a number", path, line, rec[li])
		}
		out = append(out, categoryLayerUS{rec[ci], v})
	}
}
