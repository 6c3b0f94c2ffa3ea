package tracing_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/tracing"
)

// Events longer than the read-ahead's headroom, cut by chunk boundaries at
// every offset, are read as the serial path reads them.
func TestReadAheadLongEvents(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	b.WriteString(`{"traceEvents": [`)
	var names []string
	for i := range 400 {
		// Names from a few bytes to 100 KB, so that events straddle the
		// chunk boundaries (64 KB, then doubling to 1 MB) at many offsets.
		name := fmt.Sprintf("k%d_%s", i, strings.Repeat("x", (i*7919)%(100<<10)))
		names = append(names, name)
		if i > 0 {
			b.WriteString(",\n  ")
		}
		fmt.Fprintf(&b, `{"ph": "X", "cat": "kernel", "name": %q, "pid": 2, "tid": 0, "ts": %d.250, "dur": 1.500, "args": {"device": 2, "stream": 0, "correlation": %d}}`, name, 1000+10*i, i+1)
	}
	b.WriteString("\n]}")
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	_, err := zw.Write(b.Bytes())
	require.NoError(t, err)
	require.NoError(t, zw.Close())

	for _, in := range []struct {
		name string
		data []byte
	}{{"json", b.Bytes()}, {"gzip", z.Bytes()}} {
		t.Run(in.name, func(t *testing.T) {
			ahead, err := tracing.Read(context.Background(), bytes.NewReader(in.data), "long", tracing.Options{})
			require.NoError(t, err)
			serial, err := tracing.Read(context.Background(), bytes.NewReader(in.data), "long", tracing.Options{NoReadAhead: true})
			require.NoError(t, err)
			require.Len(t, ahead.Kernels, len(names))
			for i := range ahead.Kernels {
				require.Equal(t, names[i], ahead.KernelName(i), "kernel %d", i)
				require.Equal(t, serial.Kernels[i], ahead.Kernels[i], "kernel %d", i)
				require.Equal(t, serial.KernelName(i), ahead.KernelName(i), "kernel %d", i)
			}
		})
	}
}
