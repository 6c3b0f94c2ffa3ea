package trim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFormatMicros(t *testing.T) {
	t.Parallel()
	require.Equal(t, "4912346934909.575", FormatMicros(4912346934909575))
	require.Equal(t, "0.007", FormatMicros(7))
	require.Equal(t, "-1.500", FormatMicros(-1500))
}
