package tracing_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/tracing"
)

// kernelEvent is a kernel in the layout Kineto writes (the fast path reads
// it) or, with compact set, without spaces (the general parser reads it).
func kernelEvent(ts, dur, pid, corr string, compact bool) string {
	e := `{"ph": "X", "cat": "kernel", "name": "k", "pid": ` + pid + `, "tid": 7, "ts": ` + ts + `, "dur": ` + dur + `, "args": {"device": 0, "stream": 7, "correlation": ` + corr + `}}`
	if compact {
		e = strings.ReplaceAll(e, ": ", ":")
		e = strings.ReplaceAll(e, ", ", ",")
	}
	return e
}

// JSON that is not valid where it would change a value is refused with
// its byte offset, not read as something else.
func TestInvalidJSONThatChangesAValue(t *testing.T) {
	t.Parallel()
	good := kernelEvent("100.5", "2", "0", "1", false)
	cases := []struct {
		name  string
		doc   string
		want  string // in the error
		where int    // the byte offset the error gives
	}{
		{"second traceEvents", `{"traceEvents": [` + good + `], "traceEvents": [` + good + `]}`, "a second traceEvents key", len(`{"traceEvents": [` + good + `], "traceEvents": `)},
		{"dur with a leading zero", `{"traceEvents": [` + good + `, ` + kernelEvent("101", "0123", "0", "2", false) + `]}`, `bad dur "0123"`, len(`{"traceEvents": [` + good + `, `)},
		{"ts with a leading zero", `{"traceEvents": [` + kernelEvent("0100", "2", "0", "1", false) + `]}`, `bad ts "0100"`, len(`{"traceEvents": [`)},
		{"negative with a leading zero", `{"traceEvents": [` + kernelEvent("100", "-01", "0", "1", true) + `]}`, `bad dur "-01"`, len(`{"traceEvents": [`)},
		{"pid with a leading zero", `{"traceEvents": [` + kernelEvent("100", "2", "007", "1", false) + `]}`, `bad pid "007"`, len(`{"traceEvents": [`)},
		{"correlation with a leading zero", `{"traceEvents": [` + kernelEvent("100", "2", "0", "012", false) + `]}`, `bad args.correlation "012"`, len(`{"traceEvents": [`)},
		{"compact dur with a leading zero", `{"traceEvents": [` + kernelEvent("100", "00", "0", "1", true) + `]}`, `bad dur "00"`, len(`{"traceEvents": [`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := tracing.Read(context.Background(), strings.NewReader(c.doc), "bad.json", tracing.Options{})
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
			require.Contains(t, err.Error(), "byte "+strconv.Itoa(c.where))
		})
	}
	// The same events written validly read as they say.
	tr, err := tracing.Read(context.Background(), strings.NewReader(`{"traceEvents": [`+good+`, `+kernelEvent("101", "0.123", "0", "2", true)+`]}`), "good.json", tracing.Options{})
	require.NoError(t, err)
	require.Len(t, tr.Kernels, 2)
	require.Equal(t, int64(123), tr.Kernels[1].Dur)
}
