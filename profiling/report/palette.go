package report

import (
	"hash/fnv"
	"image/color"
	"strings"
)

// categoryColours fixes the colour of each category across every run and
// report, so that two reports compare by eye (docs/analysis.md lists them).
// GEMMs are blues and purples, attention greens, norms and elementwise
// work oranges and browns, MoE routing reds, communication black.
var categoryColours = map[string]color.RGBA{
	"MoE expert GEMM":                {31, 119, 180, 255},  // blue
	"Dense GEMM (FP8/FP4)":           {148, 103, 189, 255}, // purple
	"Dense GEMM (BF16)":              {174, 199, 232, 255}, // light blue
	"Dense GEMM (FP32/TF32)":         {197, 176, 213, 255}, // light purple
	"Paged attention (decode)":       {44, 160, 44, 255},   // green
	"Flash attention (prefill)":      {152, 223, 138, 255}, // light green
	"Attention reduce":               {23, 190, 207, 255},  // cyan
	"RMSNorm / LayerNorm":            {255, 127, 14, 255},  // orange
	"Activation quant":               {188, 189, 34, 255},  // olive
	"Activation (SiLU/GELU and mul)": {219, 219, 141, 255}, // light olive
	"MoE gate":                       {214, 39, 40, 255},   // red
	"MoE sort / align":               {255, 152, 150, 255}, // pink
	"Elementwise / copy":             {140, 86, 75, 255},   // brown
	"RoPE":                           {227, 119, 194, 255}, // magenta
	"KV cache":                       {158, 218, 229, 255}, // light cyan
	"Embedding":                      {196, 156, 148, 255}, // light brown
	"Sampling":                       {247, 182, 210, 255}, // light magenta
	"All-reduce / collectives":       {40, 40, 40, 255},    // near black
	"Memcpy / memset":                {199, 199, 199, 255}, // light grey
	"Other":                          {127, 127, 127, 255}, // grey
}

// Colours of the parts of a token's time that are not kernels.
var (
	gapColour     = color.RGBA{220, 220, 220, 255}
	prefillColour = color.RGBA{90, 90, 90, 255}
)

// categoryColour is the category's fixed colour; a category the table
// does not know gets one from its name's hash, the same in every run.
func categoryColour(category string) color.RGBA {
	if c, ok := categoryColours[category]; ok {
		return c
	}
	return hashColour(category)
}

// hashColour picks a palette colour from a name, the same in every run.
func hashColour(name string) color.RGBA {
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(name)))
	return palette[h.Sum32()%uint32(len(palette))]
}
