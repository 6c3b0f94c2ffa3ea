package report

import (
	"hash/fnv"
	"strings"

	"github.com/profile-model/profile-model/internal/svgchart"
)

// categoryColours fixes the colour of each category across every run and
// report, so that two reports compare by eye (docs/analysis.md lists them).
// GEMMs are blues and purples, attention greens, norms and elementwise
// work oranges and browns, MoE routing reds, communication black.
var categoryColours = map[string]string{
	"MoE expert GEMM":                "#1f77b4", // blue
	"Dense GEMM (FP8/FP4)":           "#9467bd", // purple
	"Dense GEMM (BF16)":              "#aec7e8", // light blue
	"Dense GEMM (FP32/TF32)":         "#c5b0d5", // light purple
	"Paged attention (decode)":       "#2ca02c", // green
	"Flash attention (prefill)":      "#98df8a", // light green
	"Attention reduce":               "#17becf", // cyan
	"RMSNorm / LayerNorm":            "#ff7f0e", // orange
	"Activation quant":               "#bcbd22", // olive
	"Activation (SiLU/GELU and mul)": "#dbdb8d", // light olive
	"MoE gate":                       "#d62728", // red
	"MoE sort / align":               "#ff9896", // pink
	"Elementwise / copy":             "#8c564b", // brown
	"RoPE":                           "#e377c2", // magenta
	"KV cache":                       "#9edae5", // light cyan
	"Embedding":                      "#c49c94", // light brown
	"Sampling":                       "#f7b6d2", // light magenta
	"All-reduce / collectives":       "#282828", // near black
	"Memcpy / memset":                "#c7c7c7", // light grey
	"Other":                          "#7f7f7f", // grey
}

// Colours of the parts of a token's time that are not kernels.
const (
	gapColour       = "#dcdcdc"
	prefillColour   = "#5a5a5a"
	otherStepColour = "#a0a0a0"
)

// categoryColour is the category's fixed colour; a category the table
// does not know gets one from its name's hash, the same in every run.
func categoryColour(category string) string {
	if c, ok := categoryColours[category]; ok {
		return c
	}
	return hashColour(category)
}

// hashColour picks a palette colour from a name, the same in every run.
func hashColour(name string) string {
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(name)))
	return svgchart.Colour(int(h.Sum32() % svgchart.Colours))
}
