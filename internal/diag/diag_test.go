package diag

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWarningJSON(t *testing.T) {
	ws := []Warning{New(Coverage, "GPU kernels cover 2.1 s of a 14.0 s window"), New(BSMismatch, "bs 6, conc 8")}
	b, err := json.Marshal(ws)
	require.NoError(t, err)
	require.JSONEq(t, `[{"code":"coverage","message":"GPU kernels cover 2.1 s of a 14.0 s window"},{"code":"bs_mismatch","message":"bs 6, conc 8"}]`, string(b))
	var back []Warning
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, ws, back)
	require.True(t, Has(back, BSMismatch))
	require.False(t, Has(back, Truncated))
	require.Equal(t, []string{ws[0].Message, ws[1].Message}, Messages(back))
}

func ExampleHas() {
	ws := []Warning{New(Coverage, "GPU kernels cover 2.1 s of a 14.0 s profile window (15%)")}
	if Has(ws, Coverage) {
		fmt.Print(join(ws))
	}
	// Output: warning: GPU kernels cover 2.1 s of a 14.0 s profile window (15%)
}

// join prints ws one per line, each prefixed with "warning: ".
func join(ws []Warning) string {
	var b strings.Builder
	for _, w := range ws {
		b.WriteString("warning: ")
		b.WriteString(w.Message)
		b.WriteByte('\n')
	}
	return b.String()
}
