package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChecksumFailsEveryCommand: a gzip trace whose CRC-32 or length does
// not match is an error on every command that reads traces (inspect,
// layers, kernels and diff once printed results and exited 0, with a
// warning, while trim refused); with trailing zero padding the same trace
// reads cleanly everywhere.
func TestChecksumFailsEveryCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json.gz")
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), synthArgs(good), &stdout, &stderr))
	data, err := os.ReadFile(good)
	require.NoError(t, err)
	require.Equal(t, []byte{0x1f, 0x8b}, data[:2], "synth wrote gzip")
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	flip := func(at int) []byte { // at counts from the end
		c := bytes.Clone(data)
		c[len(c)-at] ^= 1
		return c
	}
	padded := write("padded.json.gz", append(bytes.Clone(data), make([]byte, 16)...))
	for _, bad := range []string{write("crc.json.gz", flip(8)), write("isize.json.gz", flip(1))} {
		for _, args := range [][]string{
			{"inspect", bad},
			{"inspect", bad, "--json"},
			{"layers", bad, "--out", filepath.Join(dir, "l")},
			{"kernels", bad, "--out", filepath.Join(dir, "k")},
			{"diff", good, bad},
			{"diff", bad, good},
			{"trim", bad, "-o", filepath.Join(dir, "t.json"), "--decode", "2", "--force"},
		} {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), args, &stdout, &stderr)
			require.ErrorContains(t, err, "checksum mismatch", "%v\n%s", args, stdout.String())
		}
	}
	for _, args := range [][]string{
		{"inspect", padded},
		{"layers", padded, "--out", filepath.Join(dir, "l2")},
		{"kernels", padded, "--out", filepath.Join(dir, "k2")},
		{"trim", padded, "-o", filepath.Join(dir, "t2.json"), "--decode", "2"},
	} {
		var stdout, stderr bytes.Buffer
		require.NoError(t, run(context.Background(), args, &stdout, &stderr), "%v", args)
		require.NotContains(t, stdout.String()+stderr.String(), "checksum", "%v", args)
	}
}
