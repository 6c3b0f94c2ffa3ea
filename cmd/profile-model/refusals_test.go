package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/profiling/report/reporttest"
)

// synthArgs writes a small trace.
func synthArgs(out string, more ...string) []string {
	return append([]string{"synth", "--out", out, "--layers", "2", "--decode-steps", "4", "--python-per-step", "-1"}, more...)
}

// TestSynthRefusesToReplace: synth replaces neither an existing --out or
// --truth nor a symbolic link (or its target) without --force, and with
// --force replaces the link itself, never what it points to.
func TestSynthRefusesToReplace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, truth := filepath.Join(dir, "t.json"), filepath.Join(dir, "truth.json")
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), synthArgs(out, "--truth", truth), &stdout, &stderr))
	first, err := os.ReadFile(out)
	require.NoError(t, err)

	for _, args := range [][]string{synthArgs(out), synthArgs(filepath.Join(dir, "u.json"), "--truth", truth)} {
		err := run(context.Background(), append(args, "--seed", "9"), &stdout, &stderr)
		require.ErrorContains(t, err, "exists: pass --force")
	}
	again, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, first, again, "the refused run left the file alone")
	require.NoFileExists(t, filepath.Join(dir, "u.json"), "nothing written when one output is refused")

	target := filepath.Join(dir, "precious.txt")
	require.NoError(t, os.WriteFile(target, []byte("mine\n"), 0o644))
	link := filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink(target, link))
	err = run(context.Background(), synthArgs(link), &stdout, &stderr)
	require.ErrorContains(t, err, "symbolic link: it is not followed")
	require.NoError(t, run(context.Background(), synthArgs(link, "--force"), &stdout, &stderr))
	st, err := os.Lstat(link)
	require.NoError(t, err)
	require.True(t, st.Mode().IsRegular(), "--force replaced the link with the trace")
	kept, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, "mine\n", string(kept), "the link's target is untouched")

	// --force never writes over an input (refused before it is read).
	local := filepath.Join(dir, "conc8_layer.csv")
	require.NoError(t, os.WriteFile(local, []byte("a table\n"), 0o644))
	err = run(context.Background(), synthArgs(local, "--layer-csv", local, "--force"), &stdout, &stderr)
	require.ErrorContains(t, err, "is an input of this command")
	after, err := os.ReadFile(local)
	require.NoError(t, err)
	require.Equal(t, "a table\n", string(after))
}

// TestTrimRefusesItsInput: trim IN -o IN --force refuses, and IN is intact.
func TestTrimRefusesItsInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.json")
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), synthArgs(in, "--decode-steps", "8"), &stdout, &stderr))
	before, err := os.ReadFile(in)
	require.NoError(t, err)
	for _, out := range []string{in, filepath.Join(dir, ".", "in.json")} {
		err := run(context.Background(), []string{"trim", in, "-o", out, "--decode", "2", "--force"}, &stdout, &stderr)
		var u usageError
		require.ErrorAs(t, err, &u)
		require.ErrorContains(t, err, "is an input of this command")
	}
	link := filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink(in, link))
	err = run(context.Background(), []string{"trim", in, "-o", link, "--decode", "2", "--force"}, &stdout, &stderr)
	require.ErrorContains(t, err, "is an input of this command", "a link to the input is the input")
	after, err := os.ReadFile(in)
	require.NoError(t, err)
	require.Equal(t, before, after)
}

// TestReportKeepsEdits: report replaces its own files, refuses a readme.md
// edited since (or a file it never wrote) unless --force, and records what
// it wrote in report.sha256.
func TestReportKeepsEdits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	reporttest.MakeRun(t, dir, filepath.Join("..", "..", "fixtures", "models", "minimax-m2", "config.json"))
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"report", dir}, &stdout, &stderr))
	sums, err := os.ReadFile(filepath.Join(dir, "report.sha256"))
	require.NoError(t, err)
	require.Contains(t, string(sums), "  readme.md\n")
	require.NoError(t, run(context.Background(), []string{"report", dir}, &stdout, &stderr), "its own files are replaced")

	readme := filepath.Join(dir, "readme.md")
	orig, err := os.ReadFile(readme)
	require.NoError(t, err)
	edited := append(append([]byte(nil), orig...), "\nMy notes.\n"...)
	require.NoError(t, os.WriteFile(readme, edited, 0o644))
	err = run(context.Background(), []string{"report", dir}, &stdout, &stderr)
	require.ErrorContains(t, err, "readme.md was edited since the report wrote it")
	kept, err := os.ReadFile(readme)
	require.NoError(t, err)
	require.Equal(t, edited, kept)

	require.NoError(t, run(context.Background(), []string{"report", dir, "--force"}, &stdout, &stderr))
	again, err := os.ReadFile(readme)
	require.NoError(t, err)
	require.Equal(t, orig, again)

	// A chart the report did not write (no sums) is not replaced unasked.
	require.NoError(t, os.Remove(filepath.Join(dir, "report.sha256")))
	err = run(context.Background(), []string{"report", dir}, &stdout, &stderr)
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "does not list it"), err.Error())
}
