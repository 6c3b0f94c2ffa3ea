package results

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// The client's token and server fields survive a write and a read.
func TestLevelClientFieldsRoundTrip(t *testing.T) {
	t.Parallel()
	l := sampleLevel(true)
	l.ReasoningTokens, l.TokensPerFrame, l.TokensPerFrameMethod = 620, 3.75, "even"
	l.Details.ReasoningLens = []int{20}
	l.RequestsResent = 3
	var b bytes.Buffer
	require.NoError(t, l.Write(&b))
	require.Contains(t, b.String(), `"tokens_per_frame": 3.75`)
	back, err := ParseLevel(b.Bytes())
	require.NoError(t, err)
	if d := cmp.Diff(l, back); d != "" {
		t.Fatalf("round trip differs (-wrote +read):\n%s", d)
	}
}
