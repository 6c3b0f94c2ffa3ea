package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/bench"
)

// TestBoundFlags: both bounds are on by default and each can be set or
// turned off.
func TestBoundFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		args         []string
		stall, level time.Duration // the sweep's values: 0 level = derived, < 0 = none
		wantErr      string
	}{
		{"defaults", nil, bench.DefaultStallTimeout, 0, ""},
		{"set", []string{"--stall-timeout", "5s", "--level-timeout", "20m"}, 5 * time.Second, 20 * time.Minute, ""},
		{"auto", []string{"--level-timeout", "auto"}, bench.DefaultStallTimeout, 0, ""},
		{"none", []string{"--stall-timeout", "0", "--level-timeout", "0"}, -1, -1, ""},
		{"bad level timeout", []string{"--level-timeout", "soon"}, 0, 0, "want auto, 0 (none) or a duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fs := flag.NewFlagSet("bench", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			sf := addSweepFlags(fs, 128, 10, "")
			err := fs.Parse(tc.args)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			cfg, err := sf.config("bench")
			require.NoError(t, err)
			require.Equal(t, tc.stall, cfg.StallTimeout)
			require.Equal(t, tc.level, cfg.LevelTimeout)
		})
	}
}

// TestBenchNeverAnswered: bench against a server that never answers ends
// with an error (a non-zero exit) that says what it waited for.
func TestBenchNeverAnswered(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	defer srv.Close()
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"bench", "--url", srv.URL, "--model", "m", "--tokenizer", "none",
		"--conc", "1", "--stall-timeout", "200ms", "--out", t.TempDir()}, &out, &errb)
	require.ErrorContains(t, err, "calibration probe of 64 words: stall: POST "+srv.URL+"/v1/completions: stalled: no byte from the server for 200ms (--stall-timeout), waiting for the response to begin")
}

// The help of --level-timeout says its default: flag prints none for a
// value whose zero is the default.
func TestLevelTimeoutHelpSaysDefault(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var help bytes.Buffer
	fs.SetOutput(&help)
	addSweepFlags(fs, 128, 10, "")
	fs.PrintDefaults()
	require.Regexp(t, `-level-timeout value\n\s+deadline [^\n]*\(default auto\)\n`, help.String())
}
