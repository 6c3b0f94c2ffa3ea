package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/inventory/analysis"
	"github.com/profile-model/profile-model/tracing"
)

// simProfile profiles serve-sim (started with args) while n requests
// decode together, and returns the rank 0 trace. Every decode step of the
// profile has the batch n, whatever the machine's load: each request asks
// for more tokens than the test waits for, the profile starts once every
// stream has its first token (all n prefilled and decoding) and stops
// after each has received framesIn more, before any ends.
func simProfile(t *testing.T, n, framesIn int, args ...string) string {
	t.Helper()
	profDir := filepath.Join(t.TempDir(), "traces")
	p := startSim(t, append([]string{"--model", "org/Sim-Model", "--server-port", "0", "--torch-profiler-dir", profDir, "--time-scale", "0.5"}, args...)...)
	ctx, cancel := context.WithCancel(t.Context())
	var (
		mu     sync.Mutex
		change = sync.NewCond(&mu)
		frames = make([]int, n) // data frames each stream has received
		ended  error            // a stream that ended or failed before it was cancelled
	)
	// await waits until stream i has received want[i] frames, each i,
	// and returns the counts then.
	await := func(want []int) []int {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		for i := 0; ended == nil && i < n; {
			if frames[i] < want[i] {
				change.Wait()
				continue
			}
			i++
		}
		require.NoError(t, ended)
		return slices.Clone(frames)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// 100000 tokens: minutes of steps, so the stream is still going
			// when the profile stops.
			body := fmt.Sprintf(`{"model":"org/Sim-Model","prompt":"%s","max_tokens":100000,"ignore_eos":true,"stream":true}`, strings.Repeat("w ", 40+i))
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url+"/v1/completions", strings.NewReader(body))
			if err == nil {
				req.Header.Set("Content-Type", "application/json")
				var resp *http.Response
				if resp, err = http.DefaultClient.Do(req); err == nil && resp.StatusCode != http.StatusOK {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
				} else if err == nil {
					sc := bufio.NewScanner(resp.Body)
					for sc.Scan() {
						if strings.HasPrefix(sc.Text(), "data: ") {
							mu.Lock()
							frames[i]++
							change.Broadcast()
							mu.Unlock()
						}
					}
					err = cmp.Or(sc.Err(), errors.New("the stream ended"))
					resp.Body.Close()
				}
			}
			if ctx.Err() != nil {
				return // cancelled once the profile was taken
			}
			mu.Lock()
			ended = fmt.Errorf("stream %d ended before the profile was taken: %v", i, err)
			change.Broadcast()
			mu.Unlock()
		}()
	}
	defer func() {
		cancel() // the streams end once the profile is taken, not with the test
		wg.Wait()
	}()
	post := func(path string) {
		resp, err := http.Post(p.url+path, "application/json", nil)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
	first := make([]int, n)
	for i := range first {
		first[i] = 1
	}
	await(first)
	post("/start_profile")
	from := await(first)
	for i := range from {
		from[i] += framesIn
	}
	await(from)
	post("/stop_profile")
	traces, err := filepath.Glob(filepath.Join(profDir, "rank_0", "Sim-Model_ts_*.pt.trace.json.gz"))
	require.NoError(t, err)
	require.Len(t, traces, 1)
	return traces[0]
}

type layersJSON struct {
	DecodeBS  int                  `json:"decode_bs"`
	Capture   string               `json:"capture"`
	Positions []inventory.Position `json:"positions"`
	Warnings  []diag.Warning       `json:"warnings"`
	CSV       string               `json:"csv"`
}

// TestLayersCapture: serve-sim --mark-trace writes a capture trace per
// graph batch size, and `layers` on the run's trace names every position
// with its module path and the shapes of its graph's batch; a capture of
// another build warns capture_mismatch.
func TestLayersCapture(t *testing.T) {
	t.Parallel()
	trace := simProfile(t, 6, 30, "--mark-trace", "--cudagraph-capture-sizes", "[4,8,16]", "--layers", "6")
	caps, err := filepath.Glob(filepath.Join(filepath.Dir(trace), tracing.CaptureDir, "*"))
	require.NoError(t, err)
	var names []string
	for _, c := range caps {
		names = append(names, filepath.Base(c))
	}
	require.ElementsMatch(t, []string{"bs_4_q_1_rank0.json.gz", "bs_8_q_1_rank0.json.gz", "bs_16_q_1_rank0.json.gz"}, names)

	// A directory of rank traces does not take the capture traces for ranks.
	files, err := analysis.RankFiles([]string{filepath.Dir(trace)})
	require.NoError(t, err)
	require.Equal(t, []string{trace}, files)

	dir := t.TempDir()
	var out, errb bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"layers", trace, "--json", "--csv", filepath.Join(dir, "layer.csv")}, &out, &errb), errb.String())
	var got layersJSON
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
	require.Equal(t, 6, got.DecodeBS)
	require.Equal(t, filepath.Join(filepath.Dir(trace), tracing.CaptureDir, "bs_8_q_1_rank0.json.gz"), got.Capture, "6 sequences replay the graph of 8")
	require.Empty(t, got.Warnings)
	require.NotEmpty(t, got.Positions)
	for _, p := range got.Positions {
		// 6 sequences replay the graph of 8: its shapes have 8 rows.
		require.True(t, strings.HasPrefix(p.Module, "model.layers.*"), "pos %d (%s): module %q", p.Pos, p.ShortName, p.Module)
		require.NotEmpty(t, p.Op, "pos %d", p.Pos)
		require.True(t, strings.HasPrefix(p.InputDims, "[[8,"), "pos %d (%s): dims %q", p.Pos, p.ShortName, p.InputDims)
		require.NotEmpty(t, p.InputTypes, "pos %d", p.Pos)
	}
	experts := 0
	for _, p := range got.Positions {
		if p.ShortName == "MoE_GEMM (CK)" {
			require.Equal(t, "model.layers.*.mlp.experts", p.Module)
			experts++
		}
	}
	require.Equal(t, 2, experts, "the two expert GEMMs")
	rows, err := inventory.ReadLayerCSV(got.CSV)
	require.NoError(t, err, "the CSV with module columns still reads as a layer table")
	require.Len(t, rows, len(got.Positions))
	csvText, err := os.ReadFile(got.CSV)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(csvText), strings.Join(inventory.CaptureHeader, ",")+","+inventory.RoleColumn+"\n"))

	// Text: the module and shapes columns.
	out.Reset()
	require.NoError(t, run(t.Context(), []string{"layers", trace, "--force", "--csv", filepath.Join(dir, "layer.csv")}, &out, &errb))
	require.Contains(t, out.String(), "model.layers.*.mlp.experts")
	require.Contains(t, out.String(), "module paths and shapes from the capture trace "+got.Capture+" (117 captured kernels)\n", "6 layers of 19, embedding, final norm, lm_head")
	t.Logf("layers output:\n%s", out.String())

	// --capture of the graph of 4: the same kernels as the graph of 8 (the
	// model picks other GEMMs from 9 on), so no warning, the shapes of 4.
	capAt := func(bs int) string {
		return filepath.Join(filepath.Dir(trace), tracing.CaptureDir, tracing.CaptureFileName(bs, 1, 0))
	}
	out.Reset()
	require.NoError(t, run(t.Context(), []string{"layers", trace, "--json", "--force", "--csv", filepath.Join(dir, "layer.csv"), "--capture", capAt(4)}, &out, &errb))
	got = layersJSON{}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.Empty(t, got.Warnings)
	for _, p := range got.Positions {
		require.True(t, strings.HasPrefix(p.InputDims, "[[4,"), "pos %d: dims %q", p.Pos, p.InputDims)
	}

	// The graph of 16 runs other dense GEMMs: those positions stay
	// unnamed and a capture_mismatch warning says which.
	out.Reset()
	require.NoError(t, run(t.Context(), []string{"layers", trace, "--json", "--force", "--csv", filepath.Join(dir, "layer.csv"), "--capture", capAt(16)}, &out, &errb))
	got = layersJSON{}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.Len(t, got.Warnings, 1)
	require.Equal(t, diag.CaptureMismatch, got.Warnings[0].Code)
	t.Logf("mismatch warning: %s", got.Warnings[0].Message)
	unnamed := 0
	for _, p := range got.Positions {
		if p.Module == "" {
			unnamed++
			require.Contains(t, got.Warnings[0].Message, fmt.Sprintf("pos %d (%s) in 6 of 6 layers", p.Pos, p.ShortName))
			continue
		}
		require.True(t, strings.HasPrefix(p.InputDims, "[[16,"), "pos %d: dims %q", p.Pos, p.InputDims)
	}
	require.Equal(t, 3, unnamed, "the dense FP8 and BF16 GEMMs and the MoE sort differ from 9 sequences on")

	// Without the capture traces the table is the plain one: the same
	// rows, the compatible columns alone.
	var withCap, plain bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"layers", trace, "--csv", "-"}, &withCap, &errb))
	require.NoError(t, os.RemoveAll(filepath.Join(filepath.Dir(trace), tracing.CaptureDir)))
	require.NoError(t, run(t.Context(), []string{"layers", trace, "--csv", "-"}, &plain, &errb))
	require.Equal(t, string(inventory.FormatLayerCSV(mustRows(t, plain.Bytes()))), plain.String())
	capRows, plainRows := mustRows(t, withCap.Bytes()), mustRows(t, plain.Bytes())
	require.Equal(t, plainRows, capRows, "the capture columns come after the same columns")
	require.NotEqual(t, plain.String(), withCap.String())

	// Compat mode never reads a capture trace.
	require.Error(t, run(t.Context(), []string{"layers", trace, "--mode", "compat", "--capture", capAt(4)}, io.Discard, io.Discard))

	// An execution trace given as the capture is refused, not read as one
	// that names nothing.
	err = run(t.Context(), []string{"layers", trace, "--csv", "-", "--capture", trace}, io.Discard, io.Discard)
	require.ErrorContains(t, err, trace+" is not a capture trace (")
	require.ErrorContains(t, err, "kernel launches ran: an execution trace")
}

func mustRows(t *testing.T, csv []byte) []inventory.LayerRow {
	t.Helper()
	rows, err := inventory.ParseLayerCSV(bytes.NewReader(csv))
	require.NoError(t, err)
	return rows
}
