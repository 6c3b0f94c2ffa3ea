package sim

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPersonalityProfilingAnswers: ATOM's and vLLM's profilers ignore a
// start while they run and a stop while they do not (200 both); the
// simulator's own and SGLang's refuse them; vLLM without a profiler has
// no profiling routes at all, and neither vLLM nor SGLang serves /metrics
// here.
func TestPersonalityProfilingAnswers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		p                   Personality
		dir                 string
		stopIdle, startBusy int
		metrics             int
	}{
		{"", dir, http.StatusBadRequest, http.StatusInternalServerError, http.StatusOK},
		{PersonalityATOM, dir, http.StatusOK, http.StatusOK, http.StatusOK},
		{PersonalityVLLM, dir, http.StatusOK, http.StatusOK, http.StatusNotFound},
		{PersonalityVLLM, "", http.StatusNotFound, http.StatusNotFound, http.StatusNotFound},
		{PersonalitySGLang, dir, http.StatusBadRequest, http.StatusInternalServerError, http.StatusNotFound},
	} {
		ts := start(t, Config{Personality: tc.p, ProfilerDir: tc.dir})
		name := string(tc.p) + " dir=" + strconv.Quote(tc.dir)
		code, _ := post(t, ts.URL+"/stop_profile", nil)
		require.Equal(t, tc.stopIdle, code, name+": stop while not profiling")
		post(t, ts.URL+"/start_profile", nil)
		code, _ = post(t, ts.URL+"/start_profile", nil)
		require.Equal(t, tc.startBusy, code, name+": start while profiling")
		code, _ = get(t, ts.URL+"/metrics")
		require.Equal(t, tc.metrics, code, name+": /metrics")
	}
}

// TestATOMMetricsRefresh: an ATOM stand-in's /metrics is a snapshot that
// changes only at its refresh, whose time it reports.
func TestATOMMetricsRefresh(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{Personality: PersonalityATOM, MetricsRefresh: 200 * time.Millisecond})
	stamp := func() string {
		_, body := get(t, ts.URL+"/metrics")
		for _, line := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, "atom:metrics_last_refresh_timestamp_seconds "); ok {
				return v
			}
		}
		t.Fatalf("no refresh stamp in %s", body)
		return ""
	}
	// Two readings in a row show the same snapshot, unless a refresh fell
	// between them: then the next two do.
	first, same := "", false
	for range 3 {
		a, b := stamp(), stamp()
		if first, same = b, a == b; same {
			break
		}
	}
	require.True(t, same, "the same snapshot within the interval")
	require.Eventually(t, func() bool { return stamp() != first }, 2*time.Second, 20*time.Millisecond, "a new snapshot after the interval")
}
