package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/fleet"
)

// regress --save-baseline keeps a sim sweep's results under a name and
// --baseline compares with it; a regressed result is not saved.
func TestRegressNamedBaseline(t *testing.T) {
	t.Parallel()
	res := t.TempDir()
	simSweepRun(t, res, "sim-moe", simTables)
	store := filepath.Join(t.TempDir(), "baselines")
	regress := func(args ...string) (string, string, error) {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"regress", "--baselines", store}, args...), &stdout, &stderr)
		return stdout.String(), stderr.String(), err
	}

	_, stderr, err := regress("--save-baseline", "main", res)
	require.NoError(t, err, stderr)
	require.Contains(t, stderr, "saved "+res+" as baseline main")
	_, _, err = regress("--save-baseline", "main", res)
	require.ErrorContains(t, err, "baseline main exists")

	out, stderr, err := regress("--baseline", "main", res)
	require.NoError(t, err, stderr)
	require.Contains(t, out, "No regression")
	require.Contains(t, out, "baseline main (")

	// A baseline twice as fast in every latency: the results regress
	// (thresholds alone, --alpha 0, one run a side) and are not saved.
	bf, err := fleet.LoadBaseline(store, "main")
	require.NoError(t, err)
	for i := range bf.Summary.Sweeps {
		for j := range bf.Summary.Sweeps[i].Levels {
			ms := bf.Summary.Sweeps[i].Levels[j].Metrics
			for k := range ms {
				if strings.HasSuffix(ms[k].Unit, "-ms") {
					ms[k].Median /= 2
					for v := range ms[k].Values {
						ms[k].Values[v] /= 2
					}
				}
			}
		}
	}
	_, err = fleet.SaveBaseline(store, "fast", bf.Summary, nil, time.Now(), false)
	require.NoError(t, err)
	out, stderr, err = regress("--baseline", "fast", "--save-baseline", "next", "--alpha", "0", res)
	require.ErrorIs(t, err, errSilent, out)
	require.Contains(t, stderr, "not saved as baseline next: the results regressed")
	require.NoFileExists(t, filepath.Join(store, "next.json"))

	_, _, err = regress("--baseline", "nope", res)
	require.ErrorContains(t, err, `no baseline "nope"`)
	require.ErrorContains(t, err, "(there: fast, main)")
	_, _, err = regress("--baseline", "main", res, res)
	require.ErrorContains(t, err, "with --baseline, want RESULTS alone")
}
