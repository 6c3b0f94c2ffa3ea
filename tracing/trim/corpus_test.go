package trim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/tracing"
	"github.com/profile-model/profile-model/tracing/trim"
)

// Every real trace of the corpus, read in place: where it has steps, the
// middle step (and, for decode traces, --decode 1) is trimmed and the
// analysis of the result must find exactly that step with the source's
// kernels and times; where it has none, a window in the middle of its GPU
// span is cut. Either way the result must keep the trace-event format.
func TestCorpusTraces(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(corpus.Dir(t), "traces")
	files, err := filepath.Glob(filepath.Join(dir, "*.json.gz"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no traces in %s", dir)
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".json.gz"), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(path)
			require.NoError(t, err)
			full, err := tracing.Load(context.Background(), path, tracing.Options{})
			require.NoError(t, err)
			if len(full.Steps) == 0 {
				require.NotEmpty(t, full.Kernels)
				first, last := full.Kernels[0].Start, full.Kernels[len(full.Kernels)-1].Start
				w := trim.Window{StartNS: first + (last-first)/3 - full.BaseNS, EndNS: first + 2*(last-first)/3 - full.BaseNS}
				out, _ := doTrim(t, src, trim.Options{Window: &w})
				cut := read(t, out)
				require.NotEmpty(t, cut.Kernels)
				for i := range cut.Kernels {
					k := &cut.Kernels[i]
					require.True(t, k.Start < w.EndNS+full.BaseNS && k.End() >= w.StartNS+full.BaseNS, "kernel %s outside the window", cut.NameOf(k))
				}
				return
			}
			choices := []trim.Options{{Steps: &trim.StepRange{From: len(full.Steps) / 2, To: len(full.Steps)/2 + 1}}}
			if full.Summarize().Steps["decode"] > 0 {
				choices = append(choices, trim.Options{Decode: 1})
			}
			for _, opts := range choices {
				out, res := doTrim(t, src, opts)
				require.Len(t, res.TraceSteps, len(full.Steps), "trim numbers the steps as the analysis does")
				for i, s := range res.TraceSteps {
					require.Equal(t, full.Steps[i].Label, s.Label, "step %d", i)
				}
				cut := read(t, out)
				want := viewSteps(full, indexes(res.Steps))
				got := viewSteps(cut, seq(len(cut.Steps)))
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("steps differ from the source's (-source +trimmed):\n%s", d)
				}
			}
		})
	}
}

// The trimmed trace reads the same whether the source is gzip or not.
func TestCorpusGzipAndPlainAgree(t *testing.T) {
	t.Parallel()
	path := corpus.Path(t, "traces/minitoy-train-mi250-rocm62.json.gz")
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotEmpty(t, read(t, src).Steps)
	a, _ := doTrim(t, src, trim.Options{Steps: &trim.StepRange{From: 0, To: 1}})
	var unzipped bytes.Buffer
	require.NoError(t, gunzip(src, &unzipped))
	b, _ := doTrim(t, unzipped.Bytes(), trim.Options{Steps: &trim.StepRange{From: 0, To: 1}})
	require.Equal(t, string(a), string(b))
}

// A CUDA trace writes each kernel before its launch: the arrows between
// them are kept all the same, every one whose two ends the trimmed trace
// holds (here, the only step: all of them).
func TestCorpusCUDAFlowsKept(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(corpus.Path(t, "traces/qwen1.5-0.5b-forward-h100.json.gz"))
	require.NoError(t, err)
	out, res := doTrim(t, src, trim.Options{Steps: &trim.StepRange{From: 0, To: 1}})
	require.Len(t, res.TraceSteps, 1)
	var plain bytes.Buffer
	require.NoError(t, gunzip(src, &plain))
	want, got := pairedFlows(t, plain.Bytes()), pairedFlows(t, out)
	require.NotZero(t, want)
	require.Equal(t, want, got)
}

// pairedFlows counts the flow ids that have both a start and an end.
func pairedFlows(t *testing.T, data []byte) int {
	t.Helper()
	var doc struct {
		TraceEvents []struct {
			Ph  string          `json:"ph"`
			Cat string          `json:"cat"`
			ID  json.RawMessage `json:"id"`
		} `json:"traceEvents"`
	}
	require.NoError(t, json.Unmarshal(data, &doc))
	ends := map[string]int{}
	for _, e := range doc.TraceEvents {
		switch e.Ph {
		case "s":
			ends[e.Cat+string(e.ID)] |= 1
		case "f":
			ends[e.Cat+string(e.ID)] |= 2
		}
	}
	n := 0
	for _, v := range ends {
		if v == 3 {
			n++
		}
	}
	return n
}
