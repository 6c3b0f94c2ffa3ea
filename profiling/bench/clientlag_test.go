package bench

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/diag"
)

func TestLagWarning(t *testing.T) {
	t.Parallel()
	ok := func(lag, e2el time.Duration) output {
		return output{Start: time.Unix(1, 0), SendLag: lag, E2EL: e2el}
	}
	for _, tc := range []struct {
		name string
		outs []output
		want string // "" no warning
	}{
		{"keeps up", []output{ok(time.Millisecond, time.Second), ok(0, time.Second)}, ""},
		{"a start-up ramp", []output{ok(40*time.Millisecond, time.Second), ok(0, time.Second)}, ""},
		{"falls behind", []output{ok(100*time.Millisecond, 900*time.Millisecond), ok(100*time.Millisecond, 900*time.Millisecond)},
			"its streams spent 10.0% of their time waiting for it to send (bound 5%; send lag p99 100ms)"},
		{"microseconds on requests of microseconds", []output{ok(60*time.Microsecond, 200*time.Microsecond)}, ""},
		{"failed requests do not count", []output{ok(0, time.Second), {Start: time.Unix(1, 0), SendLag: time.Second, Failure: failStall}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, warned := lagWarning(tc.outs, lagShareBound)
			require.Equal(t, tc.want != "", warned, w.Message)
			if warned {
				require.Equal(t, diag.ClientLag, w.Code)
				require.Contains(t, w.Message, tc.want)
			}
		})
	}
}

// slowSource makes its requests after the first only once a request has
// finished, and then slowly: a client too busy to build its requests.
type slowSource struct {
	n, i     int
	finished chan struct{}
	slow     time.Duration
}

func (s *slowSource) Len() int { return s.n }

func (s *slowSource) Next() request {
	if s.i > 0 {
		<-s.finished
		time.Sleep(s.slow) // the lag being measured, not synchronisation
	}
	s.i++
	return request{Index: s.i - 1, Prompt: "x", PromptLen: 1, MaxTokens: 2}
}

// TestRunMeasuresSendLag: a request built late, after its stream came
// free, is handed to the transport late, and its SendLag says by how much
// at least.
func TestRunMeasuresSendLag(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(streamHandler(atomFrames(2, 1)))
	defer srv.Close()
	const slow = 100 * time.Millisecond
	src := &slowSource{n: 3, finished: make(chan struct{}, 3), slow: slow}
	outs, _, _ := runLoad(context.Background(), newClient(srv.URL, "m", 1), src, load{
		MaxConcurrency: 1,
		// Called once the stream is free again: the next request is due.
		Progress: func(int) { src.finished <- struct{}{} },
	})
	require.Len(t, outs, 3)
	for i, o := range outs {
		require.True(t, o.OK(), o.Error)
		if i > 0 {
			require.GreaterOrEqual(t, o.SendLag, slow, "request %d was built %v after its stream came free", i, slow)
		}
	}
	w, warned := lagWarning(outs, lagShareBound)
	require.True(t, warned, "a client this late warns")
	require.True(t, strings.HasPrefix(w.Message, "the client could not keep up"), w.Message)
}
